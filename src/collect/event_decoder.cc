#include "collect/event_decoder.h"

#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

#include <fmt/format.h>

#include "discover/go_types.h"
#include "plan/payload_wire.h"
#include "plan/recipe_interpreter.h"

namespace uscope {

bool EventDecoder::decode(const uscope_event& header, std::span<const uint8_t> payload,
                          DecodedEvent& out) {
  out.header = header;
  out.n_values = 0;
  out.user_stack.clear();
  out.kernel_stack.clear();
  size_t data_len = header.data_len, stack_len = header.stack_len, kstack_len = header.kstack_len;
  if (header.probe_id >= plan_.probes.size() || data_len > TRACE_MAX_DATA ||
      stack_len > TRACE_MAX_FRAMES * 8 || stack_len % 8 != 0 ||
      kstack_len > TRACE_MAX_KFRAMES * 8 || kstack_len % 8 != 0 ||
      payload.size() != data_len + stack_len + kstack_len) {
    ++malformed_;
    return false;
  }
  bool late_cut = false;
  if (!decode_fields(plan_.probes[header.probe_id], payload.first(data_len), out, late_cut)) {
    ++malformed_;
    return false;
  }
  late_truncated_ += late_cut;

  size_t frames = stack_len / 8;
  if (frames) {
    // One spare slot for the return address below: no reallocation when it is inserted.
    out.user_stack.reserve(frames + 1);
    out.user_stack.resize(frames);
    std::memcpy(out.user_stack.data(), payload.data() + data_len, stack_len);
    // In a prologue the frame-pointer walk starts at the caller's frame and skips the caller
    // itself; its return address is on the stack (TRACE_F_AT_ENTRY).
    auto& s = out.user_stack;
    if (header.return_address && (s.size() < 2 || s[1] != header.return_address))
      s.insert(s.begin() + 1, header.return_address);
  }
  if (kstack_len) {
    out.kernel_stack.resize(kstack_len / 8);
    std::memcpy(out.kernel_stack.data(), payload.data() + data_len + stack_len, kstack_len);
  }
  return true;
}

bool EventDecoder::decode_key(const AggregateRow& row, DecodedEvent& out) {
  out.header = {};
  out.header.probe_id = row.slot;
  out.n_values = 0;
  out.user_stack.clear();
  out.kernel_stack.clear();
  if (row.slot >= plan_.probes.size()) return false;
  auto values = decode_payload(plan_.probes[row.slot].fields, row.key, true);  // zero-padded
  if (!values) return false;
  if (out.values.size() < values->size()) out.values.resize(values->size());
  for (const PayloadValue& p : *values) {
    DecodedValue& v = out.values[out.n_values++];
    v = {};
    v.is_string = p.is_string;
    v.number = p.number;
    v.text = p.text;
    v.truncated = p.truncated;
    v.unreadable = p.deferred;
  }
  return true;
}

bool EventDecoder::decode_fields(const ProbePlan& probe, std::span<const uint8_t> data,
                                 DecodedEvent& out, bool& late_cut) {
  if (out.values.size() < probe.fields.size()) out.values.resize(probe.fields.size());
  PayloadReader reader(data);
  for (const auto& f : probe.fields) {
    DecodedValue& v = out.values[out.n_values];
    v.is_string = f.kind == OutputField::Kind::String;
    v.number = 0;
    v.text.clear();
    v.symbol.clear();
    v.late = v.unreadable = v.truncated = false;
    const auto pid = static_cast<pid_t>(out.header.tgid);
    if (f.kind == OutputField::Kind::GoValue || f.kind == OutputField::Kind::GoValues) {
      v.is_string = true;
      if (!take_go_values(reader, pid, f.kind == OutputField::Kind::GoValues, v, late_cut))
        return false;
      ++out.n_values;
      continue;
    }
    if (!v.is_string) {
      if (!reader.value(v.number)) return false;
      ++out.n_values;
      continue;
    }
    if (!take_string(reader, pid, v, late_cut)) return false;
    ++out.n_values;
  }
  return reader.at_end();
}

bool EventDecoder::take_string(PayloadReader& reader, pid_t pid, DecodedValue& v, bool& late_cut) {
  WireString s;
  if (!reader.string(s)) return false;
  v.truncated = s.truncated;
  if (s.deferred) {
    read_late(pid, s.address, s.length, s.exact, v);
    late_cut |= v.truncated && !s.truncated;
  } else {
    v.text.assign(s.text);
  }
  return true;
}

// TOP_EMIT_GOIFACE's payload (bpf/trace.h) as Go's %v prints it: "Hi", "[bye 2 true]", "<nil>".
// Kinds are reflect.Kind; a value whose kind has no short form shows its kind and address.
bool EventDecoder::take_go_values(PayloadReader& reader, pid_t pid, bool slice, DecodedValue& v,
                                  bool& late_cut) {
  uint64_t count = 1;
  bool more = false;
  if (slice) {
    if (!reader.value(count)) return false;
    more = count & TRACE_STR_TRUNCATED;
    count &= ~uint64_t{TRACE_STR_TRUNCATED};
    if (count > TRACE_GO_VALUES) return false;
  }
  std::string text = slice ? "[" : "";
  bool cut = false;
  for (uint64_t i = 0; i < count; ++i) {
    uint64_t type = 0, kind = 0, word = 0;
    if (!reader.value(type) || !reader.value(kind)) return false;
    if (i) text += ' ';
    if (kind == 24) {  // string
      DecodedValue s;
      if (!take_string(reader, pid, s, late_cut)) return false;
      text += s.text;
      cut |= s.truncated;
      continue;
    }
    if (!reader.value(word)) return false;
    auto as_signed = [&](int bytes) {
      return bytes == 8 ? static_cast<int64_t>(word)
                        : static_cast<int64_t>(word << (64 - 8 * bytes)) >> (64 - 8 * bytes);
    };
    auto as_unsigned = [&](int bytes) {
      return bytes == 8 ? word : word & ((uint64_t{1} << (8 * bytes)) - 1);
    };
    switch (kind) {
      case 0:
        text += type == 0 ? "<nil>" : fmt::format("<unreadable type {:#x}>", type);
        break;
      case 1:
        text += (word & 0xff) ? "true" : "false";
        break;
      case 2:
      case 6:
        text += fmt::format("{}", as_signed(8));
        break;
      case 3:
        text += fmt::format("{}", as_signed(1));
        break;
      case 4:
        text += fmt::format("{}", as_signed(2));
        break;
      case 5:
        text += fmt::format("{}", as_signed(4));
        break;
      case 7:
      case 11:
      case 12:
        text += fmt::format("{}", as_unsigned(8));
        break;
      case 8:
        text += fmt::format("{}", as_unsigned(1));
        break;
      case 9:
        text += fmt::format("{}", as_unsigned(2));
        break;
      case 10:
        text += fmt::format("{}", as_unsigned(4));
        break;
      case 13: {
        float f;
        auto bits = static_cast<uint32_t>(word);
        std::memcpy(&f, &bits, sizeof f);
        text += fmt::format("{}", f);
        break;
      }
      case 14: {
        double d;
        std::memcpy(&d, &word, sizeof d);
        text += fmt::format("{}", d);
        break;
      }
      case 18:
      case 19:
      case 21:
      case 22:
      case 26:
        text += fmt::format("{:#x}", word);
        break;
      default:
        text += fmt::format("<{} value>", go_kind_name(static_cast<GoKind>(kind)));
    }
  }
  if (slice) text += more ? " ...]" : "]";
  v.text = std::move(text);
  v.truncated = cut;
  return true;
}

void EventDecoder::read_late(pid_t pid, uint64_t addr, uint32_t len, bool exact, DecodedValue& v) {
  // A NUL-terminated string is read one byte longer, to tell one of exactly `len` bytes from a
  // longer one (as the BPF side does).
  size_t want = exact ? len : len + 1;
  v.text.resize(want);
  // Split at the page boundary: the string may end just before an unmapped page, and
  // process_vm_readv stops at the first iovec it cannot read. Called directly rather than through
  // read_process_memory(), whose error message would allocate for every unreadable string.
  static const uint64_t page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
  size_t first = std::min<uint64_t>(want, page - addr % page);
  iovec local{v.text.data(), want};
  iovec remote[2] = {{reinterpret_cast<void*>(addr), first},
                     {reinterpret_cast<void*>(addr + first), want - first}};
  ssize_t n = want ? process_vm_readv(pid, &local, 1, remote, first < want ? 2 : 1, 0) : 0;
  if (n < 0 || (exact && static_cast<size_t>(n) < want)) {
    v.text.clear();
    v.unreadable = true;
    ++unreadable_strings_;
    return;
  }
  size_t got = static_cast<size_t>(n);
  if (!exact) {
    size_t nul = v.text.find('\0');
    if (nul < got) {
      got = nul;
    } else {
      // No NUL within what was read: more bytes than `len`, or the string runs into memory that
      // cannot be read. Either way it is shown cut.
      got = std::min<size_t>(got, len);
      v.truncated = true;
    }
  }
  v.text.resize(got);
  v.late = true;
  ++late_strings_;
}

}  // namespace uscope
