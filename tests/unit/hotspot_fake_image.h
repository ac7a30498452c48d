#pragma once
// A HotSpot JVM's structures laid out by hand in a buffer of this process, for tests of Java
// frame naming: a class HotLoop (HotLoop.java) with methods hotMethod and inner, an nmethod of
// hotMethod compiled by C2 with inner inlined into it, a native wrapper and a stub; and the
// VMStructs entries that describe their layout. Addresses are the buffer's own, so the same
// image serves a TargetMemory over the buffer and the Symbolizer reading this process.
#include <cstdint>
#include <cstring>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "discover/hotspot_vmstructs.h"
#include "discover/python_runtime.h"

namespace uscope::test {

// UNSIGNED5 as HotSpot writes it (CompressedWriteStream / UNSIGNED5::write_uint).
inline void put_unsigned5(std::vector<uint8_t>& out, uint32_t v, uint8_t excluded = 0) {
  const uint32_t low = 192 - excluded;
  for (int i = 0;; ++i) {
    if (v < low || i == 4) {
      out.push_back(static_cast<uint8_t>(v + excluded));
      return;
    }
    v -= low;
    out.push_back(static_cast<uint8_t>(low + v % 64 + excluded));
    v >>= 6;
  }
}
inline void put_signed5(std::vector<uint8_t>& out, int32_t v, uint8_t excluded = 0) {
  put_unsigned5(out, (static_cast<uint32_t>(v) << 1) ^ static_cast<uint32_t>(v >> 31), excluded);
}

// The offsets the fake structures use.
namespace fake_jvm {
constexpr uint64_t kMethodConst = 8;
constexpr uint64_t kConstMethodSize = 48, kCmConstants = 8, kCmFlags = 32, kCmCodeSize = 34,
                   kCmName = 36, kCmSignature = 38;
constexpr uint64_t kPoolSize = 64, kPoolHolder = 16, kPoolSourceFile = 40;
constexpr uint64_t kKlassName = 16;
constexpr uint64_t kSymbolLength = 4, kSymbolBody = 6;
constexpr uint64_t kBlobName = 8, kBlobCodeBegin = 40;
constexpr uint64_t kNmMethod = 64, kNmScopesData = 72, kNmCompLevel = 80, kNmCompileId = 84,
                   kNmMetadata = 88, kNmScopesPcs = 92, kNmDependencies = 96;
constexpr uint64_t kCodeOffset = 0x100;  // code begins this far into a blob
// JDK 25's shape: debug info out of the blob.
constexpr uint64_t kNmImmutable = 96, kNmImmutableSize = 104, kBlobMutable = 112,
                   kBlobMutableSize = 120, kBlobRelocationSize = 124;
constexpr uint64_t kMajorVersion = 0x7f00;  // Abstract_VM_Version::_vm_major_version
}  // namespace fake_jvm

// Which JDK's layout the image has: 17's (debug info in the nmethod, UNSIGNED5 with no excluded
// byte) or 25's (PcDescs and scopes in immutable data, metadata in mutable data, a one-byte
// CompLevel, u4 ConstMethod flags, UNSIGNED5 without zero bytes).
enum class FakeJdk { Jdk17, Jdk25 };

inline HotspotVmStructs fake_vmstructs(bool with_scope_offset = true,
                                       FakeJdk jdk = FakeJdk::Jdk17) {
  using namespace fake_jvm;
  const bool j25 = jdk == FakeJdk::Jdk25;
  std::vector<VmStructField> f = {
      {"Method", "_constMethod", "ConstMethod*", false, kMethodConst, 0},
      {"ConstMethod", "_constants", "ConstantPool*", false, kCmConstants, 0},
      {"ConstMethod", j25 ? "_flags._flags" : "_flags", j25 ? "u4" : "u2", false, kCmFlags, 0},
      {"ConstMethod", "_code_size", "u2", false, kCmCodeSize, 0},
      {"ConstMethod", "_name_index", "u2", false, kCmName, 0},
      {"ConstMethod", "_signature_index", "u2", false, kCmSignature, 0},
      {"ConstantPool", "_pool_holder", "InstanceKlass*", false, kPoolHolder, 0},
      {"ConstantPool", "_source_file_name_index", "u2", false, kPoolSourceFile, 0},
      {"Klass", "_name", "Symbol*", false, kKlassName, 0},
      {"Symbol", "_length", "u2", false, kSymbolLength, 0},
      {"Symbol", "_body", "u1", false, kSymbolBody, 0},
      {"CodeBlob", "_name", "const char*", false, kBlobName, 0},
      {"PcDesc", "_pc_offset", "int", false, 0, 0},
  };
  if (with_scope_offset) f.push_back({"PcDesc", "_scope_decode_offset", "int", false, 4, 0});
  if (j25) {
    f.insert(f.end(), {
                          {"CodeBlob", "_code_offset", "int", false, kBlobCodeBegin, 0},
                          {"CodeBlob", "_mutable_data", "address", false, kBlobMutable, 0},
                          {"CodeBlob", "_mutable_data_size", "int", false, kBlobMutableSize, 0},
                          {"CodeBlob", "_relocation_size", "int", false, kBlobRelocationSize, 0},
                          {"nmethod", "_method", "Method*", false, kNmMethod, 0},
                          {"nmethod", "_scopes_data_offset", "int", false, kNmScopesData, 0},
                          {"nmethod", "_comp_level", "CompLevel", false, kNmCompLevel, 0},
                          {"nmethod", "_compile_id", "int", false, kNmCompileId, 0},
                          {"nmethod", "_scopes_pcs_offset", "int", false, kNmScopesPcs, 0},
                          {"nmethod", "_immutable_data", "address", false, kNmImmutable, 0},
                          {"nmethod", "_immutable_data_size", "int", false, kNmImmutableSize, 0},
                          // Read from the image (FakeJvm puts 25 there).
                          {"Abstract_VM_Version", "_vm_major_version", "int", true, 0, 0},
                      });
  } else {
    f.insert(f.end(),
             {
                 {"CodeBlob", "_code_begin", "address", false, kBlobCodeBegin, 0},
                 // JDK 17 lists these under nmethod's base class.
                 {"CompiledMethod", "_method", "Method*", false, kNmMethod, 0},
                 {"CompiledMethod", "_scopes_data_begin", "address", false, kNmScopesData, 0},
                 {"nmethod", "_comp_level", "int", false, kNmCompLevel, 0},
                 {"nmethod", "_compile_id", "int", false, kNmCompileId, 0},
                 {"nmethod", "_metadata_offset", "int", false, kNmMetadata, 0},
                 {"nmethod", "_scopes_pcs_offset", "int", false, kNmScopesPcs, 0},
                 {"nmethod", "_dependencies_offset", "int", false, kNmDependencies, 0},
             });
  }
  std::vector<VmStructType> t = {{"ConstMethod", "", kConstMethodSize},
                                 {"ConstantPool", "", kPoolSize},
                                 {"PcDesc", "", 16},
                                 {"CompLevel", "", 1}};
  std::map<std::string, int64_t> ints;
  ints[j25 ? "ConstMethodFlags::_misc_has_linenumber_table"
           : "ConstMethod::_has_linenumber_table"] = 1;
  return HotspotVmStructs(std::move(f), std::move(t), std::move(ints), {});
}

// JDK 25's VMStructs for an image at `base` (the version's static address is in it).
inline HotspotVmStructs fake_vmstructs_25(uint64_t base) {
  HotspotVmStructs vm = fake_vmstructs(true, FakeJdk::Jdk25);
  std::vector<VmStructField> f = vm.fields();
  for (VmStructField& x : f)
    if (x.is_static) x.address = base + fake_jvm::kMajorVersion;
  std::map<std::string, int64_t> ints = {{"ConstMethodFlags::_misc_has_linenumber_table", 1}};
  return HotspotVmStructs(std::move(f), vm.types(), std::move(ints), {});
}

// The image: every structure at a fixed offset in one 16-byte aligned buffer.
struct FakeJvm {
  static constexpr size_t kSize = 1 << 16;
  // An over-aligned type, so that new and delete agree on the alignment (ASan checks they do).
  struct alignas(64) Image {
    uint8_t bytes[kSize];
  };
  std::unique_ptr<Image> image = std::make_unique<Image>();  // zeroed
  uint8_t* data = image->bytes;
  uint64_t base = reinterpret_cast<uint64_t>(data);
  size_t reads = 0;

