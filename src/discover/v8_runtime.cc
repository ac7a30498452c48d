#include "discover/v8_runtime.h"

#include <elf.h>
#include <fmt/format.h>

#include <cstring>
#include <filesystem>

#include "discover/object_store.h"

namespace uscope {

namespace {

constexpr std::string_view kPrefix = "v8dbg_";

// Whether `addr` lies in a section that occupies no file space (.bss): its value is zero.
bool in_nobits(const ElfFile& elf, uint64_t addr) {
  for (const ElfSection& s : elf.sections())
    if (s.type == SHT_NOBITS && addr >= s.addr && addr < s.addr + s.size) return true;
  return false;
}

class Reader {
 public:
  explicit Reader(const V8Constants& c) : c_(c) {}
  // The constant `name`, or the first of `name`, `alternative` that is there.
  std::optional<int64_t> get(const std::string& name, const std::string& alternative = {}) {
    if (auto it = c_.find(name); it != c_.end()) return it->second;
    if (!alternative.empty())
      if (auto it = c_.find(alternative); it != c_.end()) return it->second;
    if (missing_.empty()) missing_ = std::string(kPrefix) + name;
    return std::nullopt;
  }
  // An offset or a number that must be >= 0 and fit the field.
  template <typename T>
  void unsigned_field(T& out, const std::string& name, const std::string& alternative = {}) {
    auto v = get(name, alternative);
    if (!v) return;
    if (*v < 0 || *v > static_cast<int64_t>(std::numeric_limits<T>::max())) {
      if (bad_.empty()) bad_ = fmt::format("{}{} is {}", kPrefix, name, *v);
      return;
    }
    out = static_cast<T>(*v);
  }
  // A frame slot: below the frame pointer, word-aligned.
  void slot(int32_t& out, const std::string& name, const std::string& alternative = {}) {
    auto v = get(name, alternative);
    if (!v) return;
    if (*v >= 0 || *v < -4096 || *v % 8 != 0) {
      if (bad_.empty())
        bad_ = fmt::format("{}{} is {}, not a slot below the frame pointer", kPrefix, name, *v);
      return;
    }
    out = static_cast<int32_t>(*v);
  }
  const std::string& missing() const { return missing_; }
  const std::string& bad() const { return bad_; }

