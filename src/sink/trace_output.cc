#include "sink/trace_output.h"

#include <time.h>

#include "sink/text_writer.h"

namespace uscope {

namespace {

constexpr size_t kTimeWidth = 15, kPidWidth = 7, kCommWidth = 16, kFuncWidth = 20;

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
  append_padded(out, std::string_view(p, static_cast<size_t>(end - p)), width, false);
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

TraceOutput::TraceOutput(const TracePlan& plan, Format format, OutputBuffer& out, bool with_stacks)
    : format_(format), out_(out), with_stacks_(with_stacks), message_(-1, 64 * 1024) {
  for (const auto& p : plan.probes) {
    ProbeText t{MessageFormat(p.spec), {}, {}};
    OutputBuffer b(-1, 4096);
    append_padded(b, p.label, kFuncWidth, true);
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
  timespec rt{}, mono{};
  clock_gettime(CLOCK_REALTIME, &rt);
  clock_gettime(CLOCK_MONOTONIC, &mono);
  realtime_minus_monotonic_ns_ =
      (rt.tv_sec - mono.tv_sec) * 1'000'000'000LL + (rt.tv_nsec - mono.tv_nsec);
}

void TraceOutput::header() {
  if (format_ != Format::Text) return;
  append_padded(out_, "TIME", kTimeWidth, true);
  out_.append(' ');
  append_padded(out_, "PID", kPidWidth, false);
  out_.append(' ');
  append_padded(out_, "TID", kPidWidth, false);
  out_.append(' ');
  append_padded(out_, "COMM", kCommWidth, true);
  out_.append(' ');
  append_padded(out_, "FUNC", kFuncWidth, true);
  out_.append(" MESSAGE\n");
}

// HH:MM:SS.uuuuuu in local time.
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
  char* p = out_.reserve(15);
  for (int i = 0; i < 8; ++i) p[i] = cached_hms_[i];
  p[8] = '.';
  auto micros = static_cast<uint64_t>(ns % 1'000'000'000) / 1000;
  for (int i = 14; i >= 9; --i, micros /= 10) p[i] = static_cast<char>('0' + micros % 10);
  out_.commit(15);
}

void TraceOutput::event(const DecodedEvent& ev, const std::vector<Frame>* stack) {
  if (ev.header.probe_id >= probes_.size()) return;
  const ProbeText& probe = probes_[ev.header.probe_id];
  for (size_t i = 0; i < ev.n_values; ++i) truncated_strings_ += ev.values[i].truncated;
  ++events_;
  if (format_ == Format::Text)
    text_event(ev, probe, stack);
  else
    json_event(ev, probe, stack);
}

void TraceOutput::text_event(const DecodedEvent& ev, const ProbeText& probe,
                             const std::vector<Frame>* stack) {
  wall_time(ev.header.ts);
  out_.append(' ');
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
  out_.append(probe.text_label);
  out_.append(' ');
  probe.message.render(std::span(ev.values.data(), ev.n_values), out_);
  out_.append('\n');
  if (!with_stacks_) return;
  if (stack) {
    for (const auto& f : *stack) {
      // Frames are symbolized per event already (-U allocates); describe() is their one format.
      out_.append("        ");
      out_.append(f.describe());
      out_.append('\n');
    }
  }
  out_.append('\n');
}

void TraceOutput::json_event(const DecodedEvent& ev, const ProbeText& probe,
                             const std::vector<Frame>* stack) {
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
  message_.truncate(0);
  probe.message.render(std::span(ev.values.data(), ev.n_values), message_);
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
  if (stack) {
    out_.append(",\"stack\":[");
    bool first = true;
    for (const auto& f : *stack) {
      out_.append(first ? "{\"address\":" : ",{\"address\":");
      first = false;
      append_decimal(out_, f.address);
      append_key(out_, "function");
      append_json_string(out_, f.function);
      append_key(out_, "offset");
      append_decimal(out_, f.function_offset);
      append_key(out_, "object");
      append_json_string(out_, f.object);
      out_.append('}');
    }
    out_.append(']');
  }
  out_.append("}\n");
}

uint64_t TraceOutput::events_in(std::string_view bytes) const {
  // JSON Lines and text without stacks: one line per event. Text with stacks: an event ends with
  // an empty line.
  uint64_t n = 0;
  for (size_t i = 0; i < bytes.size(); ++i) {
    if (bytes[i] != '\n') continue;
    if (format_ == Format::JsonLines || !with_stacks_ || (i > 0 && bytes[i - 1] == '\n')) ++n;
  }
  return n;
}

}  // namespace uscope
