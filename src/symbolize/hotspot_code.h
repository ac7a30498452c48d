#pragma once
// HotSpot Java code as a user reads it: "java.lang.String.hashCode (String.java:2345)", the tier a
// method was compiled at, and the calls a compiler inlined at a pc. The BPF walker records only a
// code blob and a pc offset, or a Method* and a bytecode index (bpf/hotspot.h); this names them
// from the JVM's own structures, read once per (process, address) and cached:
// - a Method* leads to its ConstMethod (bytecodes, the compressed line number table after them,
//   the constant pool indexes of its name and signature), its ConstantPool and the class holding
//   it (Klass::_name, the source file's pool index);
// - an nmethod's PcDesc for a pc leads into its scopes data, which lists the inlined chain at
//   that pc (method index into the nmethod's metadata, bytecode index, the sender's offset).
// Every layout offset comes from the JVM's VMStructs tables (discover/hotspot_vmstructs.h): a
// field the JVM does not list fails naming it.
#include <sys/types.h>

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "discover/hotspot_vmstructs.h"
#include "discover/python_runtime.h"  // TargetMemory
#include "symbolize/hotspot_streams.h"
#include "util/result.h"

namespace uscope {

// Where the fields this file reads lie, resolved once per JVM from its VMStructs.
struct HotspotCodeLayout {
  // Methods and the class file data they lead to.
  uint64_t method_const = 0;            // Method::_constMethod
  uint64_t const_method_size = 0;       // sizeof(ConstMethod): its bytecodes follow it
  uint64_t const_method_constants = 0;  // ConstMethod::_constants
  uint64_t const_method_flags = 0;      // ConstMethod::_flags (JDK 21+: _flags._flags)
  uint64_t const_method_code_size = 0;  // ConstMethod::_code_size (u2)
  uint64_t const_method_name_index = 0;
  uint64_t const_method_signature_index = 0;
  uint32_t has_line_table_flag = 0;  // ConstMethod::_has_linenumber_table (a bit of _flags)
  uint64_t pool_size = 0;            // sizeof(ConstantPool): its slots follow it
  uint64_t pool_holder = 0;          // ConstantPool::_pool_holder
  // The source file's pool index: ConstantPool::_source_file_name_index (JDK 15+), else
  // InstanceKlass::_source_file_name_index.
  uint64_t source_file_index = 0;
  bool source_file_index_in_klass = false;
  uint64_t klass_name = 0;  // Klass::_name
  uint64_t symbol_length = 0, symbol_body = 0;
  // Code blobs and nmethods (fields of nmethod or of CompiledMethod, its base before JDK 23).
  uint64_t blob_name = 0;
  uint64_t blob_code_begin = 0;  // CodeBlob::_code_begin (a pointer) or _code_offset (an int)
  bool code_begin_is_offset = false;
  uint64_t nm_method = 0;      // ::_method
  uint64_t nm_comp_level = 0;  // ::_comp_level: an int, a CompLevel of one byte since JDK 23
  uint64_t comp_level_size = 4;
  uint64_t nm_compile_id = 0;  // ::_compile_id (int)
  // Where an nmethod keeps its debug info, by JDK:
  // - to 22, all in the blob: metadata at _metadata_offset, scopes data from _scopes_data_begin
  //   (a pointer), PcDescs from _scopes_pcs_offset to _dependencies_offset (ints from the blob);
  // - 23+, the PcDescs and scopes data in _immutable_data (_scopes_pcs_offset and
  //   _scopes_data_offset from it, to _immutable_data_size);
  // - 25+, the metadata in CodeBlob::_mutable_data too, after _relocation_size bytes of
  //   relocations (to _mutable_data_size).
  uint64_t nm_metadata_offset = 0;
  uint64_t nm_scopes_data = 0;
  uint64_t nm_scopes_pcs_offset = 0, nm_dependencies_offset = 0;
  bool immutable_data = false;
  uint64_t nm_immutable_data = 0, nm_immutable_data_size = 0;
  bool mutable_data = false;
  uint64_t blob_mutable_data = 0, blob_mutable_data_size = 0, blob_relocation_size = 0;
  uint64_t blob_size = 0;  // CodeBlob::_size: bounds the metadata of JDK 23 and 24
  uint64_t pc_desc_size = 0, pc_desc_pc_offset = 0, pc_desc_scope_decode_offset = 0;
  // UNSIGNED5's excluded bytes: 0 before JDK 20, 1 since (no zero byte in a stream).
  uint8_t unsigned5_excluded = 0;
};
// `mem` (may be null) reads the JVM's major version where its tables list it, which tells the
// UNSIGNED5 flavour; without it the layout's fields tell.
Result<HotspotCodeLayout> hotspot_code_layout(const HotspotVmStructs& vm,
                                              const TargetMemory* mem = nullptr);

// "java/lang/String" as Java spells it: "java.lang.String".
std::string java_class_name(std::string_view internal);

struct HotspotMethod {
  std::string klass;        // "java.lang.String"
  std::string name;         // "hashCode"
  std::string signature;    // "()I"
  std::string source_file;  // "String.java", "" when the class names none
  uint16_t code_size = 0;
  std::vector<uint8_t> line_table;  // compressed; empty when the method has none
  uint8_t excluded = 0;             // its UNSIGNED5 flavour
  // Its class's name, name and signature as Symbol addresses (interned: one per string) when
  // read: what tells that a Method's memory holds another Method since (its class unloaded).
  std::array<uint64_t, 3> identity{};

