#include "sink/tls_output.h"

#include <fmt/core.h>

#include <nlohmann/json.hpp>

#include "sink/event_loss_output.h"
#include "sink/tls_payload.h"

namespace uscope {

namespace {

constexpr std::string_view kIndent = "    ";

const char* direction_name(const TlsFunction& f) {
  return f.direction == TlsDirection::Read ? (f.peek ? "peek" : "read") : "write";
}

// The function as a person knows it: "SSL_read", "tls.(*Conn).Read".
std::string_view short_function(const TlsFunction& f) {
  std::string_view n = f.name;
  if (n.starts_with("crypto/")) n.remove_prefix(7);
  return n;
}

std::string connection_text(const TlsRecord& r) {
  std::string out =
      fmt::format("{} 0x{:x}", r.function->library == TlsLibrary::Go ? "conn" : "ssl", r.conn);
  if (r.fd < 0) return out + " fd ?";
  out += fmt::format(" fd {}", r.fd);
  out += r.peer.empty() ? " peer ?" : " " + r.peer;
  return out;
}

// The payload as shown: text (redacted unless asked not to) or binary; `redacted` counts values.
struct Shown {
  bool text = false;
  std::string data;
  size_t redacted = 0;
};
Shown shown(const TlsRecord& r, const TlsRender& how) {
  Shown s;
  s.text = payload_is_text(r.data);
  if (s.text && how.redact)
    s.data = redact_headers(r.data, s.redacted);
  else
    s.data = r.data;
  return s;
}

std::string size_text(uint64_t n) {
  if (n >= 10 * 1024 * 1024) return fmt::format("{:.1f} MiB", double(n) / (1024 * 1024));
  if (n >= 10 * 1024) return fmt::format("{:.1f} KiB", double(n) / 1024);
  return fmt::format("{} B", n);
}

}  // namespace

std::string tls_text_header() {
  return fmt::format("{:<11} {:>7} {:<15} {:<18} {:<5} {:>6}  {}\n", "TIME(s)", "PID", "COMM",
                     "FUNCTION", "DIR", "BYTES", "CONNECTION");
}

std::string tls_text_record(const TlsRecord& r, const TlsRender& how) {
  double t = r.ts_ns >= how.start_ns ? double(r.ts_ns - how.start_ns) / 1e9 : 0.0;
  std::string out = fmt::format("{:<11.6f} {:>7} {:<15} {:<18} {:<5} {:>6}  {}\n", t, r.pid, r.comm,
                                short_function(*r.function), direction_name(*r.function), r.bytes,
                                connection_text(r));
  if (r.unreadable) return out + fmt::format("{}[payload unreadable]\n", kIndent);
  Shown s = shown(r, how);
  out += s.text ? payload_text_lines(s.data, kIndent) : payload_hex_lines(s.data, kIndent);
  if (r.not_captured())
    out += fmt::format("{}[… {} more bytes not captured: --max-bytes {}]\n", kIndent,
                       r.not_captured(), how.max_bytes);
  return out;
}

std::string tls_json_record(const TlsRecord& r, const TlsRender& how) {
  nlohmann::json j = {{"kind", "tls"},
                      {"ts_ns", r.ts_ns},
                      {"duration_ns", r.duration_ns},
                      {"pid", r.pid},
                      {"tid", r.tid},
                      {"comm", r.comm},
                      {"library", tls_library_name(r.function->library)},
                      {"function", r.function->name},
                      {"direction", r.function->direction == TlsDirection::Read ? "read" : "write"},
                      {"peek", r.function->peek},
                      {"conn", fmt::format("0x{:x}", r.conn)},
                      {"fd", nullptr},
                      {"peer", nullptr},
                      {"bytes", r.bytes},
                      {"captured", r.data.size()},
                      {"not_captured", r.not_captured()}};
  if (r.fd >= 0) j["fd"] = r.fd;
  if (!r.peer.empty()) j["peer"] = r.peer;
  if (r.unreadable) {
    j["unreadable"] = true;
  } else {
    Shown s = shown(r, how);
    j["encoding"] = s.text ? "text" : "hex";
    j["data"] = s.text ? s.data : payload_hex(s.data);
    if (s.redacted) j["redacted"] = s.redacted;
  }
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

std::string tls_text_summary(const TlsTotals& t, const TlsLosses& l, std::string_view stop) {
  std::string out = fmt::format("uscope tls: {}; {} reads ({}), {} writes ({})\n", stop, t.reads,
                                size_text(t.read_bytes), t.writes, size_text(t.write_bytes));
  LossList notes;
  notes.add(t.fd_unknown, "calls without a known fd");
  notes.add(t.peer_unknown,
            "calls with an fd but no TCP peer found (not TCP, or closed before uscope looked)");
  notes.add(l.filtered, "calls that failed or moved no data (not shown)");
  notes.add(t.late_payloads, "payloads read from the process after the call");
  if (!notes.empty()) out += fmt::format("uscope tls: {}\n", notes.text());
  LossList losses;
  add_event_losses(losses, l);
  losses.add(l.unreadable_payloads, "payloads unreadable");
  if (l.cut_calls)
    losses.add(l.cut_calls,
               fmt::format("calls cut at --max-bytes ({} bytes not captured)", l.cut_bytes));
  out += losses.empty()
             ? "uscope tls: nothing lost\n"
             : fmt::format("uscope tls: calls missing or incomplete: {}\n", losses.text());
  return out;
}

std::string tls_json_summary(const TlsTotals& t, const TlsLosses& l, std::string_view stop) {
  nlohmann::json j = {{"kind", "summary"},
                      {"stop", stop},
                      {"reads", t.reads},
                      {"writes", t.writes},
                      {"read_bytes", t.read_bytes},
                      {"write_bytes", t.write_bytes},
                      {"fd_unknown", t.fd_unknown},
                      {"peer_unknown", t.peer_unknown},
                      {"no_data_calls", l.filtered},
                      {"late_payloads", t.late_payloads},
                      {"losses", event_losses_json(l)}};
  j["losses"]["unreadable_payloads"] = l.unreadable_payloads;
  j["losses"]["cut_calls"] = l.cut_calls;
  j["losses"]["cut_bytes"] = l.cut_bytes;
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

TlsSink tls_sink(OutputFormat format) {
  return line_sink(format, TlsSink{tls_text_header(), tls_text_record, tls_text_summary},
                   TlsSink{"", tls_json_record, tls_json_summary});
}

}  // namespace uscope
