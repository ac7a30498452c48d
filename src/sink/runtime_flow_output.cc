#include "sink/runtime_flow_output.h"

#include <fmt/core.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <vector>

#include "sink/http_output.h"
#include "sink/loss_list.h"
#include "sink/wall_clock.h"
#include "util/names.h"

namespace uscope {

namespace {
constexpr size_t kMaxIndent = 60;  // deeper calls are drawn at this indent (their depth is said)
}  // namespace

std::string call_name(const Runtime& rt, const RuntimeProbe& p,
                      std::span<const DecodedValue> values) {
  if (p.key.empty()) return "";
  const size_t parts = 1 + static_cast<size_t>(std::count(p.key.begin(), p.key.end(), ','));
  std::vector<std::string> names;
  for (size_t i = 0; i < parts && i < values.size(); ++i) {
    const DecodedValue& v = values[i];
    if (!v.is_string)
      names.push_back(fmt::format("{}", v.number));
    else if (v.unreadable)
      names.emplace_back("<unreadable>");
    else
      names.push_back(v.truncated ? v.text + "…" : v.text);
  }
  return runtime_name(rt, names);
}

FlowOutput::FlowOutput(const RuntimePlan& plan, OutputFormat format, OutputBuffer& out,
                       std::string glob)
    : plan_(plan), json_(format == OutputFormat::Json), out_(out), glob_(std::move(glob)) {}

void FlowOutput::header() {
  realtime_minus_monotonic_ns_ = realtime_minus_monotonic_ns();
  if (!json_)
    out_.append(fmt::format("{:<12}  {:>7}  {:>7}  {:>10}  {}\n", "TIME", "PID", "TID", "DURATION",
                            "METHOD"));
}

bool FlowOutput::event(const DecodedEvent& ev, const EventStacks&) {
  const uint32_t id = ev.header.probe_id;
  if (id >= plan_.probe_of.size()) return false;
  const RuntimeProbe& p = *plan_.probe_of[id];
  const std::span<const DecodedValue> values(ev.values.data(), ev.n_values);
  const std::string name = call_name(*plan_.runtime, p, values);
  if (!glob_.empty() && !glob_match(glob_, name)) {
    ++left_out_;
    return false;
  }
  const bool entry = p.event == RuntimeEvent::MethodEntry;
  (entry ? entries_ : returns_)++;
  const int64_t unix_ns = static_cast<int64_t>(ev.header.ts) + realtime_minus_monotonic_ns_;
  const uint32_t depth = ev.header.depth;
  if (json_) {
    nlohmann::json j = {{"kind", entry ? "call" : "return"},
                        {"time_unix_ns", unix_ns},
                        {"pid", ev.header.tgid},
                        {"tid", ev.header.tid},
                        {"depth", depth},
                        {"name", name}};
    if (!entry) j["duration_ns"] = ev.header.duration_ns;
    out_.append(j.dump() + "\n");
    return true;
  }
  const size_t indent = 2 * std::min<size_t>(depth ? depth - 1 : 0, kMaxIndent / 2);
  out_.append(fmt::format("{:<12}  {:>7}  {:>7}  {:>10}  {:{}}{} {}\n", local_clock_text(unix_ns),
                          ev.header.tgid, ev.header.tid,
                          entry ? "" : duration_text(ev.header.duration_ns), "", indent,
                          entry ? "->" : "<-", name));
  return true;
}

uint64_t FlowOutput::events_in(std::string_view bytes) const {
  return static_cast<uint64_t>(std::count(bytes.begin(), bytes.end(), '\n'));
}

std::string FlowOutput::summary(const TraceTotals& t, std::string_view stop) const {
  if (json_) {
    nlohmann::json j = {{"summary",
                         {{"stop", stop},
                          {"runtime", plan_.runtime->name},
                          {"calls", entries_},
                          {"returns", returns_},
                          {"left_out_by_name", left_out_},
                          {"losses",
                           {{"ring_full", t.lost},
                            {"malformed", t.malformed},
                            {"unreadable", t.read_errors},
                            {"returns_without_entry", t.no_entry},
                            {"not_written", t.output_dropped}}}}}};
    return j.dump() + "\n";
  }
  std::string s = fmt::format("uscope: {}; {} calls and {} returns of {} shown", stop, entries_,
                              returns_, plan_.runtime->title);
  if (left_out_) s += fmt::format(", {} not named {}", left_out_, glob_);
  s += "\n";
  LossList lost;
  lost.add(t.lost, "events lost (ring buffer full)");
  lost.add(t.malformed, "events malformed");
  lost.add(t.read_errors, "events with unreadable memory");
  lost.add(t.no_entry, "returns of calls made before the probes (not shown)");
  lost.add(t.output_dropped, "events not written (output too slow at the stop)");
  if (!lost.empty()) s += "uscope: " + lost.text() + "\n";
  return s;
}

}  // namespace uscope
