#include "sink/trace_output.h"

#include <fmt/core.h>
#include <time.h>

#include <cstring>
#include <nlohmann/json.hpp>

#include "discover/process.h"

namespace uscope {

std::vector<FieldValue> decode_fields(const ProbePlan& probe, std::span<const uint8_t> data,
                                      const LateStringReader& late_read) {
  std::vector<FieldValue> out;
  size_t pos = 0;
  for (const auto& f : probe.fields) {
    FieldValue v;
    if (f.kind == OutputField::Kind::Value) {
      if (pos + 8 > data.size()) break;
      std::memcpy(&v.number, data.data() + pos, 8);
      pos += 8;
    } else {
      uint32_t len = 0;
      if (pos + 4 > data.size()) break;
      std::memcpy(&len, data.data() + pos, 4);
      pos += 4;
      v.is_string = true;
      if (len & TRACE_STR_DEFERRED) {
        uint64_t addr = 0;
        if (pos + 8 > data.size()) break;
        std::memcpy(&addr, data.data() + pos, 8);
        pos += 8;
        auto text = late_read ? late_read(addr, len & TRACE_STR_LEN_MASK, len & TRACE_STR_EXACT)
                              : std::nullopt;
        v.late = text.has_value();
        v.unreadable = !v.late;
        v.text = text.value_or("");
        out.push_back(std::move(v));
        continue;
      }
      len = static_cast<uint32_t>(std::min<size_t>(len & TRACE_STR_LEN_MASK, data.size() - pos));
      v.text.assign(reinterpret_cast<const char*>(data.data() + pos), len);
      pos += len;
    }
    out.push_back(std::move(v));
  }
  return out;
}

std::string printable_bytes(std::string_view s) {
  std::string out;
  for (unsigned char c : s) {
    if (c >= 0x20 && c < 0x7f && c != '\\')
      out += static_cast<char>(c);
    else if (c == '\\')
      out += "\\\\";
    else if (c == '\n')
      out += "\\n";
    else if (c == '\r')
      out += "\\r";
    else if (c == '\t')
      out += "\\t";
    else
      out += fmt::format("\\x{:02x}", c);
  }
  return out;
}

namespace {

// Appends format text that is not a conversion, turning "%%" into "%".
void append_literal(std::string& out, std::string_view text) {
  for (size_t i = 0; i < text.size(); ++i) {
    out += text[i];
    if (text[i] == '%' && i + 1 < text.size() && text[i + 1] == '%') ++i;
  }
}

// Renders one conversion with the C library, typed as the conversion's length modifier says.
// The conversion text was validated by the spec parser (flags, width, precision, l/ll/h/hh/z and
// one of d i u x X p c s), so it is safe to hand to snprintf.
std::string render(const std::string& spec, const FormatConversion& c, const FieldValue& v) {
  char buf[4096];
  const char* f = spec.c_str();
  int n = 0;
  if (c.conv == 's') {
    std::string shown = printable_bytes(v.text);
    n = std::snprintf(buf, sizeof(buf), f, shown.c_str());
  } else if (c.conv == 'p') {
    n = std::snprintf(buf, sizeof(buf), f, reinterpret_cast<void*>(v.number));
  } else if (c.conv == 'c') {
    n = std::snprintf(buf, sizeof(buf), f, static_cast<int>(static_cast<unsigned char>(v.number)));
  } else {
    bool is_signed = c.conv == 'd' || c.conv == 'i';
    if (c.length == "l" || c.length == "ll" || c.length == "z")
      n = is_signed ? std::snprintf(buf, sizeof(buf), f, static_cast<long long>(v.number))
                    : std::snprintf(buf, sizeof(buf), f, static_cast<unsigned long long>(v.number));
    else
      n = is_signed ? std::snprintf(buf, sizeof(buf), f, static_cast<int>(v.number))
                    : std::snprintf(buf, sizeof(buf), f, static_cast<unsigned>(v.number));
  }
  if (n < 0) return "?";
  return std::string(buf, std::min<size_t>(static_cast<size_t>(n), sizeof(buf) - 1));
}

}  // namespace

std::string format_message(const ProbePlan& probe, const std::vector<FieldValue>& values) {
  const std::string& format = probe.spec.format;
  const auto& convs = probe.spec.conversions;
  std::string out;
  size_t pos = 0;
  for (size_t i = 0; i < convs.size(); ++i) {
    const auto& c = convs[i];
    if (c.format_pos < pos || c.format_pos + c.format_len > format.size()) break;
    append_literal(out, std::string_view(format).substr(pos, c.format_pos - pos));
    std::string spec = format.substr(c.format_pos, c.format_len);
    // "%zu" and "%lu" are rendered through long long: normalize the length modifier.
    if (!c.length.empty()) {
      auto at = spec.rfind(c.length);
      if (at != std::string::npos)
        spec.replace(at, c.length.size(),
                     (c.length == "l" || c.length == "ll" || c.length == "z") ? "ll" : c.length);
    }
    out += i < values.size() ? render(spec, c, values[i]) : "?";
    pos = c.format_pos + c.format_len;
  }
  if (pos < format.size()) append_literal(out, std::string_view(format).substr(pos));
  return out;
}

TraceOutput::TraceOutput(const TracePlan& plan, Format format, std::FILE* out)
    : plan_(plan), format_(format), out_(out) {
  // A program reading JSON Lines must get whole lines even when a traced command (-c) writes to
  // the same pipe: one write() per line keeps each line atomic (lines are under PIPE_BUF).
  if (format_ == Format::JsonLines) std::setvbuf(out_, nullptr, _IOLBF, 0);
  timespec rt{}, mono{};
  clock_gettime(CLOCK_REALTIME, &rt);
  clock_gettime(CLOCK_MONOTONIC, &mono);
  realtime_minus_monotonic_ns_ =
      (rt.tv_sec - mono.tv_sec) * 1'000'000'000LL + (rt.tv_nsec - mono.tv_nsec);
}

std::string TraceOutput::wall_time(uint64_t ktime_ns) const {
  int64_t ns = static_cast<int64_t>(ktime_ns) + realtime_minus_monotonic_ns_;
  time_t secs = static_cast<time_t>(ns / 1'000'000'000);
  tm t{};
  localtime_r(&secs, &t);
  return fmt::format("{:02}:{:02}:{:02}.{:06}", t.tm_hour, t.tm_min, t.tm_sec,
                     (ns % 1'000'000'000) / 1000);
}

void TraceOutput::header() {
  if (format_ == Format::Text)
    fmt::print(out_, "{:<15} {:>7} {:>7} {:<16} {:<20} {}\n", "TIME", "PID", "TID", "COMM", "FUNC",
               "MESSAGE");
  std::fflush(out_);
}

void TraceOutput::event(const uscope_event& ev, std::span<const uint8_t> data,
                        const std::vector<Frame>* stack) {
  if (ev.probe_id >= plan_.probes.size()) return;
  const ProbePlan& probe = plan_.probes[ev.probe_id];
  auto late_read = [&ev](uint64_t addr, uint32_t len, bool exact) -> std::optional<std::string> {
    std::string buf(len, '\0');
    auto n = read_process_memory(static_cast<pid_t>(ev.tgid), addr,
                                 std::span<uint8_t>(reinterpret_cast<uint8_t*>(buf.data()), len));
    if (!n || (exact && *n < len)) return std::nullopt;
    buf.resize(*n);
    if (!exact) buf.resize(std::min(buf.find('\0'), buf.size()));
    return buf;
  };
  auto values = decode_fields(probe, data, late_read);
  for (const auto& v : values) {
    late_strings_ += v.late;
    unreadable_strings_ += v.unreadable;
  }
  std::string message = format_message(probe, values);
  std::string comm(ev.comm, strnlen(ev.comm, sizeof(ev.comm)));
  ++events_;
  if (format_ == Format::Text) {
    fmt::print(out_, "{:<15} {:>7} {:>7} {:<16} {:<20} {}\n", wall_time(ev.ts), ev.tgid, ev.tid,
               comm, probe.label, message);
    if (stack) {
      for (const auto& f : *stack) fmt::print(out_, "        {}\n", f.describe());
      fmt::print(out_, "\n");
    }
  } else {
    nlohmann::json vals = nlohmann::json::array();
    for (const auto& v : values) {
      if (v.is_string)
        vals.push_back(v.text);
      else
        vals.push_back(v.number);
    }
    nlohmann::json j = {{"kind", "event"},
                        {"time_ns", static_cast<int64_t>(ev.ts) + realtime_minus_monotonic_ns_},
                        {"pid", ev.tgid},
                        {"tid", ev.tid},
                        {"comm", comm},
                        {"cpu", ev.cpu},
                        {"probe", probe.spec.text},
                        {"function", probe.label},
                        {"message", message},
                        {"values", vals}};
    if (ev.duration_ns) j["duration_ns"] = ev.duration_ns;
    if (stack) {
      nlohmann::json frames = nlohmann::json::array();
      for (const auto& f : *stack)
        frames.push_back({{"address", f.address},
                          {"function", f.function},
                          {"offset", f.function_offset},
                          {"object", f.object}});
      j["stack"] = frames;
    }
    fmt::print(out_, "{}\n", j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
  }
}

}  // namespace uscope
