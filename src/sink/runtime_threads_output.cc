#include "sink/runtime_threads_output.h"

#include <fmt/core.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "sink/loss_list.h"
#include "sink/wall_clock.h"

namespace uscope {

ThreadsOutput::ThreadsOutput(const Runtime& runtime, const RuntimePlan* plan, OutputFormat format,
                             OutputBuffer& out)
    : runtime_(runtime), plan_(plan), json_(format == OutputFormat::Json), out_(out) {}

void ThreadsOutput::header() {
  realtime_minus_monotonic_ns_ = realtime_minus_monotonic_ns();
  if (!json_)
    out_.append(fmt::format("{:<12}  {:>7}  {:>7}  {:<5}  {:>8}  {:<6}  {}\n", "TIME", "PID", "TID",
                            "EVENT", "ID", "DAEMON", "NAME"));
}

bool ThreadsOutput::event(const DecodedEvent& ev, const EventStacks&) {
  const uint32_t id = ev.header.probe_id;
  if (!plan_ || id >= plan_->probe_of.size() || ev.n_values < 4) return false;
  RuntimeThread t;
  t.name = ev.values[0].text;
  t.id = static_cast<int64_t>(ev.values[1].number);
  t.native = static_cast<uint32_t>(ev.values[2].number);
  t.daemon = ev.values[3].number != 0;
  thread(plan_->probe_of[id]->event == RuntimeEvent::ThreadStart, ev.header.tgid, t, ev.header.ts);
  return true;
}

void ThreadsOutput::thread(bool start, uint32_t pid, const RuntimeThread& t, uint64_t ktime_ns) {
  ++events_;
  if (start)
    ledger_.started(t);
  else
    ledger_.ended(t);
  const int64_t unix_ns = static_cast<int64_t>(ktime_ns) + realtime_minus_monotonic_ns_;
  if (json_) {
    nlohmann::json j = {{"time_unix_ns", unix_ns}, {"pid", pid},
                        {"tid", t.native},         {"event", start ? "start" : "end"},
                        {"name", t.name},          {"runtime", runtime_.name}};
    if (plan_) {  // the runtime's own view of the thread
      j["id"] = t.id;
      j["daemon"] = t.daemon;
    }
    out_.append(j.dump() + "\n");
    return;
  }
  out_.append(fmt::format("{:<12}  {:>7}  {:>7}  {:<5}  {:>8}  {:<6}  {}\n",
                          local_clock_text(unix_ns), pid, t.native, start ? "start" : "end",
                          plan_ ? std::to_string(t.id) : "-",
                          plan_ ? (t.daemon ? "yes" : "no") : "-", t.name));
}

uint64_t ThreadsOutput::events_in(std::string_view bytes) const {
  return static_cast<uint64_t>(std::count(bytes.begin(), bytes.end(), '\n'));
}

std::string ThreadsOutput::summary(const TraceTotals& t, std::string_view stop) const {
  const ThreadLedger& l = ledger_;
  if (json_) {
    nlohmann::json running = nlohmann::json::array();
    for (const auto& [native, th] : l.running())
      running.push_back({{"tid", native}, {"name", th.name}, {"id", th.id}});
    nlohmann::json j = {{"summary",
                         {{"stop", stop},
                          {"runtime", runtime_.name},
                          {"started", l.starts()},
                          {"ended", l.ends()},
                          {"ended_started_before", l.ends_of_older_threads()},
                          {"not_seen_ending", running},
                          {"losses",
                           {{"ring_full", t.lost},
                            {"malformed", t.malformed},
                            {"unreadable", t.read_errors},
                            {"truncated_names", t.truncated},
                            {"not_written", t.output_dropped}}}}}};
    return j.dump() + "\n";
  }
  std::string s = fmt::format("uscope: {}; {} thread(s) of {} started, {} ended", stop, l.starts(),
                              runtime_.title, l.ends());
  if (l.ends_of_older_threads())
    s += fmt::format(" ({} of them started before uscope watched)", l.ends_of_older_threads());
  s += "\n";
  if (!l.running().empty()) {
    s += fmt::format(
        "  started and not seen ending (running at the stop, or ended with the process): {}",
        l.running().size());
    size_t shown = 0;
    for (const auto& [native, th] : l.running()) {
      if (++shown > 10) break;
      s += fmt::format("{} {} ({})", shown == 1 ? ":" : ",", th.name, native);
    }
    s += "\n";
  }
  LossList lost;
  lost.add(t.lost, "events lost (ring buffer full)");
  lost.add(t.malformed, "events malformed");
  lost.add(t.read_errors, "events with unreadable memory");
  lost.add(t.truncated, "names cut short");
  lost.add(t.output_dropped, "events not written (output too slow at the stop)");
  if (!lost.empty()) s += "uscope: " + lost.text() + "\n";
  return s;
}

}  // namespace uscope
