#include "sink/runtime_stat_output.h"

#include <fmt/core.h>
#include <time.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "sink/http_output.h"
#include "sink/loss_list.h"
#include "sink/wall_clock.h"

namespace uscope {

namespace {

std::string wall_clock_now() {
  timespec rt{};
  clock_gettime(CLOCK_REALTIME, &rt);
  return local_clock_text(rt.tv_sec * 1'000'000'000LL + rt.tv_nsec).substr(0, 8);
}

}  // namespace

RuntimeStatOutput::RuntimeStatOutput(const RuntimePlan& plan, OutputFormat format,
                                     OutputBuffer& out)
    : plan_(plan),
      json_(format == OutputFormat::Json),
      out_(out),
      counter_(RuntimeCounter::gc_unit_of(plan)) {}

nlohmann::json RuntimeStatOutput::json_of(const RuntimeCounts& t) const {
  nlohmann::json j = {{"gc", t.gcs}, {"gc_ns", t.gc_ns}};
  if (plan_.marks(RuntimeEvent::ThreadStart)) j["threads_started"] = t.threads_started;
  if (plan_.marks(RuntimeEvent::ThreadEnd)) j["threads_ended"] = t.threads_ended;
  if (plan_.marks(RuntimeEvent::ClassLoad)) j["classes_loaded"] = t.classes;
  if (plan_.marks(RuntimeEvent::Exception)) j["exceptions"] = t.exceptions;
  return j;
}

void RuntimeStatOutput::header() {
  if (json_) return;
  out_.append(fmt::format("{:<8}  {:>6}  {:>12}  {:>8}  {:>8}  {:>8}  {:>10}\n", "TIME", "GC",
                          "GC-TIME", "THREADS+", "THREADS-", "CLASSES", "EXCEPTIONS"));
}

bool RuntimeStatOutput::event(const DecodedEvent& ev, const EventStacks&) {
  if (!counter_.add(plan_, ev)) return false;
  ++events_;
  return true;
}

void RuntimeStatOutput::interval() {
  ++intervals_;
  const RuntimeCounts t = counter_.take();
  auto column = [&](RuntimeEvent e, uint64_t n) {
    return plan_.marks(e) ? std::to_string(n) : std::string("-");
  };
  if (json_) {
    nlohmann::json j = json_of(t);
    j["time"] = wall_clock_now();
    j["runtime"] = plan_.runtime->name;
    out_.append(j.dump() + "\n");
    return;
  }
  out_.append(fmt::format(
      "{:<8}  {:>6}  {:>12}  {:>8}  {:>8}  {:>8}  {:>10}\n", wall_clock_now(), t.gcs,
      duration_text(t.gc_ns), column(RuntimeEvent::ThreadStart, t.threads_started),
      column(RuntimeEvent::ThreadEnd, t.threads_ended), column(RuntimeEvent::ClassLoad, t.classes),
      column(RuntimeEvent::Exception, t.exceptions)));
}

std::string RuntimeStatOutput::summary(const TraceTotals& t, std::string_view stop) const {
  if (json_) {
    const nlohmann::json totals = json_of(counter_.total());
    nlohmann::json j = {{"summary",
                         {{"stop", stop},
                          {"runtime", plan_.runtime->name},
                          {"intervals", intervals_},
                          {"totals", totals},
                          {"losses",
                           {{"ring_full", t.lost},
                            {"malformed", t.malformed},
                            {"unreadable", t.read_errors},
                            {"gc_ends_without_begin", counter_.gc().unmatched_ends()},
                            {"gc_open_at_stop", counter_.gc().open()}}}}}};
    return j.dump() + "\n";
  }
  const RuntimeCounts total = counter_.total();
  std::string s =
      fmt::format("uscope stat: {}; {} over {} interval(s): {} collection(s) taking {}", stop,
                  plan_.runtime->title, intervals_, total.gcs, duration_text(total.gc_ns));
  if (plan_.marks(RuntimeEvent::ThreadStart))
    s +=
        fmt::format(", {} thread(s) started, {} ended", total.threads_started, total.threads_ended);
  if (plan_.marks(RuntimeEvent::ClassLoad))
    s += fmt::format(", {} class(es) loaded", total.classes);
  if (plan_.marks(RuntimeEvent::Exception)) s += fmt::format(", {} exception(s)", total.exceptions);
  s += "\n";
  LossList lost;
  lost.add(t.lost, "events lost (ring buffer full)");
  lost.add(t.malformed, "events malformed");
  lost.add(t.read_errors, "events with unreadable memory");
  lost.add(counter_.gc().unmatched_ends(), "collections begun before the probes (not counted)");
  lost.add(counter_.gc().open(), "collections running at the stop (not counted)");
  if (!lost.empty()) s += "uscope stat: incomplete: " + lost.text() + "\n";
  return s;
}

}  // namespace uscope