  // Where things are (offsets in the buffer).
  uint64_t hot_method = 0, inner_method = 0, native_method = 0;
  uint64_t nmethod = 0, native_nmethod = 0, stub = 0;
  int32_t pc_inner = 0x10, pc_outer = 0x20;  // PcDescs' pc offsets (from code begin)

  uint64_t at(uint64_t off) const { return base + off; }
  void put(uint64_t off, const void* p, size_t n) {
    if (n) std::memcpy(data + off, p, n);  // an empty vector's data() may be null
  }
  template <typename T>
  void put_value(uint64_t off, T v) {
    put(off, &v, sizeof v);
  }
  void put_bytes(uint64_t off, const std::vector<uint8_t>& b) { put(off, b.data(), b.size()); }
  // A Symbol at `off`; returns its address.
  uint64_t symbol(uint64_t off, const std::string& s) {
    put_value<uint16_t>(off + fake_jvm::kSymbolLength, static_cast<uint16_t>(s.size()));
    put(off + fake_jvm::kSymbolBody, s.data(), s.size());
    return at(off);
  }

  TargetMemory memory() {
    return [this](uint64_t addr, std::span<uint8_t> out) {
      ++reads;
      if (addr < base || addr - base + out.size() > kSize) return false;
      std::memcpy(out.data(), data + (addr - base), out.size());
      return true;
    };
  }

