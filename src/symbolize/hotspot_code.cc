#include "symbolize/hotspot_code.h"

#include <algorithm>
#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "bpf/hotspot.h"

namespace uscope {
namespace {

constexpr uint64_t kMaxSection = 4 << 20;         // an nmethod section of a huge method
constexpr uint64_t kMaxJavaLineTable = 64 << 10;  // 65535 bytecodes, at most a pair each
constexpr uint64_t kMaxBlobName = 256;

template <typename T>
T value_at(std::span<const uint8_t> b, uint64_t off) {
  T v{};
  if (off + sizeof(T) <= b.size()) std::memcpy(&v, b.data() + off, sizeof(T));
  return v;
}

bool read(const TargetMemory& mem, uint64_t addr, std::span<uint8_t> out) {
  return addr != 0 && mem(addr, out);
}

Result<std::vector<uint8_t>> read_struct(const TargetMemory& mem, uint64_t addr, uint64_t size,
                                         const char* what) {
  std::vector<uint8_t> b(size);
  if (!read(mem, addr, b)) return fail("cannot read the {} at {:#x}", what, addr);
  return b;
}

// A C string, read in pieces that never cross a page boundary the string itself does not.
Result<std::string> read_c_string(const TargetMemory& mem, uint64_t addr, uint64_t max) {
  std::string s;
  while (s.size() < max) {
    uint64_t at = addr + s.size();
    uint64_t chunk = std::min<uint64_t>({32, 4096 - at % 4096, max - s.size()});
    uint8_t buf[32];
    if (!read(mem, at, {buf, chunk})) return fail("cannot read a string at {:#x}", addr);
    for (uint64_t i = 0; i < chunk; ++i) {
      if (buf[i] == 0) return s;
      s += static_cast<char>(buf[i]);
    }
  }
  return s;
}

// A Symbol: a u2 length and its bytes (modified UTF-8, as the class file has them).
Result<std::string> read_symbol(const HotspotCodeLayout& l, const TargetMemory& mem,
                                uint64_t addr) {
  // Most names are short: the length and the first bytes in one read, where that stays in the
  // page the Symbol starts in.
  uint8_t head[128];
  const uint64_t ahead = std::min<uint64_t>(sizeof head, 4096 - addr % 4096);
  const bool have_head = ahead >= l.symbol_length + 2 && read(mem, addr, {head, ahead});
  uint16_t length = 0;
  if (have_head)
    std::memcpy(&length, head + l.symbol_length, 2);
  else if (!read(mem, addr + l.symbol_length, {reinterpret_cast<uint8_t*>(&length), 2}))
    return fail("cannot read the Symbol at {:#x}", addr);
  if (have_head && l.symbol_body + length <= ahead)
    return std::string(reinterpret_cast<const char*>(head) + l.symbol_body, length);
  std::string s(length, '\0');
  if (length && !read(mem, addr + l.symbol_body, {reinterpret_cast<uint8_t*>(s.data()), length}))
    return fail("cannot read the {} bytes of the Symbol at {:#x}", length, addr);
  return s;
}

// The Symbol a constant pool slot holds (a Utf8 entry; its low bit is a tag to ignore).
Result<uint64_t> pool_symbol_at(const HotspotCodeLayout& l, const TargetMemory& mem, uint64_t pool,
                                uint16_t index, const char* what) {
  if (index == 0) return fail("the {} has constant pool index 0", what);
  uint64_t slot = 0;
  if (!read(mem, pool + l.pool_size + 8ull * index, {reinterpret_cast<uint8_t*>(&slot), 8}))
    return fail("cannot read constant pool slot {} (the {}) of {:#x}", index, what, pool);
  return slot & ~uint64_t{1};
}

Result<std::string> pool_symbol(const HotspotCodeLayout& l, const TargetMemory& mem, uint64_t pool,
                                uint16_t index, const char* what) {
  auto at = pool_symbol_at(l, mem, pool, index, what);
  if (!at) return tl::unexpected(at.error());
  auto s = read_symbol(l, mem, *at);
  if (!s) return with_context(fmt::format("the {}", what), s.error());
  return s;
}

// What a Method is read from: its ConstMethod (copied), ConstantPool, class, and the Symbols of
// the class's name, its name and signature (HotspotMethod::identity).
struct MethodParts {
  uint64_t const_method = 0, pool = 0, klass = 0;
  std::vector<uint8_t> cm, pool_bytes;
  std::array<uint64_t, 3> identity{};
};

Result<MethodParts> read_method_parts(const HotspotCodeLayout& l, const TargetMemory& mem,
                                      uint64_t method) {
  MethodParts p;
  if (!read(mem, method + l.method_const, {reinterpret_cast<uint8_t*>(&p.const_method), 8}) ||
      p.const_method == 0)
    return fail("cannot read the Method at {:#x}", method);
  auto ctx = [&](const Error& e) { return with_context(fmt::format("Method {:#x}", method), e); };
  auto cmb = read_struct(mem, p.const_method, l.const_method_size, "ConstMethod");
  if (!cmb) return ctx(cmb.error());
  p.cm = std::move(*cmb);
  p.pool = value_at<uint64_t>(p.cm, l.const_method_constants);
  auto pb = read_struct(mem, p.pool, l.pool_size, "ConstantPool");
  if (!pb) return ctx(pb.error());
  p.pool_bytes = std::move(*pb);
  p.klass = value_at<uint64_t>(p.pool_bytes, l.pool_holder);
  if (!read(mem, p.klass + l.klass_name, {reinterpret_cast<uint8_t*>(&p.identity[0]), 8}))
    return ctx(Error{fmt::format("cannot read the class at {:#x}", p.klass)});
  auto name =
      pool_symbol_at(l, mem, p.pool, value_at<uint16_t>(p.cm, l.const_method_name_index), "name");
  if (!name) return ctx(name.error());
  auto sig = pool_symbol_at(l, mem, p.pool,
                            value_at<uint16_t>(p.cm, l.const_method_signature_index), "signature");
  if (!sig) return ctx(sig.error());
  p.identity[1] = *name;
  p.identity[2] = *sig;
  return p;
}

// A section [begin, end) of an nmethod, bounded.
Result<std::vector<uint8_t>> read_section(const TargetMemory& mem, uint64_t nm, uint64_t begin,
                                          uint64_t end, const char* what) {
  if (end < begin || end - begin > kMaxSection)
    return fail("the nmethod at {:#x} has a {} section of [{:#x}, {:#x})", nm, what, begin, end);
  std::vector<uint8_t> b(end - begin);
  if (!b.empty() && !read(mem, begin, b))
    return fail("cannot read the {} bytes of the nmethod at {:#x}'s {}", b.size(), nm, what);
  return b;
}

}  // namespace

Result<HotspotCodeLayout> hotspot_code_layout(const HotspotVmStructs& vm, const TargetMemory* mem) {
  // The first field missing is the error; later lookups are skipped.
  std::optional<Error> missing;
  auto take = [&](Result<uint64_t> r) -> uint64_t {
    if (!r && !missing) missing = r.error();
    return r ? *r : 0;
  };
  auto field = [&](std::string_view type, std::string_view name) {
    return take(vm.need_offset(type, name));
  };
  auto size = [&](std::string_view type) { return take(vm.need_type_size(type)); };
  // The width of an integer field: its type's size where the JVM lists it ("CompLevel": 1).
  auto width_of = [&](std::string_view type, std::string_view name) -> uint64_t {
    for (const VmStructField& f : vm.fields())
      if ((f.type == type || f.type == "CompiledMethod") && f.field == name && !f.is_static) {
        if (f.type_string == "int") return 4;
        auto s = vm.type_size(f.type_string);
        return s && (*s == 1 || *s == 2 || *s == 4) ? *s : 4;
      }
    return 4;
  };
  // nmethod's fields were CompiledMethod's (its base class) before JDK 23.
  auto nm = [&](std::string_view name) {
    if (auto o = vm.offset("nmethod", name)) return *o;
    if (auto o = vm.offset("CompiledMethod", name)) return *o;
    return field("nmethod", name);
  };

  HotspotCodeLayout l;
  l.method_const = field("Method", "_constMethod");
  l.const_method_size = size("ConstMethod");
  l.const_method_constants = field("ConstMethod", "_constants");
  // JDK 21 made ConstMethod::_flags a ConstMethodFlags holding the bits in its own _flags.
  const auto flags21 = vm.offset("ConstMethod", "_flags._flags");
  l.const_method_flags = flags21 ? *flags21 : field("ConstMethod", "_flags");
  l.const_method_code_size = field("ConstMethod", "_code_size");
  l.const_method_name_index = field("ConstMethod", "_name_index");
  l.const_method_signature_index = field("ConstMethod", "_signature_index");
  if (auto c = vm.int_constant("ConstMethodFlags::_misc_has_linenumber_table"))
    l.has_line_table_flag = static_cast<uint32_t>(*c);
  else
    l.has_line_table_flag =
        take(vm.need_int_constant("ConstMethod::_has_linenumber_table").map([](int64_t v) {
          return static_cast<uint64_t>(v);
        }));
  l.pool_size = size("ConstantPool");
  l.pool_holder = field("ConstantPool", "_pool_holder");
  if (auto o = vm.offset("ConstantPool", "_source_file_name_index")) {  // JDK 15+
    l.source_file_index = *o;
  } else {
    l.source_file_index = field("InstanceKlass", "_source_file_name_index");
    l.source_file_index_in_klass = true;
  }
  l.klass_name = field("Klass", "_name");
  l.symbol_length = field("Symbol", "_length");
  l.symbol_body = field("Symbol", "_body");

  l.blob_name = field("CodeBlob", "_name");
  if (auto o = vm.offset("CodeBlob", "_code_begin")) {
    l.blob_code_begin = *o;
  } else {  // JDK 23+
    l.blob_code_begin = field("CodeBlob", "_code_offset");
    l.code_begin_is_offset = true;
  }
  l.nm_method = nm("_method");
  l.nm_comp_level = nm("_comp_level");
  l.comp_level_size = width_of("nmethod", "_comp_level");
  l.nm_compile_id = nm("_compile_id");
  l.nm_scopes_pcs_offset = nm("_scopes_pcs_offset");
  if (auto o = vm.offset("nmethod", "_immutable_data")) {  // JDK 23+
    l.immutable_data = true;
    l.nm_immutable_data = *o;
    l.nm_immutable_data_size = field("nmethod", "_immutable_data_size");
    l.nm_scopes_data = nm("_scopes_data_offset");
  } else {
    l.nm_scopes_data = field("CompiledMethod", "_scopes_data_begin");
    l.nm_dependencies_offset = nm("_dependencies_offset");
  }
  if (auto o = vm.offset("CodeBlob", "_mutable_data")) {  // JDK 25+
    l.mutable_data = true;
    l.blob_mutable_data = *o;
    l.blob_mutable_data_size = field("CodeBlob", "_mutable_data_size");
    l.blob_relocation_size = field("CodeBlob", "_relocation_size");
  } else {
    l.nm_metadata_offset = nm("_metadata_offset");
    if (l.immutable_data) l.blob_size = field("CodeBlob", "_size");
  }
  l.pc_desc_size = size("PcDesc");
  l.pc_desc_pc_offset = field("PcDesc", "_pc_offset");
  l.pc_desc_scope_decode_offset = field("PcDesc", "_scope_decode_offset");
  if (missing) return tl::unexpected(*missing);

  // JDK 20 made CompressedStream UNSIGNED5 with the zero byte excluded (JDK-8292758). The
  // version is read where the JVM lists it; else JDK 21's ConstMethodFlags tells a newer JVM.
  std::optional<int32_t> major;
  if (auto at = vm.address("Abstract_VM_Version", "_vm_major_version"); at && mem) {
    int32_t v = 0;
    if ((*mem)(*at, {reinterpret_cast<uint8_t*>(&v), 4}) && v > 0 && v < 1000) major = v;
  }
  l.unsigned5_excluded = major ? (*major >= 20 ? 1 : 0) : (flags21 ? 1 : 0);
  return l;
}

std::string java_class_name(std::string_view internal) {
  std::string s(internal);
  std::replace(s.begin(), s.end(), '/', '.');
  return s;
}

Result<HotspotMethod> read_hotspot_method(const HotspotCodeLayout& l, const TargetMemory& mem,
                                          uint64_t method) {
  auto parts = read_method_parts(l, mem, method);
  if (!parts) return tl::unexpected(parts.error());
  const std::vector<uint8_t>& cmb = parts->cm;
  const uint64_t cm = parts->const_method, pool = parts->pool, klass = parts->klass;

  HotspotMethod m;
  m.excluded = l.unsigned5_excluded;
  m.identity = parts->identity;
  auto ctx = [&](const Error& e) { return with_context(fmt::format("Method {:#x}", method), e); };
  auto kname = read_symbol(l, mem, m.identity[0]);
  if (!kname) return ctx(kname.error());
  m.klass = java_class_name(*kname);
  auto name = read_symbol(l, mem, m.identity[1]);
  if (!name) return with_context(fmt::format("Method {:#x}: the name", method), name.error());
  m.name = std::move(*name);
  auto sig = read_symbol(l, mem, m.identity[2]);
  if (!sig) return with_context(fmt::format("Method {:#x}: the signature", method), sig.error());
  m.signature = std::move(*sig);

  // The source file is optional (generated classes name none): a miss leaves it empty.
  uint16_t sf = 0;
  if (l.source_file_index_in_klass)
    (void)read(mem, klass + l.source_file_index, {reinterpret_cast<uint8_t*>(&sf), 2});
  else
    sf = value_at<uint16_t>(parts->pool_bytes, l.source_file_index);
  if (sf != 0)
    if (auto f = pool_symbol(l, mem, pool, sf, "source file")) m.source_file = std::move(*f);

  m.code_size = value_at<uint16_t>(cmb, l.const_method_code_size);
  // Flags are u2 before JDK 21, u4 since; the line-table bit is in the low byte either way.
  const uint32_t flags = value_at<uint8_t>(cmb, l.const_method_flags);
  if (flags & l.has_line_table_flag) {
    // The table follows the bytecodes; its length is not stored, so read until its terminator
    // in pieces that stay within the page the previous ended in.
    uint64_t at = cm + l.const_method_size + m.code_size;
    while (m.line_table.size() < kMaxJavaLineTable) {
      uint64_t chunk = std::min<uint64_t>(256, 4096 - at % 4096);
      std::vector<uint8_t> piece(chunk);
      if (!read(mem, at, piece)) break;
      m.line_table.insert(m.line_table.end(), piece.begin(), piece.end());
      at += chunk;
      // Decoding what is there tells whether the terminator was reached.
      Unsigned5Reader r(m.line_table, m.excluded);
      bool ended = false;
      while (auto b = r.byte()) {
        if (*b == 0) {
          ended = true;
          m.line_table.resize(r.position());
          break;
        }
        if (*b == 0xff && !(r.read_uint() && r.read_uint())) break;
      }
      if (ended) break;
    }
  }
  return m;
}

Result<HotspotBlob> read_hotspot_blob(const HotspotCodeLayout& l, const TargetMemory& mem,
                                      uint64_t addr) {
  auto ctx = [&](const Error& e) { return with_context(fmt::format("code blob {:#x}", addr), e); };
  // Every field is read from one copy of the blob's header (an nmethod's: a few hundred bytes),
  // one read instead of a dozen; a small blob at the end of committed memory may not have that
  // many bytes after it, and is read field by field.
  uint64_t header_size = 0;
  for (uint64_t off :
       {l.blob_name, l.blob_code_begin, l.nm_method, l.nm_comp_level, l.nm_compile_id,
        l.nm_metadata_offset, l.nm_scopes_data, l.nm_scopes_pcs_offset, l.nm_dependencies_offset,
        l.nm_immutable_data, l.nm_immutable_data_size, l.blob_mutable_data,
        l.blob_mutable_data_size, l.blob_relocation_size, l.blob_size})
    header_size = std::max(header_size, off + 8);
  std::vector<uint8_t> header(header_size);
  if (!read(mem, addr, header)) header.clear();
  auto field_at = [&](uint64_t off, std::span<uint8_t> out) {
    if (off + out.size() <= header.size()) {
      if (!out.empty()) std::memcpy(out.data(), header.data() + off, out.size());
      return true;
    }
    return read(mem, addr + off, out);
  };
  uint64_t name_ptr = 0;
  if (!field_at(l.blob_name, {reinterpret_cast<uint8_t*>(&name_ptr), 8}))
    return fail("cannot read the code blob at {:#x}", addr);
  auto name = read_c_string(mem, name_ptr, kMaxBlobName);
  if (!name) return ctx(name.error());
  HotspotBlob b;
  b.name = std::move(*name);
  if (l.code_begin_is_offset) {
    int32_t off = 0;
    if (!field_at(l.blob_code_begin, {reinterpret_cast<uint8_t*>(&off), 4}))
      return ctx(Error{"cannot read its code offset"});
    b.code_begin = addr + off;
  } else if (!field_at(l.blob_code_begin, {reinterpret_cast<uint8_t*>(&b.code_begin), 8})) {
    return ctx(Error{"cannot read its code begin"});
  }
  if (b.name == "nmethod")
    b.kind = HotspotBlobKind::Nmethod;
  else if (b.name == "native nmethod")
    b.kind = HotspotBlobKind::Native;
  else
    return b;

  auto word = [&](uint64_t off, auto& out) {
    return field_at(off, {reinterpret_cast<uint8_t*>(&out), sizeof(out)});
  };
  auto int_at = [&](uint64_t off, int64_t& out) {
    int32_t v = 0;
    if (!word(off, v)) return false;
    out = v;
    return true;
  };
  uint8_t level[4] = {};
  if (!word(l.nm_method, b.method) ||
      !field_at(l.nm_comp_level, {level, std::min<uint64_t>(l.comp_level_size, 4)}) ||
      !word(l.nm_compile_id, b.compile_id))
    return ctx(Error{"cannot read its nmethod fields"});
  b.comp_level = l.comp_level_size == 1   ? static_cast<int8_t>(level[0])
                 : l.comp_level_size == 2 ? value_at<int16_t>(level, 0)
                                          : value_at<int32_t>(level, 0);
  if (b.kind == HotspotBlobKind::Native) return b;

  // The sections' [begin, end), by the layout's generation (HotspotCodeLayout says which).
  uint64_t meta_at = 0, meta_end = 0, scopes_at = 0, scopes_end = 0, pcs_at = 0, pcs_end = 0;
  int64_t pcs_off = 0, scopes_off = 0;
  bool ok = int_at(l.nm_scopes_pcs_offset, pcs_off);
  if (l.immutable_data) {
    uint64_t imm = 0;
    int64_t imm_size = 0;
    ok = ok && word(l.nm_immutable_data, imm) && int_at(l.nm_immutable_data_size, imm_size) &&
         int_at(l.nm_scopes_data, scopes_off);
    pcs_at = imm + pcs_off;
    pcs_end = scopes_at = imm + scopes_off;
    scopes_end = imm + imm_size;
  } else {
    int64_t deps_off = 0;
    ok = ok && word(l.nm_scopes_data, scopes_at) && int_at(l.nm_dependencies_offset, deps_off);
    pcs_at = addr + pcs_off;
    pcs_end = addr + deps_off;
    scopes_end = pcs_at;
  }
  if (l.mutable_data) {
    uint64_t mut = 0;
    int64_t mut_size = 0, reloc_size = 0;
    ok = ok && word(l.blob_mutable_data, mut) && int_at(l.blob_mutable_data_size, mut_size) &&
         int_at(l.blob_relocation_size, reloc_size);
    meta_at = mut + reloc_size;
    meta_end = mut + mut_size;  // with JVMCI's data after the metadata: a bound, not the end
  } else {
    int64_t meta_off = 0, size = 0;
    ok = ok && int_at(l.nm_metadata_offset, meta_off);
    meta_at = addr + meta_off;
    if (l.immutable_data) {  // JDK 23, 24: up to the blob's end at most
      ok = ok && int_at(l.blob_size, size);
      meta_end = addr + size;
    } else {
      meta_end = scopes_at;
    }
  }
  if (!ok) return ctx(Error{"cannot read where its debug info is"});
  if (!(meta_at <= meta_end && scopes_at <= scopes_end && pcs_at <= pcs_end))
    return ctx(
        Error{fmt::format("its sections make no sense: metadata [{:#x}, {:#x}), scopes "
                          "[{:#x}, {:#x}), pcs [{:#x}, {:#x})",
                          meta_at, meta_end, scopes_at, scopes_end, pcs_at, pcs_end)});
  auto meta = read_section(mem, addr, meta_at, meta_end, "metadata");
  if (!meta) return tl::unexpected(meta.error());
  b.metadata.resize(meta->size() / 8);
  if (!b.metadata.empty())  // an empty section's data() may be null
    std::memcpy(b.metadata.data(), meta->data(), b.metadata.size() * 8);
  auto scopes = read_section(mem, addr, scopes_at, scopes_end, "scopes data");
  if (!scopes) return tl::unexpected(scopes.error());
  b.scopes = std::move(*scopes);
  auto pcs = read_section(mem, addr, pcs_at, pcs_end, "scopes pcs");
  if (!pcs) return tl::unexpected(pcs.error());
  b.pcs = parse_hotspot_pc_descs(*pcs, l.pc_desc_size, l.pc_desc_pc_offset,
                                 l.pc_desc_scope_decode_offset);
  return b;
}

const char* to_string(HotspotCodeKind kind) {
  switch (kind) {
    case HotspotCodeKind::Interpreted:
      return "interpreted";
    case HotspotCodeKind::C1:
      return "C1";
    case HotspotCodeKind::C2:
      return "C2";
    case HotspotCodeKind::Native:
      return "native";
    case HotspotCodeKind::Stub:
      return "stub";
  }
  return "?";
}

uint32_t hotspot_generation(const HotspotBlob& b) {
  return b.kind != HotspotBlobKind::Stub ? HS_GEN(b.compile_id) : 0;
}

Result<const HotspotMethod*> HotspotCodeCache::method(pid_t pid, const HotspotCodeLayout& l,
                                                      const TargetMemory& mem, uint64_t addr) {
  auto key = std::pair{pid, addr};
  auto it = methods_.find(key);
  if (it != methods_.end()) {
    // Still the same Method? Its Symbols read back (what cannot be read, as from a process
    // gone, keeps what was read).
    auto now = read_method_parts(l, mem, addr);
    if (!now || now->identity == it->second->identity) return it->second.get();
    reused_.insert(key);
  }
  auto m = read_hotspot_method(l, mem, addr);
  if (!m) return tl::unexpected(m.error());
  // A blob read before keeps its own copy of the Method it was read with.
  auto& slot = methods_[key];
  slot = std::make_shared<const HotspotMethod>(std::move(*m));
  return slot.get();
}

Result<const HotspotBlob*> HotspotCodeCache::blob(pid_t pid, const HotspotCodeLayout& l,
                                                  const TargetMemory& mem, uint64_t addr,
                                                  uint32_t gen) {
  const BlobKey key{pid, addr, gen};
  if (auto it = blobs_.find(key); it != blobs_.end()) return &it->second;
  if (gone_.contains(key))
    return fail_errno(ESTALE, "the nmethod of generation {} at {:#x} was flushed", gen, addr);
  auto b = read_hotspot_blob(l, mem, addr);
  if (!b) return tl::unexpected(b.error());
  if (const uint32_t now = hotspot_generation(*b); now != gen) {
    gone_.insert(key);
    return fail_errno(ESTALE,
                      "the nmethod of generation {} at {:#x} was flushed: the blob there now is "
                      "\"{}\" of generation {}",
                      gen, addr, b->name, now);
  }
  // The Methods its frames name, read now: its own, and those inlined into it (its metadata
  // holds Method* and Klass* alike: only the scopes' Methods are read, when a frame names them).
  if (b->kind != HotspotBlobKind::Stub) {
    auto m = method(pid, l, mem, b->method);
    if (!m) return with_context(fmt::format("code blob {:#x}", addr), m.error());
    b->methods.emplace(b->method, methods_.at({pid, b->method}));
  }
  return &blobs_.emplace(key, std::move(*b)).first->second;
}

const HotspotMethod* HotspotCodeCache::find_method(pid_t pid, uint64_t addr) const {
  auto it = methods_.find(std::pair{pid, addr});
  return it == methods_.end() ? nullptr : it->second.get();
}

const HotspotBlob* HotspotCodeCache::find_blob(pid_t pid, uint64_t addr, uint32_t gen) const {
  auto it = blobs_.find(BlobKey{pid, addr, gen});
  return it == blobs_.end() ? nullptr : &it->second;
}

namespace {

HotspotNamedMethod named(const HotspotMethod& m, uint64_t method, int bci) {
  HotspotNamedMethod n;
  n.method = method;
  n.bci = bci;
  n.name = m.qualified();
  n.signature = m.signature;
  n.file = m.source_file;
  n.line = m.line_of(bci);
  return n;
}

}  // namespace

Result<HotspotFrameName> HotspotCodeCache::code_frame(pid_t pid, const HotspotCodeLayout& l,
                                                      const TargetMemory& mem, uint64_t blob,
                                                      uint32_t gen, uint32_t offset,
                                                      bool is_return) {
  auto b = this->blob(pid, l, mem, blob, gen);
  if (!b) return tl::unexpected(b.error());
  HotspotBlob& bl = blobs_.at(BlobKey{pid, blob, gen});
  HotspotFrameName out;
  out.blob_name = bl.name;
  out.comp_level = bl.comp_level;
  switch (bl.kind) {
    case HotspotBlobKind::Stub:
      out.kind = HotspotCodeKind::Stub;
      return out;
    case HotspotBlobKind::Native:
      out.kind = HotspotCodeKind::Native;
      break;
    case HotspotBlobKind::Nmethod:
      out.kind = bl.comp_level >= 4 ? HotspotCodeKind::C2 : HotspotCodeKind::C1;
      break;
  }
  std::vector<HotspotScope> chain;
  if (bl.kind == HotspotBlobKind::Nmethod && offset != HS_OFFSET_UNKNOWN) {
    const int64_t pc_offset =
        static_cast<int64_t>(blob + offset) - static_cast<int64_t>(bl.code_begin);
    const HotspotPcDesc* d =
        find_hotspot_pc_desc(bl.pcs, static_cast<int32_t>(pc_offset), is_return);
    if (d != nullptr && d->scope_decode_offset != 0) {
      auto c = decode_hotspot_scopes(bl.scopes, bl.metadata, d->scope_decode_offset,
                                     l.unsigned5_excluded);
      if (!c)
        return with_context(fmt::format("nmethod {:#x} at pc offset {}", blob, pc_offset),
                            c.error());
      chain = std::move(*c);
    }
  }
  // The outermost scope is the nmethod's own method; without scopes, it is all there is.
  if (chain.empty() || chain.back().method != bl.method) {
    if (!chain.empty())
      return fail("nmethod {:#x}: its outermost scope is Method {:#x}, not its own {:#x}", blob,
                  chain.back().method, bl.method);
    chain.push_back({bl.method, -1});
  }
  for (const HotspotScope& s : chain) {
    auto it = bl.methods.find(s.method);
    if (it == bl.methods.end()) {  // an inlined method no frame named before: read it now
      auto m = method(pid, l, mem, s.method);
      if (!m) return with_context(fmt::format("nmethod {:#x}", blob), m.error());
      it = bl.methods.emplace(s.method, methods_.at({pid, s.method})).first;
    }
    out.methods.push_back(named(*it->second, s.method, s.bci));
  }
  return out;
}

Result<HotspotFrameName> HotspotCodeCache::interpreted_frame(pid_t pid, const HotspotCodeLayout& l,
                                                             const TargetMemory& mem,
                                                             uint64_t method, uint32_t bci) {
  HotspotFrameName out;
  out.kind = HotspotCodeKind::Interpreted;
  out.blob_name = "Interpreter";
  auto m = this->method(pid, l, mem, method);
  if (!m) return tl::unexpected(m.error());
  if (reused_.contains({pid, method}))
    return fail_errno(ESTALE,
                      "Method {:#x} held another method earlier (its class unloaded): its "
                      "interpreted frames are ambiguous",
                      method);
  out.methods.push_back(named(**m, method, bci == HS_BCI_UNKNOWN ? -1 : static_cast<int>(bci)));
  return out;
}

void HotspotCodeCache::forget_blob(pid_t pid, uint64_t addr) {
  blobs_.erase(blobs_.lower_bound({pid, addr, 0}), blobs_.lower_bound({pid, addr + 1, 0}));
}

void HotspotCodeCache::forget(pid_t pid) {
  methods_.erase(methods_.lower_bound({pid, 0}), methods_.lower_bound({pid + 1, 0}));
  blobs_.erase(blobs_.lower_bound({pid, 0, 0}), blobs_.lower_bound({pid + 1, 0, 0}));
  gone_.erase(gone_.lower_bound({pid, 0, 0}), gone_.lower_bound({pid + 1, 0, 0}));
  reused_.erase(reused_.lower_bound({pid, 0}), reused_.lower_bound({pid + 1, 0}));
}

}  // namespace uscope