  std::string qualified() const { return klass + "." + name; }  // "java.lang.String.hashCode"
  int line_of(int bci) const {
    return bci < 0 ? hotspot_line_of(line_table, excluded, 0)
                   : hotspot_line_of(line_table, excluded, bci);
  }
};
// Reads the Method at `method`. Fails naming the structure that could not be read.
Result<HotspotMethod> read_hotspot_method(const HotspotCodeLayout& l, const TargetMemory& mem,
                                          uint64_t method);

enum class HotspotBlobKind : uint8_t {
  Nmethod,  // a Java method compiled by C1 (comp level 1-3) or C2 (4)
  Native,   // "native nmethod": the wrapper of a JNI method
  Stub,     // anything else: the interpreter, StubRoutines, adapters, runtime stubs
};

struct HotspotBlob {
  std::string name;  // CodeBlob::_name: "nmethod", "Interpreter", "StubRoutines (1)", ...
  HotspotBlobKind kind = HotspotBlobKind::Stub;
  uint64_t code_begin = 0;  // absolute
  // An nmethod's (native or not):
  uint64_t method = 0;  // Method*
  int comp_level = 0;   // 1-3 C1, 4 C2; 0 for a native wrapper
  int compile_id = 0;
  std::vector<HotspotPcDesc> pcs;  // nmethods only
  std::vector<uint8_t> scopes;
  std::vector<uint64_t> metadata;
  // The methods its frames name (its own and those inlined into it), as they were when the blob
  // was read: its frames keep those names once their classes are unloaded and the Methods'
  // memory reused (HotspotCodeCache fills it).
  std::map<uint64_t, std::shared_ptr<const HotspotMethod>> methods;
};
// The generation a frame in `b` records (bpf/hotspot.h's HS_FRAME_CODE): the low bits of an
// nmethod's compile id, 0 for any other blob.
uint32_t hotspot_generation(const HotspotBlob& b);
// Reads the code blob at `addr` (its name bounded to 256 bytes; an nmethod's sections to 4 MiB
// each). Fails naming what could not be read or made no sense.
Result<HotspotBlob> read_hotspot_blob(const HotspotCodeLayout& l, const TargetMemory& mem,
                                      uint64_t addr);

// What ran at a Java frame, named: the methods innermost first (the last holds the code; the
// others were inlined into it), empty for a stub.
enum class HotspotCodeKind : uint8_t { Interpreted, C1, C2, Native, Stub };
const char* to_string(HotspotCodeKind kind);  // "interpreted", "C1", "C2", "native", "stub"

struct HotspotNamedMethod {
  uint64_t method = 0;  // Method*
  int bci = -1;         // -1 unknown (or the method's entry)
  std::string name;     // "HotLoop.hotMethod"
  std::string signature;
  std::string file;  // "HotLoop.java"
  int line = -1;     // -1 unknown
};
struct HotspotFrameName {
  HotspotCodeKind kind = HotspotCodeKind::Stub;
  int comp_level = 0;     // nmethods: 1-4
  std::string blob_name;  // "nmethod", "StubRoutines (1)", ...
  std::vector<HotspotNamedMethod> methods;
};

// Methods by (pid, address), code blobs by (pid, address, generation); a process is forgotten
// when it exits. The JVM reuses the memory of what it frees while uscope runs:
// - a blob's once it flushes the nmethod (made not entrant, then swept, or its class unloaded):
//   a frame's generation says which nmethod ran, and a blob whose generation differs when it is
//   read is another: the frame is not named (errnum ESTALE), and counted (code_gone());
// - a Method's once its class is unloaded: a cached Method is read again when its Symbols read
//   back otherwise, and a blob keeps the Methods it was read with; but an interpreted frame
//   records the Method* alone, which named two methods in the session: such frames are not
//   named from then on (errnum ESTALE), and counted (methods_reused()).
class HotspotCodeCache {
 public:
  Result<const HotspotMethod*> method(pid_t pid, const HotspotCodeLayout& l,
                                      const TargetMemory& mem, uint64_t addr);
  // The blob at `addr` of generation `gen` (hotspot_generation()).
  Result<const HotspotBlob*> blob(pid_t pid, const HotspotCodeLayout& l, const TargetMemory& mem,
                                  uint64_t addr, uint32_t gen);
  const HotspotMethod* find_method(pid_t pid, uint64_t addr) const;
  const HotspotBlob* find_blob(pid_t pid, uint64_t addr, uint32_t gen) const;