  explicit FakeJvm(FakeJdk jdk = FakeJdk::Jdk17) {
    using namespace fake_jvm;
    const bool j25 = jdk == FakeJdk::Jdk25;
    const uint8_t x = j25 ? 1 : 0;  // UNSIGNED5's excluded bytes
    put_value<int32_t>(kMajorVersion, j25 ? 25 : 17);
    // A line table: (bci 0, line `first`) by escape, then one-byte pairs.
    auto lines = [&](int first, std::vector<uint8_t> pairs) {
      std::vector<uint8_t> t = {0xff};
      put_signed5(t, 0, x);
      put_signed5(t, first, x);
      t.insert(t.end(), pairs.begin(), pairs.end());
      t.push_back(0);
      return t;
    };
    // Constant pool at 0x1000, its slots: 1 "hotMethod", 2 "(I)J", 3 "inner", 4 "()V",
    // 5 "HotLoop.java", 6 "nativeCall" (Symbol* with the low bit a tag to ignore).
    const uint64_t pool = 0x1000, klass = 0x800;
    const char* names[] = {"hotMethod", "(I)J", "inner", "()V", "HotLoop.java", "nativeCall"};
    for (int i = 0; i < 6; ++i) {
      uint64_t sym = symbol(0x2000 + 0x40 * i, names[i]);
      put_value<uint64_t>(pool + kPoolSize + 8 * (i + 1), sym | (i == 2 ? 1 : 0));
    }
    put_value<uint64_t>(pool + kPoolHolder, at(klass));
    put_value<uint16_t>(pool + kPoolSourceFile, 5);
    put_value<uint64_t>(klass + kKlassName, symbol(0x2400, "com/example/HotLoop"));

    // hotMethod: 20 bytecodes; lines (bci 0, line 10) by escape, (5, 11), (12, 13).
    hot_method = method(0x3000, 0x3100, pool, 1, 2, 20, lines(10, {(5 << 3) | 1, (7 << 3) | 2}));
    // inner: lines (0, 20), (4, 21).
    inner_method = method(0x3400, 0x3500, pool, 3, 4, 8, lines(20, {(4 << 3) | 1}));
    // nativeCall: no line table.
    native_method = method(0x3800, 0x3900, pool, 6, 4, 0, {});

    // An nmethod of hotMethod (C2) at 0x8000; inner inlined at pc 0x10 (inner bci 4 called from
    // hotMethod bci 12); hotMethod alone at 0x20 (bci 5).
    nmethod = 0x8000;
    blob(nmethod, 0x7000, "nmethod", j25);
    put_value<uint64_t>(nmethod + kNmMethod, at(hot_method));
    // JDK 25's one-byte CompLevel is followed by other fields' bytes.
    put_value<int32_t>(nmethod + kNmCompLevel, j25 ? 0x7f7f7f04 : 4);
    put_value<int32_t>(nmethod + kNmCompileId, 77);
    std::vector<uint8_t> scopes = {0xff};  // offset 0 is serialized_null: never a scope
    auto scope = [&](uint32_t sender, uint32_t index, int bci) {
      uint32_t at = static_cast<uint32_t>(scopes.size());
      put_unsigned5(scopes, sender, x);
      put_unsigned5(scopes, index, x);
      put_unsigned5(scopes, static_cast<uint32_t>(bci + 1), x);
      for (int i = 0; i < 3; ++i) put_unsigned5(scopes, 0, x);  // locals, expressions, monitors
      return at;
    };
    uint32_t outer12 = scope(0, 1, 12);
    uint32_t inner4 = scope(outer12, 2, 4);
    uint32_t outer5 = scope(0, 1, 5);
    const int32_t pcs[][2] = {{-1, 0},
                              {pc_inner, static_cast<int32_t>(inner4)},
                              {pc_outer, static_cast<int32_t>(outer5)},
                              {0x30, 0}};
    // JDK 17: metadata at +0x200: [hotMethod, inner]; scopes at +0x210; pcs at +0x240; deps at
    // +0x280. JDK 25: pcs at immutable + 0x10, scopes after them, a 4-byte reference count
    // last; metadata after 0x18 bytes of relocations in mutable data, one more word (JVMCI's).
    const uint64_t meta = j25 ? 0x600 + 0x18 : 0x200;
    const uint64_t pcs_at = j25 ? 0x400 + 0x10 : 0x240;
    const uint64_t scopes_at = j25 ? pcs_at + 64 : 0x210;
    put_value<uint64_t>(nmethod + meta, at(hot_method));
    put_value<uint64_t>(nmethod + meta + 8, at(inner_method));
    put_bytes(nmethod + scopes_at, scopes);
    for (int i = 0; i < 4; ++i) {
      put_value<int32_t>(nmethod + pcs_at + 16 * i, pcs[i][0]);
      put_value<int32_t>(nmethod + pcs_at + 16 * i + 4, pcs[i][1]);
    }
    if (j25) {
      put_value<uint64_t>(nmethod + kNmImmutable, at(nmethod + 0x400));
      put_value<int32_t>(nmethod + kNmImmutableSize,
                         static_cast<int32_t>(0x50 + scopes.size() + 4));
      put_value<int32_t>(nmethod + kNmScopesPcs, 0x10);
      put_value<int32_t>(nmethod + kNmScopesData, 0x50);
      put_value<uint64_t>(nmethod + kBlobMutable, at(nmethod + 0x600));
      put_value<int32_t>(nmethod + kBlobRelocationSize, 0x18);
      put_value<int32_t>(nmethod + kBlobMutableSize, 0x18 + 24);
    } else {
      put_value<int32_t>(nmethod + kNmMetadata, 0x200);
      put_value<uint64_t>(nmethod + kNmScopesData, at(nmethod + scopes_at));
      put_value<int32_t>(nmethod + kNmScopesPcs, 0x240);
      put_value<int32_t>(nmethod + kNmDependencies, 0x280);
    }

    native_nmethod = 0x9000;
    blob(native_nmethod, 0x7020, "native nmethod", j25);
    put_value<uint64_t>(native_nmethod + kNmMethod, at(native_method));
    stub = 0xa000;
    blob(stub, 0x7040, "StubRoutines (1)", j25);
  }

