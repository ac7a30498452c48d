#include "model/runtime_stat.h"

namespace uscope {

void RuntimeCounts::add(const RuntimeCounts& o) {
  gcs += o.gcs;
  gc_ns += o.gc_ns;
  threads_started += o.threads_started;
  threads_ended += o.threads_ended;
  classes += o.classes;
  exceptions += o.exceptions;
}

std::string RuntimeCounter::gc_unit_of(const RuntimePlan& plan) {
  for (const RuntimeProbe* p : plan.probe_of)
    if (p->event == RuntimeEvent::GcEnd && !p->phase.empty()) return std::string(p->phase);
  return "";
}

void RuntimeCounter::add(RuntimeEvent event, std::string_view phase_view, uint32_t pid,
                         uint32_t tid, uint64_t ns) {
  const std::string phase(phase_view);
  const uint64_t thread = uint64_t{pid} << 32 | tid;
  switch (event) {
    case RuntimeEvent::GcBegin: {
      const uint64_t replaced = gc_.unmatched_begins();
      gc_.begin(pid, tid, phase, ns, "");
      if (gc_.unmatched_begins() != replaced) break;  // the same phase again: one open, not two
      Open& o = open_[thread];
      if (o.depth++ == 0) o.since = ns;
      break;
    }
    case RuntimeEvent::GcEnd:
      if (gc_.end(pid, tid, phase, ns, "")) {
        if (phase == gc_unit_) ++now_.gcs;
        auto it = open_.find(thread);
        if (it != open_.end() && --it->second.depth == 0) {
          if (ns > it->second.since) now_.gc_ns += ns - it->second.since;
          open_.erase(it);
        }
      }
      break;
    case RuntimeEvent::ThreadStart:
      ++now_.threads_started;
      break;
    case RuntimeEvent::ThreadEnd:
      ++now_.threads_ended;
      break;
    case RuntimeEvent::ClassLoad:
      ++now_.classes;
      break;
    case RuntimeEvent::Exception:
      ++now_.exceptions;
      break;
    default:
      break;
  }
}

bool RuntimeCounter::add(const RuntimePlan& plan, const DecodedEvent& ev) {
  const uint32_t id = ev.header.probe_id;
  if (id >= plan.probe_of.size()) return false;
  const RuntimeProbe& p = *plan.probe_of[id];
  add(p.event, p.phase, ev.header.tgid, ev.header.tid, ev.header.ts);
  return true;
}

RuntimeCounts RuntimeCounter::take() {
  const RuntimeCounts t = now_;
  taken_.add(t);
  now_ = {};
  return t;
}

RuntimeCounts RuntimeCounter::total() const {
  RuntimeCounts t = taken_;
  t.add(now_);
  return t;
}

}  // namespace uscope
