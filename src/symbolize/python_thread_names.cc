#include "symbolize/python_thread_names.h"

#include <bit>
#include <cstring>
#include <optional>
#include <string_view>
#include <vector>

#include "symbolize/python_code.h"

namespace uscope {
namespace {

constexpr uint32_t kMaxLog2IndexBytes = 24;  // 16 MiB of indices: far beyond any real dict here
constexpr int64_t kMaxEntries = 1 << 16;     // sys.modules of a large program: a few thousand
constexpr uint64_t kManagedDict = 1 << 4;    // Py_TPFLAGS_MANAGED_DICT (3.11)

std::optional<uint64_t> word(const TargetMemory& mem, uint64_t addr) {
  uint64_t v = 0;
  if (!mem(addr, {reinterpret_cast<uint8_t*>(&v), sizeof(v)})) return std::nullopt;
  return v;
}

// The dict object's entries (its keys object and split values).
Result<std::vector<PythonDictEntry>> dict_object_entries(const PythonLayout& l,
                                                         const TargetMemory& mem, uint64_t dict) {
  auto keys = word(mem, dict + l.dict_keys);
  auto values = word(mem, dict + l.dict_values);
  if (!keys || !values) return fail("cannot read a dict at {:#x}", dict);
  return python_dict_entries(l, mem, *keys, *values);
}

// The value of the entry whose key is the str `name`, or 0.
uint64_t str_keyed(const PythonLayout& l, const TargetMemory& mem,
                   const std::vector<PythonDictEntry>& entries, std::string_view name) {
  for (const auto& e : entries) {
    auto key = read_python_str(l, mem, e.key);
    if (key && *key == name) return e.value;
  }
  return 0;
}

// A non-negative int object (a thread ident): 30-bit digits, least significant first.
std::optional<uint64_t> read_long(const PythonLayout& l, const TargetMemory& mem, uint64_t addr) {
  auto size = word(mem, addr + l.long_size);
  if (!size || static_cast<int64_t>(*size) < 0 || *size > 3) return std::nullopt;
  uint32_t digits[3] = {};
  if (*size && !mem(addr + l.long_digits, {reinterpret_cast<uint8_t*>(digits), *size * 4}))
    return std::nullopt;
  uint64_t v = 0;
  for (uint64_t i = *size; i-- > 0;) v = v << 30 | (digits[i] & 0x3fffffff);
  return v;
}

// An attribute of an instance of a Python class (<= 3.10: its dict at its type's tp_dictoffset;
// 3.11: its dict, or its inline values with the class's cached keys); 0 when it has none by that
// name or keeps it elsewhere.
uint64_t instance_attribute(const PythonLayout& l, const TargetMemory& mem, uint64_t obj,
                            std::string_view name) {
  auto type = word(mem, obj + 8);
  if (l.type_dictoffset != PY_NO_OFFSET) {
    auto at = type ? word(mem, *type + l.type_dictoffset) : std::nullopt;
    // A negative tp_dictoffset counts from the end of a variable-size object: not a Thread.
    if (!at || static_cast<int64_t>(*at) <= 0 || *at > (1u << 16)) return 0;
    auto dict = word(mem, obj + *at);
    if (!dict || !*dict) return 0;
    auto entries = dict_object_entries(l, mem, *dict);
    return entries ? str_keyed(l, mem, *entries, name) : 0;
  }
  auto flags = type ? word(mem, *type + l.type_flags) : std::nullopt;
  if (!flags || !(*flags & kManagedDict)) return 0;
  auto dict = word(mem, obj - l.managed_dict_before);
  if (!dict) return 0;
  Result<std::vector<PythonDictEntry>> entries = std::vector<PythonDictEntry>{};
  if (*dict) {
    entries = dict_object_entries(l, mem, *dict);
  } else {
    auto values = word(mem, obj - l.managed_values_before);
    auto keys = word(mem, *type + l.heap_type_cached_keys);
    if (!values || !*values || !keys || !*keys) return 0;
    entries = python_dict_entries(l, mem, *keys, *values);
  }
  return entries ? str_keyed(l, mem, *entries, name) : 0;
}

}  // namespace

Result<std::vector<PythonDictEntry>> python_dict_entries(const PythonLayout& l,
                                                         const TargetMemory& mem, uint64_t keys,
                                                         uint64_t values) {
  // The keys object's header, up to its indices: sizes and kind.
  std::vector<uint8_t> head(l.keys_indices);
  if (l.keys_nentries + 8 > head.size() || l.keys_kind >= head.size() ||
      l.keys_log2_index_bytes >= head.size() ||
      (l.keys_size != PY_NO_OFFSET && l.keys_size + 8 > head.size()) || !mem(keys, head))
    return fail("cannot read a dict's keys at {:#x}", keys);
  uint32_t log2_index_bytes = head[l.keys_log2_index_bytes];
  uint8_t kind = head[l.keys_kind];
  if (l.keys_size != PY_NO_OFFSET) {
    // <= 3.10: dk_size indices of 1 byte up to 0xff, 2 up to 0xffff, 4 up to 0xffffffff (dk_size
    // is a power of 2), general entries only.
    int64_t size = 0;
    std::memcpy(&size, head.data() + l.keys_size, 8);
    if (size <= 0 || (size & (size - 1)) != 0 || size > (int64_t{1} << 20))
      return fail("the dict keys at {:#x} say a size of {}", keys, size);
    uint32_t log2_size = std::countr_zero(static_cast<uint64_t>(size));
    uint32_t log2_width = size <= 0xff ? 0 : size <= 0xffff ? 1 : 2;
    log2_index_bytes = log2_size + log2_width;
    kind = 0;
  }
  int64_t n = 0;
  std::memcpy(&n, head.data() + l.keys_nentries, 8);
  if (log2_index_bytes > kMaxLog2IndexBytes || n < 0 || n > kMaxEntries)
    return fail("the dict keys at {:#x} say {} entries and 2^{} bytes of indices", keys, n,
                log2_index_bytes);
  // General entries are {hash, key, value}; str-keyed ones {key, value} (their values, in a
  // split dict, in the values array).
  const size_t width = kind == 0 ? 3 : 2, key_at = kind == 0 ? 1 : 0;
  std::vector<uint64_t> raw(static_cast<size_t>(n) * width);
  uint64_t at = keys + l.keys_indices + (uint64_t{1} << log2_index_bytes);
  if (n && !mem(at, {reinterpret_cast<uint8_t*>(raw.data()), raw.size() * 8}))
    return fail("cannot read the {} entries of the dict keys at {:#x}", n, keys);
  std::vector<uint64_t> split(values ? static_cast<size_t>(n) : 0);
  if (values && n && !mem(values, {reinterpret_cast<uint8_t*>(split.data()), split.size() * 8}))
    return fail("cannot read the values of a split dict at {:#x}", values);
  std::vector<PythonDictEntry> out;
  for (size_t i = 0; i < static_cast<size_t>(n); ++i) {
    PythonDictEntry e{raw[i * width + key_at], values ? split[i] : raw[i * width + key_at + 1]};
    if (e.key && e.value) out.push_back(e);  // a deleted entry keeps its key, not its value
  }
  return out;
}

Result<std::map<uint64_t, std::string>> python_thread_names(const PythonRuntime& rt,
                                                            const TargetMemory& mem) {
  const PythonLayout& l = rt.layout;
  std::map<uint64_t, std::string> names;
  if (l.interp_modules == PY_NO_OFFSET ||
      (l.heap_type_cached_keys == PY_NO_OFFSET && l.type_dictoffset == PY_NO_OFFSET))
    return names;
  auto interp = word(mem, rt.proc.runtime + l.bpf.runtime_interp_head);
  auto modules = interp && *interp ? word(mem, *interp + l.interp_modules) : std::nullopt;
  if (!modules) return fail("{}: cannot read the interpreter's modules", rt.name());
  if (!*modules) return names;  // not initialized, or finalizing
  auto all = dict_object_entries(l, mem, *modules);
  if (!all) return tl::unexpected(all.error());
  uint64_t threading = str_keyed(l, mem, *all, "threading");
  if (!threading) return names;  // never imported
  auto globals = word(mem, threading + l.module_dict);
  if (!globals || !*globals) return fail("{}: cannot read the threading module", rt.name());
  auto module = dict_object_entries(l, mem, *globals);
  if (!module) return tl::unexpected(module.error());
  uint64_t active = str_keyed(l, mem, *module, "_active");
  if (!active) return names;
  auto threads = dict_object_entries(l, mem, active);
  if (!threads) return tl::unexpected(threads.error());
  for (const auto& t : *threads) {
    auto ident = read_long(l, mem, t.key);
    uint64_t name = ident ? instance_attribute(l, mem, t.value, "_name") : 0;
    if (!name) continue;
    if (auto text = read_python_str(l, mem, name)) names[*ident] = *text;
  }
  return names;
}

}  // namespace uscope