  uint64_t method(uint64_t off, uint64_t cm, uint64_t pool, uint16_t name, uint16_t sig,
                  uint16_t code_size, const std::vector<uint8_t>& lines) {
    using namespace fake_jvm;
    put_value<uint64_t>(off + kMethodConst, at(cm));
    put_value<uint64_t>(cm + kCmConstants, at(pool));
    put_value<uint16_t>(cm + kCmFlags, lines.empty() ? 0 : 1);  // the bit is in the low byte
    put_value<uint16_t>(cm + kCmCodeSize, code_size);
    put_value<uint16_t>(cm + kCmName, name);
    put_value<uint16_t>(cm + kCmSignature, sig);
    put_bytes(cm + kConstMethodSize + code_size, lines);
    return off;
  }
  void blob(uint64_t off, uint64_t name_at, const std::string& name, bool code_offset) {
    put(name_at, name.c_str(), name.size() + 1);
    put_value<uint64_t>(off + fake_jvm::kBlobName, at(name_at));
    if (code_offset)  // JDK 23+: an int from the blob
      put_value<int32_t>(off + fake_jvm::kBlobCodeBegin, fake_jvm::kCodeOffset);
    else
      put_value<uint64_t>(off + fake_jvm::kBlobCodeBegin, at(off + fake_jvm::kCodeOffset));
  }
};

}  // namespace uscope::test
