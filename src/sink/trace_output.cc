#include "sink/trace_output.h"

#include <fmt/core.h>
#include <time.h>

#include <nlohmann/json.hpp>

#include "bpf/unwind.h"
#include "model/unwind_ends.h"
#include "sink/overhead_output.h"
#include "sink/text_writer.h"
#include "sink/wall_clock.h"
#include "symbolize/symbol_text.h"

namespace uscope {

namespace {

// bcc trace's columns: "%-8s " (-T, -t) or "%-17s " (-t -u), "%-3s " CPU, "%-7d %-7d %-15s %-16s".
constexpr size_t kClockWidth = 8, kUnixWidth = 17, kCpuWidth = 3, kPidWidth = 7, kCommWidth = 15,
                 kFuncWidth = 16;

// Whether `text` contains `needle`, without libc's memmem/strstr (a user may be probing them).
bool contains(std::string_view text, std::string_view needle) {
  if (needle.size() > text.size()) return false;
  for (size_t i = 0; i + needle.size() <= text.size(); ++i) {
    size_t k = 0;
    while (k < needle.size() && text[i + k] == needle[k]) ++k;
    if (k == needle.size()) return true;
  }
  return false;
}

// "SECONDS.micros", from nanoseconds.
void append_seconds(OutputBuffer& out, uint64_t ns) {
  append_decimal(out, ns / 1'000'000'000);
  char* p = out.reserve(7);
  p[0] = '.';
  uint64_t micros = ns % 1'000'000'000 / 1000;
  for (int i = 6; i >= 1; --i, micros /= 10) p[i] = static_cast<char>('0' + micros % 10);
  out.commit(7);
}

std::string_view comm_of(const uscope_event& ev) {
  size_t n = 0;
  while (n < sizeof(ev.comm) && ev.comm[n]) ++n;
  return {ev.comm, n};
}

std::string to_string(OutputBuffer& b) {
  return std::string(b.since(0));
}

void append_number_column(OutputBuffer& out, uint64_t v, size_t width) {
  char buf[kMaxDecimal];
  char* end = buf + sizeof(buf);
  char* p = decimal_backwards(v, end);
  append_padded(out, std::string_view(p, static_cast<size_t>(end - p)), width, true);
}

void append_key(OutputBuffer& out, std::string_view key) {
  out.append(",\"");
  out.append(key);
  out.append("\":");
}

}  // namespace

std::string format_message(const ProbePlan& probe, std::span<const DecodedValue> values) {
  OutputBuffer b(-1, 4096);
  MessageFormat(probe.spec).render(values, b);
  return to_string(b);
}

std::string printable_bytes(std::string_view s) {
  OutputBuffer b(-1, 4096);
  append_printable(b, s);
  return to_string(b);
}

TraceOutput::TraceOutput(const TracePlan& plan, OutputFormat format, OutputBuffer& out,
                         TraceColumns columns)
    : json_(format == OutputFormat::Json),
      out_(out),
      columns_(std::move(columns)),
      message_(-1, 64 * 1024) {
  for (const auto& p : plan.probes) {
    any_message_ |= !p.spec.format.empty();
    // bcc's FUNC column names a USDT probe without its provider; JSON keeps both.
    std::string_view func = p.label;
    if (p.spec.kind == ProbeKind::Usdt && func.rfind(':') != std::string_view::npos)
      func = func.substr(func.rfind(':') + 1);
    ProbeText t{MessageFormat(p.spec), {}, func.size(), {}};
    OutputBuffer b(-1, 4096);
    append_padded(b, func, kFuncWidth, true);
    t.text_label = to_string(b);
    b.truncate(0);
    b.append(",\"probe\":");
    append_json_string(b, p.spec.text);
    b.append(",\"function\":");
    append_json_string(b, p.label);
    b.append(",\"message\":");
    t.json_head = to_string(b);
    probes_.push_back(std::move(t));
  }
  read_clocks();
}

void TraceOutput::read_clocks() {
  realtime_minus_monotonic_ns_ = realtime_minus_monotonic_ns();
  timespec mono{};
  clock_gettime(CLOCK_MONOTONIC, &mono);
  start_ns_ = static_cast<uint64_t>(mono.tv_sec) * 1'000'000'000ull + mono.tv_nsec;
}

void TraceOutput::header() {
  read_clocks();
  if (json_) return;
  if (columns_.time != TraceColumns::Time::None) {
    append_padded(out_, "TIME",
                  columns_.time == TraceColumns::Time::Unix ? kUnixWidth : kClockWidth, true);
    out_.append(' ');
  }
  if (columns_.cpu) {
    append_padded(out_, "CPU", kCpuWidth, true);
    out_.append(' ');
  }
  append_padded(out_, "PID", kPidWidth, true);
  out_.append(' ');
  append_padded(out_, "TID", kPidWidth, true);
  out_.append(' ');
  append_padded(out_, "COMM", kCommWidth, true);
  out_.append(' ');
  // bcc heads the message column "-", and leaves it out when no probe prints a message.
  if (any_message_) {
    append_padded(out_, "FUNC", kFuncWidth, true);
    out_.append(" -\n");
  } else {
    out_.append("FUNC\n");
  }
}

void TraceOutput::time_column(uint64_t ktime_ns) {
  size_t mark = out_.pending();
  size_t width = kClockWidth;
  switch (columns_.time) {
    case TraceColumns::Time::None:
      return;
    case TraceColumns::Time::Clock:
      wall_time(ktime_ns);
      break;
    case TraceColumns::Time::SinceStart:
      append_seconds(out_, ktime_ns > start_ns_ ? ktime_ns - start_ns_ : 0);
      break;
    case TraceColumns::Time::Unix:
      append_seconds(out_, static_cast<uint64_t>(static_cast<int64_t>(ktime_ns) +
                                                 realtime_minus_monotonic_ns_));
      width = kUnixWidth;
      break;
  }
  size_t len = out_.pending() - mark;
  if (len < width) out_.append_repeated(' ', width - len);
  out_.append(' ');
}

// HH:MM:SS in local time.
void TraceOutput::wall_time(uint64_t ktime_ns) {
  int64_t ns = static_cast<int64_t>(ktime_ns) + realtime_minus_monotonic_ns_;
  int64_t secs = ns / 1'000'000'000;
  if (secs != cached_second_) {
    time_t t = static_cast<time_t>(secs);
    tm local{};
    localtime_r(&t, &local);
    int parts[3] = {local.tm_hour, local.tm_min, local.tm_sec};
    for (int i = 0; i < 3; ++i) {
      cached_hms_[3 * i] = static_cast<char>('0' + parts[i] / 10 % 10);
      cached_hms_[3 * i + 1] = static_cast<char>('0' + parts[i] % 10);
      if (i < 2) cached_hms_[3 * i + 2] = ':';
    }
    cached_second_ = secs;
  }
  out_.append(std::string_view(cached_hms_, 8));
}

bool TraceOutput::event(const DecodedEvent& ev, const EventStacks& stacks) {
  if (ev.header.probe_id >= probes_.size()) return false;
  const ProbeText& probe = probes_[ev.header.probe_id];
  // The message is rendered into the scratch buffer, where -f looks at it and JSON escapes it.
  message_.truncate(0);
  probe.message.render(std::span(ev.values.data(), ev.n_values), message_);
  if (!columns_.message_filter.empty() && !contains(message_.since(0), columns_.message_filter)) {
    ++message_filtered_;
    return false;
  }
  for (size_t i = 0; i < ev.n_values; ++i) truncated_strings_ += ev.values[i].truncated;
  ++events_;
  if (!json_)
    text_event(ev, probe, stacks);
  else
    json_event(ev, probe, stacks);
  return true;
}

void TraceOutput::stack_lines(const std::vector<Frame>& frames) {
  for (const auto& f : frames) {
    out_.append("        ");
    if (columns_.addresses) {
      char hex[17];
      uint64_t a = f.address;
      int n = 16;
      do {
        hex[--n] = "0123456789abcdef"[a & 15];
        a >>= 4;
      } while (a && n > 0);
      append_padded(out_, std::string_view(hex + n, static_cast<size_t>(16 - n)), 16, false);
      out_.append(' ');
    }
    // Frames are symbolized per event already (stacks allocate); symbol_text is their one form.
    out_.append(symbol_text(f));
    out_.append('\n');
  }
}

void TraceOutput::text_event(const DecodedEvent& ev, const ProbeText& probe,
                             const EventStacks& stacks) {
  time_column(ev.header.ts);
  if (columns_.cpu) {
    append_number_column(out_, ev.header.cpu, kCpuWidth);
    out_.append(' ');
  }
  append_number_column(out_, ev.header.tgid, kPidWidth);
  out_.append(' ');
  append_number_column(out_, ev.header.tid, kPidWidth);
  out_.append(' ');
  // A comm is whatever the process set (prctl): made printable so that one event stays one line.
  std::string_view comm = comm_of(ev.header);
  size_t mark = out_.pending();
  append_printable(out_, comm);
  size_t comm_len = out_.pending() - mark;
  if (comm_len < kCommWidth) out_.append_repeated(' ', kCommWidth - comm_len);
  out_.append(' ');
  std::string_view message = message_.since(0);
  if (message.empty()) {
    out_.append(std::string_view(probe.text_label).substr(0, probe.label_len));
  } else {
    out_.append(probe.text_label);
    out_.append(' ');
    out_.append(message);
  }
  out_.append('\n');
  if (!columns_.stacks) return;
  // bcc's order: the kernel stack, then the user stack, then an empty line.
  if (stacks.kernel) stack_lines(*stacks.kernel);
  if (stacks.user) {
    stack_lines(*stacks.user);
    // A walk that did not reach the thread's entry says why it stopped.
    if (ev.header.stack_end != UNWIND_END_ENTRY && !ev.user_stack.empty()) {
      out_.append("        [");
      out_.append(unwind_end_text(ev.header.stack_end));
      out_.append("]\n");
    }
  }
  out_.append('\n');
}

namespace {

void append_json_frames(OutputBuffer& out, std::string_view key, const std::vector<Frame>& frames) {
  append_key(out, key);
  out.append('[');
  bool first = true;
  for (const auto& f : frames) {
    out.append(first ? "{\"address\":" : ",{\"address\":");
    first = false;
    append_decimal(out, f.address);
    append_key(out, "function");
    append_json_string(out, f.function);
    append_key(out, "offset");
    append_decimal(out, f.function_offset);
    append_key(out, "object");
    append_json_string(out, f.object);
    if (const char* why = unknown_reason(f)) {
      append_key(out, "unknown");
      append_json_string(out, why);
    }
    out.append('}');
  }
  out.append(']');
}

}  // namespace

void TraceOutput::json_event(const DecodedEvent& ev, const ProbeText& probe,
                             const EventStacks& stacks) {
  const uscope_event& h = ev.header;
  out_.append("{\"kind\":\"event\",\"time_ns\":");
  append_signed(out_, static_cast<int64_t>(h.ts) + realtime_minus_monotonic_ns_);
  append_key(out_, "pid");
  append_decimal(out_, h.tgid);
  append_key(out_, "tid");
  append_decimal(out_, h.tid);
  append_key(out_, "comm");
  append_json_string(out_, comm_of(h));
  append_key(out_, "cpu");
  append_decimal(out_, h.cpu);
  out_.append(probe.json_head);
  // The message is printable ASCII but for the format's own literal text: escape only if needed.
  std::string_view message = message_.since(0);
  if (json_plain(message)) {
    out_.append('"');
    out_.append(message);
    out_.append('"');
  } else {
    append_json_string(out_, message);
  }
  out_.append(",\"values\":[");
  for (size_t i = 0; i < ev.n_values; ++i) {
    if (i) out_.append(',');
    const DecodedValue& v = ev.values[i];
    if (v.is_string)
      append_json_string(out_, v.text);
    else
      append_decimal(out_, v.number);
  }
  out_.append(']');
  if (h.duration_ns) {
    append_key(out_, "duration_ns");
    append_decimal(out_, h.duration_ns);
  }
  if (ev.truncated()) out_.append(",\"truncated\":true");
  if (stacks.user) {
    append_json_frames(out_, "stack", *stacks.user);
    if (!ev.user_stack.empty()) {
      append_key(out_, "stack_end");
      append_json_string(out_, unwind_end_name(ev.header.stack_end));
    }
  }
  if (stacks.kernel) append_json_frames(out_, "kernel_stack", *stacks.kernel);
  out_.append("}\n");
}

uint64_t TraceOutput::events_in(std::string_view bytes) const {
  // JSON Lines and text without stacks: one line per event. Text with stacks: an event ends with
  // an empty line.
  uint64_t n = 0;
  for (size_t i = 0; i < bytes.size(); ++i) {
    if (bytes[i] != '\n') continue;
    if (json_ || !columns_.stacks || (i > 0 && bytes[i - 1] == '\n')) ++n;
  }
  return n;
}

namespace {

std::string trace_json_summary(const TraceTotals& t, size_t sites, std::string_view stop,
                               const Overhead& overhead) {
  nlohmann::json j = {{"kind", "summary"},
                      {"stop", stop},
                      {"events", t.printed},
                      {"lost", t.lost},
                      {"malformed", t.malformed},
                      {"stack_failed", t.stack_failed},
                      {"truncated_strings", t.truncated},
                      {"filtered", t.filtered},
                      {"read_errors", t.read_errors},
                      {"returns_without_entry", t.no_entry},
                      {"late_string_reads", t.late_strings},
                      {"unreadable_strings", t.unreadable_strings},
                      {"output_dropped", t.output_dropped},
                      {"comm_filtered", t.comm_filtered},
                      {"message_filtered", t.message_filtered},
                      {"sites", sites},
                      {"overhead", overhead_json(overhead)}};
  return j.dump() + "\n";
}

}  // namespace

std::string TraceOutput::summary(const TraceTotals& t, size_t sites, std::string_view stop,
                                 const Overhead& overhead) const {
  return json_ ? trace_json_summary(t, sites, stop, overhead) : "";
}

std::string trace_text_summary(const TraceTotals& t, std::string_view stop) {
  std::string s =
      fmt::format("uscope: {}; {} events printed, {} lost (ring buffer full), {} filtered out",
                  stop, t.printed, t.lost, t.filtered);
  if (t.comm_filtered) s += fmt::format(", {} left out by -n (comm)", t.comm_filtered);
  if (t.message_filtered) s += fmt::format(", {} left out by -f (message)", t.message_filtered);
  if (t.output_dropped)
    s += fmt::format(", {} not written (output too slow at the stop)", t.output_dropped);
  if (t.malformed)
    s += fmt::format(", {} dropped as malformed (recipe error or event too big)", t.malformed);
  if (t.stack_failed)
    s += fmt::format(", {} without their user stack (capture failed)", t.stack_failed);
  if (t.truncated) s += fmt::format(", {} with a string cut short", t.truncated);
  if (t.read_errors) s += fmt::format(", {} with unreadable memory", t.read_errors);
  if (t.late_strings)
    s += fmt::format(
        ", {} strings read from the live process after the event (their page was not yet "
        "touched at the probe)",
        t.late_strings);
  if (t.unreadable_strings) s += fmt::format(", {} strings unreadable", t.unreadable_strings);
  if (t.no_entry) s += fmt::format(", {} returns without a recorded entry", t.no_entry);
  return s + "\n";
}

}  // namespace uscope