 private:
  const V8Constants& c_;
  std::string missing_, bad_;
};

}  // namespace

Result<V8Constants> read_v8_constants(const ElfFile& elf) {
  auto syms = elf.symbols();
  if (!syms) return tl::unexpected(syms.error());
  V8Constants out;
  for (const ElfSymbol& s : *syms) {
    if (!s.defined || s.kind != SymbolKind::Object || !s.name.starts_with(kPrefix)) continue;
    if (s.size != 4 && s.size != 8) continue;
    int64_t value = 0;
    if (auto bytes = elf.allocated_bytes(s.addr, s.size)) {
      if (s.size == 4) {
        int32_t v = 0;
        std::memcpy(&v, bytes->data(), 4);
        value = v;
      } else {
        std::memcpy(&value, bytes->data(), 8);
      }
    } else if (!in_nobits(elf, s.addr)) {
      continue;  // no contents to read: not a constant
    }
    out.emplace(s.name.substr(kPrefix.size()), value);
  }
  return out;
}

Result<V8Layout> v8_layout(const V8Constants& c) {
  Reader r(c);
  V8Layout l;
  v8_offsets& b = l.bpf;
  r.slot(b.fp_context, "off_fp_context_or_frame_type", "off_fp_context");
  r.slot(b.fp_function, "off_fp_function");
  r.slot(b.fp_bytecode_offset, "off_fp_bytecode_offset");
  r.slot(b.fp_bytecode_array, "off_fp_bytecode_array");
  r.unsigned_field(b.heap_object_map, "class_HeapObject__map__Map");
  r.unsigned_field(b.map_instance_type, "class_Map__instance_type__uint16_t");
  r.unsigned_field(b.function_shared, "class_JSFunction__shared__SharedFunctionInfo");
  r.unsigned_field(b.bytecode_data, "class_BytecodeArray__data__uintptr_t");
  r.unsigned_field(b.type_shared_function, "type_SharedFunctionInfo__SHARED_FUNCTION_INFO_TYPE");
  r.unsigned_field(b.type_bytecode_array, "type_BytecodeArray__BYTECODE_ARRAY_TYPE");
  r.unsigned_field(l.sfi_name_or_scope_info,
                   "class_SharedFunctionInfo__name_or_scope_info__Object");
  r.unsigned_field(l.sfi_script_or_debug_info,
                   "class_SharedFunctionInfo__script_or_debug_info__HeapObject",
                   "class_SharedFunctionInfo__script_or_debug_info__Object");
  r.unsigned_field(l.script_name, "class_Script__name__Object");
  r.unsigned_field(l.script_source, "class_Script__source__Object");
  r.unsigned_field(l.script_line_ends, "class_Script__line_ends__Object");
  r.unsigned_field(l.fixed_array_length, "class_FixedArrayBase__length__SMI");
  r.unsigned_field(l.fixed_array_data, "class_FixedArray__data__uintptr_t");
  r.unsigned_field(l.scope_info_first_vars, "scopeinfo_idx_first_vars");
  r.unsigned_field(l.scope_info_context_locals, "scopeinfo_idx_ncontextlocals");
  r.unsigned_field(l.type_script, "type_Script__SCRIPT_TYPE");
  r.unsigned_field(l.type_scope_info, "type_ScopeInfo__SCOPE_INFO_TYPE");
  r.unsigned_field(l.type_fixed_array, "type_FixedArray__FIXED_ARRAY_TYPE");
  r.unsigned_field(l.first_nonstring_type, "FirstNonstringType");
  r.unsigned_field(l.string_length, "class_String__length__int32_t");
  r.unsigned_field(l.seq_one_byte_chars, "class_SeqOneByteString__chars__char");
  r.unsigned_field(l.seq_two_byte_chars, "class_SeqTwoByteString__chars__char");
  r.unsigned_field(l.cons_first, "class_ConsString__first__String");
  r.unsigned_field(l.cons_second, "class_ConsString__second__String");
  r.unsigned_field(l.thin_actual, "class_ThinString__actual__String");
  r.unsigned_field(l.sliced_parent, "class_SlicedString__parent__String");
  r.unsigned_field(l.sliced_offset, "class_SlicedString__offset__SMI");
  r.unsigned_field(l.representation_mask, "StringRepresentationMask");
  r.unsigned_field(l.encoding_mask, "StringEncodingMask");
  r.unsigned_field(l.one_byte_tag, "OneByteStringTag");
  r.unsigned_field(l.seq_tag, "SeqStringTag");
  r.unsigned_field(l.cons_tag, "ConsStringTag");
  r.unsigned_field(l.external_tag, "ExternalStringTag");
  r.unsigned_field(l.sliced_tag, "SlicedStringTag");
  r.unsigned_field(l.thin_tag, "ThinStringTag");
  if (!r.missing().empty())
    return fail("V8's postmortem metadata has no {} (uscope names JavaScript frames from it)",
                r.missing());
  if (!r.bad().empty()) return fail("V8's postmortem metadata: {}", r.bad());
  // The tags the walker assumes (bpf/v8.h).
  auto heap_tag = r.get("HeapObjectTag"), heap_mask = r.get("HeapObjectTagMask");
  auto smi_mask = r.get("SmiTagMask"), smi_shift = r.get("SmiShiftSize");
  if (!heap_tag || !heap_mask || !smi_mask || !smi_shift)
    return fail("V8's postmortem metadata has no {} (uscope names JavaScript frames from it)",
                r.missing());
  if (*heap_tag != static_cast<int64_t>(V8_HEAP_OBJECT_TAG) ||
      *heap_mask != static_cast<int64_t>(V8_HEAP_OBJECT_TAG_MASK) ||
      *smi_mask != static_cast<int64_t>(V8_SMI_TAG_MASK))
    return fail(
        "V8's tags are not those uscope reads: v8dbg_HeapObjectTag {}, HeapObjectTagMask {}, "
        "SmiTagMask {} (expected 1, 3, 1)",
        *heap_tag, *heap_mask, *smi_mask);
  if (*smi_shift + 1 != V8_SMI_SHIFT)
    return fail(
        "v8dbg_SmiShiftSize is {}: a V8 with pointer compression (31-bit Smis), which uscope "
        "does not read (node's own builds have none)",
        *smi_shift);
  return l;
}

std::string V8Runtime::name() const {
  return fmt::format("node (pid {})", pid);
}

bool v8_named(const MappedObject& o) {
  const std::string file = std::filesystem::path(o.path).filename().string();
  return file.starts_with("node") || file.starts_with("libnode");
}

Result<std::optional<V8Runtime>> find_v8_runtime(const Process& process) {
  // node itself holds V8 (a static build), or libnode.so does (Debian's): both are named so.
  for (const MappedObject& o : process.objects()) {
    if (!v8_named(o)) continue;
    auto stored = ObjectStore::shared()->open(o.open_path, o.path);
    if (!stored) continue;  // not ELF, unreadable: not where V8 can be read from
    auto constants = read_v8_constants((*stored)->elf());
    if (!constants) return with_context(o.path, constants.error());
    if (constants->empty()) continue;
    V8Runtime rt;
    rt.pid = process.pid();
    rt.object_path = o.path;
    rt.constants = constants->size();
    auto layout = v8_layout(*constants);
    if (!layout) return with_context(fmt::format("{}: {}", rt.name(), o.path), layout.error());
    rt.layout = *layout;
    rt.proc.off = rt.layout.bpf;
    return std::optional<V8Runtime>(std::move(rt));
  }
  return std::optional<V8Runtime>();
}

}  // namespace uscope