  // A code frame (bpf/hotspot.h's HS_FRAME_CODE: blob, generation and pc offset from the blob;
  // `is_return`: the pc is a return address, TAG_HS_RETURN). An unknown offset names the blob's
  // method only.
  Result<HotspotFrameName> code_frame(pid_t pid, const HotspotCodeLayout& l,
                                      const TargetMemory& mem, uint64_t blob, uint32_t gen,
                                      uint32_t offset, bool is_return);
  // An interpreted frame (HS_FRAME_INTERP): its Method* and bci (HS_BCI_UNKNOWN: unknown).
  Result<HotspotFrameName> interpreted_frame(pid_t pid, const HotspotCodeLayout& l,
                                             const TargetMemory& mem, uint64_t method,
                                             uint32_t bci);

  void forget_blob(pid_t pid, uint64_t addr);  // every generation of it
  void forget(pid_t pid);
  size_t methods() const { return methods_.size(); }
  size_t blobs() const { return blobs_.size(); }
  // Blobs (by pid, address, generation) whose nmethod was flushed and its memory reused before
  // they were read: their frames are unnamed.
  uint64_t code_gone() const { return gone_.size(); }
  // Method addresses that held another Method than when first read: their interpreted frames
  // are unnamed.
  uint64_t methods_reused() const { return reused_.size(); }

 private:
  using BlobKey = std::tuple<pid_t, uint64_t, uint32_t>;

  std::map<std::pair<pid_t, uint64_t>, std::shared_ptr<const HotspotMethod>> methods_;
  std::map<BlobKey, HotspotBlob> blobs_;
  std::set<BlobKey> gone_;
  std::set<std::pair<pid_t, uint64_t>> reused_;
};

}  // namespace uscope
