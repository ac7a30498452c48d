#include "sink/go_stat_output.h"

#include <fmt/core.h>

#include <nlohmann/json.hpp>

#include "sink/http_output.h"
#include "sink/loss_list.h"

namespace uscope {

namespace {

double per_second(uint64_t n, double seconds) {
  return seconds > 0 ? double(n) / seconds : 0;
}

std::string live_text(const std::optional<GoroutineCount>& live) {
  return live ? std::to_string(live->user) : "-";
}

nlohmann::json live_json(const std::optional<GoroutineCount>& live) {
  if (!live) return nullptr;
  return {{"goroutines", live->user}, {"runtime_goroutines", live->system}};
}

}  // namespace

std::string go_stat_text_header() {
  return fmt::format("{:<8} {:>10} {:>9} {:>9} {:>6} {:>6} {:>11} {:>11}\n", "TIME", "GOROUTINES",
                     "CREATED/s", "EXITED/s", "GC/s", "STW/s", "STW-TIME/s", "STW-MAX");
}

std::string go_stat_text_line(const GoStatInterval& i, std::string_view clock) {
  const double s = i.seconds;
  return fmt::format("{:<8} {:>10} {:>9.0f} {:>9.0f} {:>6.1f} {:>6.1f} {:>11} {:>11}\n", clock,
                     live_text(i.live), per_second(i.counts.created, s),
                     per_second(i.counts.exited, s), per_second(i.counts.gc_cycles, s),
                     per_second(i.pauses, s),
                     duration_text(static_cast<uint64_t>(per_second(i.pause_ns, s))),
                     i.pauses ? duration_text(i.pause_max_ns) : "-");
}

std::string go_stat_json_line(const GoStatInterval& i, std::string_view clock) {
  nlohmann::json j = {{"kind", "interval"},
                      {"time", clock},
                      {"seconds", i.seconds},
                      {"live", live_json(i.live)},
                      {"created", i.counts.created},
                      {"exited", i.counts.exited},
                      {"gc_cycles", i.counts.gc_cycles},
                      {"stw_pauses", i.pauses},
                      {"stw_ns", i.pause_ns},
                      {"stw_max_ns", i.pause_max_ns}};
  return j.dump() + "\n";
}

namespace {

std::string losses_text(const GoStatLosses& l) {
  LossList out;
  auto add = [&](uint64_t n, std::string_view what) { out.add(n, what); };
  add(l.ring_lost, "stop/start events lost (ring buffer full): pauses missing");
  add(l.unmatched_starts, "restarts without their stop (pauses begun before the probes)");
  add(l.open_pauses, "pauses still open at the end (not counted)");
  add(l.census_failures, "intervals whose live goroutines could not be read");
  add(l.malformed, "events malformed");
  add(l.unread, "stop/start events not read by the end");
  return out.text();
}

}  // namespace

std::string go_stat_text_summary(const GoRuntimeStats& s, const GoStatLosses& l,
                                 const GoStatSummary& about) {
  const auto& t = s.totals();
  std::string out = fmt::format("uscope stat: {}; {:.1f} s of {} ({})\n", about.stop, s.seconds(),
                                about.object, about.go_version);
  out += fmt::format("  goroutines: {} created, {} exited", t.created, t.exited);
  if (s.first_live() && s.last_live())
    out += fmt::format("; live {} at the first reading, {} at the last (the runtime's own: {})",
                       s.first_live()->user, s.last_live()->user, s.last_live()->system);
  else if (!about.no_goroutines.empty())
    out += fmt::format("; live goroutines unknown: {}", about.no_goroutines);
  else
    out += "; live goroutines not read (no interval ended while the program ran)";
  out += "\n";
  out += fmt::format("  GC: {} cycles completed\n", t.gc_cycles);
  const auto& p = s.pauses();
  if (p.count())
    out += fmt::format(
        "  stop-the-world: {} pauses, {} in total; p50 {}, p90 {}, p99 {}, max {} (percentiles "
        "within 1.6%)\n",
        p.count(), duration_text(p.sum()), duration_text(p.quantile(0.5)),
        duration_text(p.quantile(0.9)), duration_text(p.quantile(0.99)), duration_text(p.max()));
  else
    out += "  stop-the-world: no pauses\n";
  std::string lost = losses_text(l);
  out += lost.empty() ? "uscope stat: nothing lost\n"
                      : fmt::format("uscope stat: incomplete: {}\n", lost);
  return out;
}

std::string go_stat_json_summary(const GoRuntimeStats& s, const GoStatLosses& l,
                                 const GoStatSummary& about) {
  const auto& t = s.totals();
  const auto& p = s.pauses();
  nlohmann::json j = {{"kind", "summary"},
                      {"stop", about.stop},
                      {"object", about.object},
                      {"go_version", about.go_version},
                      {"seconds", s.seconds()},
                      {"created", t.created},
                      {"exited", t.exited},
                      {"gc_cycles", t.gc_cycles},
                      {"first_live", live_json(s.first_live())},
                      {"last_live", live_json(s.last_live())},
                      {"stw",
                       {{"pauses", p.count()},
                        {"total_ns", p.sum()},
                        {"p50_ns", p.quantile(0.5)},
                        {"p90_ns", p.quantile(0.9)},
                        {"p99_ns", p.quantile(0.99)},
                        {"max_ns", p.max()}}},
                      {"losses",
                       {{"ring_lost", l.ring_lost},
                        {"unmatched_starts", l.unmatched_starts},
                        {"open_pauses", l.open_pauses},
                        {"census_failures", l.census_failures},
                        {"malformed", l.malformed},
                        {"unread", l.unread}}}};
  if (!about.no_goroutines.empty()) j["no_goroutines"] = about.no_goroutines;
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

GoStatSink go_stat_sink(OutputFormat format) {
  return line_sink(format,
                   GoStatSink{go_stat_text_header(), go_stat_text_line, go_stat_text_summary},
                   GoStatSink{"", go_stat_json_line, go_stat_json_summary});
}

}  // namespace uscope
