#include "symbolize/v8_code.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>

namespace uscope {

namespace {

constexpr int kMaxStringDepth = 16;       // cons/thin/sliced strings followed this deep
constexpr int kMaxStringParts = 1 << 14;  // and this many parts in all
constexpr size_t kMaxSource = 16 << 20;   // bytes of a script's source read for its lines
constexpr size_t kMaxLineEnds = 4 << 20;  // entries of Script::line_ends read
constexpr size_t kScopeSlots = 16;        // ScopeInfo slots searched for name and position

bool is_heap_object(uint64_t v) {
  return (v & V8_HEAP_OBJECT_TAG_MASK) == V8_HEAP_OBJECT_TAG;
}
bool is_smi(uint64_t v) {
  return (v & V8_SMI_TAG_MASK) == 0;
}
int64_t smi_value(uint64_t v) {
  return static_cast<int64_t>(v) >> V8_SMI_SHIFT;
}

std::optional<uint64_t> read_u64(const TargetMemory& mem, uint64_t addr) {
  uint64_t v = 0;
  if (!mem(addr, {reinterpret_cast<uint8_t*>(&v), sizeof(v)})) return std::nullopt;
  return v;
}

// The instance type of the heap object `tagged` points at.
std::optional<uint16_t> type_of(const V8Layout& l, const TargetMemory& mem, uint64_t tagged) {
  if (!is_heap_object(tagged)) return std::nullopt;
  auto map = read_u64(mem, tagged - V8_HEAP_OBJECT_TAG + l.bpf.heap_object_map);
  if (!map || !is_heap_object(*map)) return std::nullopt;
  uint16_t type = 0;
  if (!mem(*map - V8_HEAP_OBJECT_TAG + l.bpf.map_instance_type,
           {reinterpret_cast<uint8_t*>(&type), sizeof(type)}))
    return std::nullopt;
  return type;
}

void append_utf8(std::string& out, uint16_t c) {
  if (c < 0x80) {
    out.push_back(static_cast<char>(c));
  } else if (c < 0x100) {
    out.push_back(static_cast<char>(0xc0 | (c >> 6)));
    out.push_back(static_cast<char>(0x80 | (c & 0x3f)));
  } else {
    out.push_back('?');
  }
}

Result<void> string_into(const V8Layout& l, const TargetMemory& mem, uint64_t tagged,
                         std::string& out, size_t max, int depth, int& budget) {
  if (depth > kMaxStringDepth) return fail("a string nested deeper than {}", kMaxStringDepth);
  if (--budget < 0) return fail("a string of more than {} parts", kMaxStringParts);
  if (out.size() >= max) return {};
  auto type = type_of(l, mem, tagged);
  if (!type) return fail("no object at {:#x}", tagged);
  if (*type >= l.first_nonstring_type)
    return fail("{:#x} is not a string (type {})", tagged, *type);
  const uint64_t addr = tagged - V8_HEAP_OBJECT_TAG;
  const uint32_t repr = *type & l.representation_mask;
  if (repr == l.cons_tag) {
    auto first = read_u64(mem, addr + l.cons_first);
    auto second = read_u64(mem, addr + l.cons_second);
    if (!first || !second) return fail("cannot read the cons string at {:#x}", tagged);
    if (auto r = string_into(l, mem, *first, out, max, depth + 1, budget); !r) return r;
    return string_into(l, mem, *second, out, max, depth + 1, budget);
  }
  if (repr == l.thin_tag) {
    auto actual = read_u64(mem, addr + l.thin_actual);
    if (!actual) return fail("cannot read the thin string at {:#x}", tagged);
    return string_into(l, mem, *actual, out, max, depth + 1, budget);
  }
  if (repr == l.sliced_tag) {
    auto parent = read_u64(mem, addr + l.sliced_parent);
    auto offset = read_u64(mem, addr + l.sliced_offset);
    int32_t length = 0;
    if (!parent || !offset || !is_smi(*offset) ||
        !mem(addr + l.string_length, {reinterpret_cast<uint8_t*>(&length), 4}) || length < 0)
      return fail("cannot read the sliced string at {:#x}", tagged);
    // V8 slices only flat (sequential or external) strings, at offsets inside them: anything
    // else is not a string we are reading, and would make us read the parent without bound.
    const int64_t from = smi_value(*offset);
    if (from < 0 || static_cast<uint64_t>(from) > kMaxSource)
      return fail("the sliced string at {:#x} starts at {} in its parent", tagged, from);
    auto parent_type = type_of(l, mem, *parent);
    if (!parent_type || (*parent_type & l.representation_mask) == l.cons_tag ||
        (*parent_type & l.representation_mask) == l.sliced_tag ||
        (*parent_type & l.representation_mask) == l.thin_tag)
      return fail("the sliced string at {:#x} has no flat parent", tagged);
    const size_t take = std::min<size_t>(length, max - std::min(max, out.size()));
    std::string whole;
    if (auto r = string_into(l, mem, *parent, whole, static_cast<size_t>(from) + take, depth + 1,
                             budget);
        !r)
      return r;
    out += whole.substr(std::min<size_t>(whole.size(), from), take);
    return {};
  }
  if (repr != l.seq_tag)
    return fail("an external string at {:#x} (its characters are not in V8's heap)", tagged);
  int32_t length = 0;
  if (!mem(addr + l.string_length, {reinterpret_cast<uint8_t*>(&length), 4}) || length < 0)
    return fail("cannot read the string's length at {:#x}", tagged);
  const bool one_byte = (*type & l.encoding_mask) == l.one_byte_tag;
  const size_t room = max > out.size() ? max - out.size() : 0;
  const size_t n = std::min<size_t>(static_cast<size_t>(length), room);
  std::vector<uint8_t> bytes(n * (one_byte ? 1 : 2));
  if (!bytes.empty() &&
      !mem(addr + (one_byte ? l.seq_one_byte_chars : l.seq_two_byte_chars), bytes))
    return fail("cannot read the {} characters of the string at {:#x}", length, tagged);
  if (one_byte) {
    for (uint8_t c : bytes) append_utf8(out, c);
  } else {
    for (size_t i = 0; i + 1 < bytes.size(); i += 2)
      append_utf8(out, static_cast<uint16_t>(bytes[i] | bytes[i + 1] << 8));
  }
  return {};
}

// The offsets of a script's line ends: Script::line_ends when V8 computed them, else its
// source's newlines.
Result<std::vector<uint32_t>> line_ends(const V8Layout& l, const TargetMemory& mem,
                                        uint64_t script) {
  std::vector<uint32_t> ends;
  auto tagged = read_u64(mem, script + l.script_line_ends);
  if (tagged && type_of(l, mem, *tagged) == l.type_fixed_array) {
    const uint64_t array = *tagged - V8_HEAP_OBJECT_TAG;
    auto length = read_u64(mem, array + l.fixed_array_length);
    if (length && is_smi(*length) && smi_value(*length) >= 0 &&
        static_cast<size_t>(smi_value(*length)) <= kMaxLineEnds) {
      std::vector<uint64_t> slots(static_cast<size_t>(smi_value(*length)));
      if (slots.empty() || mem(array + l.fixed_array_data,
                               {reinterpret_cast<uint8_t*>(slots.data()), slots.size() * 8})) {
        for (uint64_t s : slots) ends.push_back(static_cast<uint32_t>(smi_value(s)));
        return ends;
      }
    }
  }
  auto source = read_u64(mem, script + l.script_source);
  if (!source) return fail("cannot read the script at {:#x}", script);
  std::string text;
  int budget = kMaxStringParts;
  if (auto r = string_into(l, mem, *source, text, kMaxSource, 0, budget); !r)
    return with_context("its source", r.error());
  for (size_t i = 0; i < text.size(); ++i)
    if (text[i] == '\n') ends.push_back(static_cast<uint32_t>(i));
  return ends;
}

}  // namespace

Result<std::string> read_v8_string(const V8Layout& l, const TargetMemory& mem, uint64_t tagged,
                                   size_t max) {
  std::string out;
  int budget = kMaxStringParts;
  if (auto r = string_into(l, mem, tagged, out, max, 0, budget); !r)
    return tl::unexpected(r.error());
  return out;
}

int v8_line_of(std::span<const uint32_t> ends, uint32_t position) {
  // Line n (1-based) runs up to and including its end, ends[n - 1].
  return static_cast<int>(std::lower_bound(ends.begin(), ends.end(), position) - ends.begin()) + 1;
}

V8ScopeFacts v8_scope_facts(const V8Layout& l, std::span<const uint64_t> slots,
                            const std::function<std::optional<std::string>(uint64_t)>& string_at) {
  V8ScopeFacts f;
  if (l.scope_info_context_locals >= slots.size()) return f;
  const uint64_t locals = slots[l.scope_info_context_locals];
  if (!is_smi(locals) || smi_value(locals) < 0) return f;
  bool named = false;
  uint64_t previous = V8_HEAP_OBJECT_TAG;  // no Smi before the first slot
  for (size_t i = l.scope_info_first_vars + 2 * static_cast<size_t>(smi_value(locals));
       i < slots.size(); ++i) {
    const uint64_t slot = slots[i];
    if (!named && is_heap_object(slot))
      if (auto s = string_at(slot); s && !s->empty()) {
        f.name = std::move(*s);
        named = true;
      }
    if (is_smi(slot) && is_smi(previous) && smi_value(previous) >= 0 &&
        smi_value(previous) < smi_value(slot)) {
      f.start = smi_value(previous);
      f.end = smi_value(slot);
      return f;
    }
    previous = slot;
  }
  return f;
}

Result<V8Function> read_v8_function(const V8Layout& l, const TargetMemory& mem, uint64_t sfi) {
  auto type = type_of(l, mem, sfi + V8_HEAP_OBJECT_TAG);
  if (!type) return fail("cannot read the SharedFunctionInfo at {:#x}", sfi);
  if (*type != l.bpf.type_shared_function)
    return fail("{:#x} is no longer a SharedFunctionInfo (type {}): it moved", sfi, *type);
  V8Function fn;
  int64_t start = -1;
  auto name_or_scope = read_u64(mem, sfi + l.sfi_name_or_scope_info);
  if (!name_or_scope) return fail("cannot read the SharedFunctionInfo at {:#x}", sfi);
  auto string_at = [&](uint64_t tagged) -> std::optional<std::string> {
    auto t = type_of(l, mem, tagged);
    if (!t || *t >= l.first_nonstring_type) return std::nullopt;
    auto s = read_v8_string(l, mem, tagged, 1024);
    return s ? std::optional<std::string>(std::move(*s)) : std::nullopt;
  };
  if (auto t = type_of(l, mem, *name_or_scope); t && *t == l.type_scope_info) {
    std::vector<uint64_t> slots(kScopeSlots);
    const uint64_t first = *name_or_scope - V8_HEAP_OBJECT_TAG + 8;  // after the map
    // The object may end before kScopeSlots slots do, at a page V8 has not mapped: read fewer
    // then.
    size_t n = slots.size();
    while (n > 0 && !mem(first, {reinterpret_cast<uint8_t*>(slots.data()), n * 8})) --n;
    slots.resize(n);
    V8ScopeFacts facts = v8_scope_facts(l, slots, string_at);
    fn.name = std::move(facts.name);
    start = facts.start;
  } else if (auto s = string_at(*name_or_scope)) {
    fn.name = std::move(*s);
  }
  auto script = read_u64(mem, sfi + l.sfi_script_or_debug_info);
  if (script && type_of(l, mem, *script) == l.type_script) {
    const uint64_t at = *script - V8_HEAP_OBJECT_TAG;
    if (auto name = read_u64(mem, at + l.script_name))
      if (auto s = string_at(*name)) fn.script = std::move(*s);
    if (start >= 0)
      if (auto ends = line_ends(l, mem, at))
        fn.line = v8_line_of(*ends, static_cast<uint32_t>(start));
  }
  return fn;
}

Result<const V8Function*> V8FunctionCache::get(const V8Runtime& rt, const TargetMemory& mem,
                                               uint64_t sfi) {
  auto key = std::pair{rt.pid, sfi};
  if (auto it = functions_.find(key); it != functions_.end()) return &it->second;
  auto f = read_v8_function(rt.layout, mem, sfi);
  if (!f) return with_context(rt.name(), f.error());
  return &functions_.emplace(key, std::move(*f)).first->second;
}

const V8Function* V8FunctionCache::find(pid_t pid, uint64_t sfi) const {
  auto it = functions_.find(std::pair{pid, sfi});
  return it == functions_.end() ? nullptr : &it->second;
}

void V8FunctionCache::forget(pid_t pid) {
  functions_.erase(functions_.lower_bound({pid, 0}), functions_.lower_bound({pid + 1, 0}));
}

}  // namespace uscope
