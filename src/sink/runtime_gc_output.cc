#include "sink/runtime_gc_output.h"

#include <fmt/core.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "sink/http_output.h"
#include "sink/loss_list.h"
#include "sink/trace_output.h"
#include "sink/wall_clock.h"

namespace uscope {

GcOutput::GcOutput(const RuntimePlan& plan, OutputFormat format, OutputBuffer& out, uint64_t min_ns)
    : plan_(plan), json_(format == OutputFormat::Json), out_(out), min_ns_(min_ns) {}

void GcOutput::header() {
  realtime_minus_monotonic_ns_ = realtime_minus_monotonic_ns();
  if (!json_)
    out_.append(fmt::format("{:<12}  {:>7}  {:>7}  {:>10}  {:<16}  {}\n", "TIME", "PID", "TID",
                            "DURATION", "KIND", "SAID"));
}

bool GcOutput::event(const DecodedEvent& ev, const EventStacks&) {
  const uint32_t id = ev.header.probe_id;
  if (id >= plan_.probe_of.size()) return false;
  ++events_;
  const RuntimeProbe& p = *plan_.probe_of[id];
  const std::span<const DecodedValue> values(ev.values.data(), ev.n_values);
  std::string says = p.says              ? p.says(values)
                     : p.message.empty() ? ""
                                         : format_message(plan_.trace.probes[id], values);
  const std::string phase(p.phase);
  if (p.event == RuntimeEvent::GcBegin) {
    pairing_.begin(ev.header.tgid, ev.header.tid, phase, ev.header.ts, std::move(says));
    return true;
  }
  if (auto c = pairing_.end(ev.header.tgid, ev.header.tid, phase, ev.header.ts, std::move(says)))
    line(*c);
  return true;
}

void GcOutput::line(const GcCollection& c) {
  if (c.duration_ns() < min_ns_) {
    ++shorter_;
    return;
  }
  const int64_t unix_ns = static_cast<int64_t>(c.begin_ns) + realtime_minus_monotonic_ns_;
  if (json_) {
    nlohmann::json j = {
        {"time_unix_ns", unix_ns},        {"pid", c.pid},   {"tid", c.tid},
        {"duration_ns", c.duration_ns()}, {"kind", c.kind}, {"runtime", plan_.runtime->name}};
    if (!c.phase.empty()) j["phase"] = c.phase;
    if (!c.said.empty()) j["said"] = c.said;
    out_.append(j.dump() + "\n");
    return;
  }
  out_.append(fmt::format("{:<12}  {:>7}  {:>7}  {:>10}  {:<16}  {}\n", local_clock_text(unix_ns),
                          c.pid, c.tid, duration_text(c.duration_ns()), c.kind, c.said));
}

uint64_t GcOutput::events_in(std::string_view bytes) const {
  return 2 * static_cast<uint64_t>(std::count(bytes.begin(), bytes.end(), '\n'));
}

std::string GcOutput::summary(const TraceTotals& t, std::string_view stop) const {
  const GcPairing& p = pairing_;
  if (json_) {
    nlohmann::json kinds = nlohmann::json::object();
    for (const auto& [kind, k] : p.totals())
      kinds[kind] = {{"count", k.count}, {"total_ns", k.total_ns}, {"max_ns", k.max_ns}};
    nlohmann::json j = {{"summary",
                         {{"stop", stop},
                          {"runtime", plan_.runtime->name},
                          {"collections", p.collections()},
                          {"by_kind", kinds},
                          {"shorter_than_minimum", shorter_},
                          {"losses",
                           {{"ring_full", t.lost},
                            {"malformed", t.malformed},
                            {"unreadable", t.read_errors},
                            {"ends_without_begin", p.unmatched_ends()},
                            {"begins_without_end", p.unmatched_begins()},
                            {"open_at_stop", p.open()},
                            {"not_written", t.output_dropped}}}}}};
    return j.dump() + "\n";
  }
  // A runtime that marks phases (Ruby's mark and sweep, several sweeps per collection) is
  // counted in phases: a count of collections would be a guess.
  const bool phases = std::any_of(plan_.probe_of.begin(), plan_.probe_of.end(),
                                  [](const RuntimeProbe* r) { return !r->phase.empty(); });
  std::string s = fmt::format("uscope: {}; {} {} of {}", stop, p.collections(),
                              phases ? "GC phase(s)" : "collection(s)", plan_.runtime->title);
  if (shorter_) s += fmt::format(", {} shorter than -m not shown", shorter_);
  s += "\n";
  for (const auto& [kind, k] : p.totals())
    s += fmt::format("  {:<16} {:>6} times, {} in all, {} on average, {} at most\n", kind, k.count,
                     duration_text(k.total_ns), duration_text(k.total_ns / k.count),
                     duration_text(k.max_ns));
  LossList lost;
  lost.add(t.lost, "events lost (ring buffer full)");
  lost.add(t.malformed, "events malformed");
  lost.add(t.read_errors, "events with unreadable memory");
  lost.add(p.unmatched_ends(), "ends whose begin came before the probes (not counted)");
  lost.add(p.unmatched_begins(), "begins without their end (replaced by the next)");
  lost.add(p.open(), "collections still running at the stop (not counted)");
  lost.add(t.output_dropped, "events not written (output too slow at the stop)");
  if (!lost.empty()) s += "uscope: " + lost.text() + "\n";
  return s;
}

}  // namespace uscope
