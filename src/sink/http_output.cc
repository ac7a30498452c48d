#include "sink/http_output.h"

#include <fmt/core.h>

#include <nlohmann/json.hpp>

#include "sink/event_loss_output.h"

namespace uscope {

namespace {

const char* side_name(HttpSide s) {
  return s == HttpSide::Server ? "server" : "client";
}

std::string status_text(const HttpExchange& x) {
  if (x.failed) return x.status ? fmt::format("{}+err", x.status) : "error";
  if (x.status == kHttpStatusUnknown) return "?";
  return std::to_string(x.status);
}

}  // namespace

std::string duration_text(uint64_t ns) {
  if (ns >= 1'000'000'000) return fmt::format("{:.3f} s", double(ns) / 1e9);
  return fmt::format("{:.3f} ms", double(ns) / 1e6);
}

std::string http_text_header() {
  return fmt::format("{:<6} {:<7} {:>6} {:>11}  {}\n", "SIDE", "METHOD", "STATUS", "DURATION",
                     "URL");
}

std::string http_text_line(const HttpExchange& x) {
  return fmt::format("{:<6} {:<7} {:>6} {:>11}  {}{}\n", side_name(x.side), x.method,
                     status_text(x), duration_text(x.duration_ns), x.url, x.cut ? "…" : "");
}

std::string http_json_line(const HttpExchange& x) {
  nlohmann::json j = {{"kind", "request"},
                      {"side", side_name(x.side)},
                      {"method", x.method},
                      {"url", x.url},
                      {"path", x.path},
                      {"route", x.route},
                      {"status", x.status},
                      {"error", x.error()},
                      {"duration_ns", x.duration_ns},
                      {"pid", x.pid},
                      {"tid", x.tid},
                      {"ts_ns", x.ts_ns}};
  if (x.side == HttpSide::Client) j["failed"] = x.failed;
  if (x.protocol) j["protocol"] = http_protocol_name(x.protocol);
  if (x.cut) j["truncated"] = true;
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

std::string http_text_summary(const HttpRed& red, const HttpLosses& l, std::string_view stop) {
  const size_t n_routes = red.routes().size();
  std::string out = fmt::format("uscope http: {}; {} requests on {} route{}\n", stop,
                                red.exchanges(), n_routes, n_routes == 1 ? "" : "s");
  if (red.exchanges()) {
    out += fmt::format("{:<6} {:<7} {:>7} {:>7} {:>11} {:>11} {:>11} {:>11}  {}\n", "SIDE",
                       "METHOD", "COUNT", "ERRORS", "P50", "P90", "P99", "MAX", "ROUTE");
    for (const HttpRouteStats* s : red.routes()) {
      const auto& d = s->durations;
      out += fmt::format("{:<6} {:<7} {:>7} {:>7} {:>11} {:>11} {:>11} {:>11}  {}\n",
                         side_name(s->key.side), s->key.method, s->count, s->errors,
                         duration_text(d.quantile(0.5)), duration_text(d.quantile(0.9)),
                         duration_text(d.quantile(0.99)), duration_text(d.max()), s->key.route);
    }
    out += "(percentiles from a log-linear histogram: within 1.6% of the exact value)\n";
  }
  if (red.overflowed())
    out += fmt::format("uscope http: {} requests past {} routes counted under \"{}\"\n",
                       red.overflowed(), HttpRed::kDefaultMaxRoutes, HttpRed::kOtherRoutes);
  LossList losses;
  add_event_losses(losses, l);
  losses.add(l.status_unknown,
             "without a status (ended through a writer not net/http's), not counted as errors");
  losses.add(l.unfinished,
             "unfinished, not counted (hijacked, e.g. WebSocket; handler panicked; still running "
             "at the stop)");
  out += losses.empty()
             ? "uscope http: nothing lost\n"
             : fmt::format("uscope http: requests missing or incomplete: {}\n", losses.text());
  return out;
}

std::string http_json_summary(const HttpRed& red, const HttpLosses& l, std::string_view stop) {
  nlohmann::json routes = nlohmann::json::array();
  for (const HttpRouteStats* s : red.routes()) {
    const auto& d = s->durations;
    nlohmann::json statuses = nlohmann::json::object();
    for (auto [code, n] : s->statuses) statuses[std::to_string(code)] = n;
    routes.push_back({{"side", side_name(s->key.side)},
                      {"method", s->key.method},
                      {"route", s->key.route},
                      {"count", s->count},
                      {"errors", s->errors},
                      {"statuses", statuses},
                      {"p50_ns", d.quantile(0.5)},
                      {"p90_ns", d.quantile(0.9)},
                      {"p99_ns", d.quantile(0.99)},
                      {"min_ns", d.min()},
                      {"max_ns", d.max()},
                      {"sum_ns", d.sum()}});
  }
  nlohmann::json j = {{"kind", "summary"},
                      {"stop", stop},
                      {"requests", red.exchanges()},
                      {"routes", routes},
                      {"percentiles", "log-linear histogram, within 1.6%"},
                      {"other_routes_requests", red.overflowed()},
                      {"losses", event_losses_json(l)}};
  j["losses"]["status_unknown"] = l.status_unknown;
  j["losses"]["unfinished"] = l.unfinished;
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

HttpSink http_sink(OutputFormat format) {
  return line_sink(format, HttpSink{http_text_header(), http_text_line, http_text_summary},
                   HttpSink{"", http_json_line, http_json_summary});
}

}  // namespace uscope
