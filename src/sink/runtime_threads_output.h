#pragma once
// `uscope threads`' output (bcc's uthreads): a line per thread start and end, as the runtime's
// probes mark them (with the runtime's name and id for it) or, for a runtime without thread
// probes, as the kernel announces them (the thread's kernel name); or a JSON object each; then
// the totals, the threads not seen ending and every loss.
#include <cstdint>
#include <string>
#include <string_view>

#include "model/runtime_threads.h"
#include "model/trace_totals.h"
#include "plan/runtime.h"
#include "sink/event_sink.h"
#include "sink/output_format.h"
#include "util/output_buffer.h"

namespace uscope {

class ThreadsOutput : public SummarizingSink {
 public:
  // `plan`: the probes whose events event() takes; null when thread() is fed from elsewhere.
  ThreadsOutput(const Runtime& runtime, const RuntimePlan* plan, OutputFormat format,
                OutputBuffer& out);
  void header() override;
  bool event(const DecodedEvent& ev, const EventStacks& stacks) override;
  uint64_t events() const override { return events_; }
  uint64_t events_in(std::string_view bytes) const override;  // a line each
  // A thread of process `pid` started or ended at `ktime_ns` (CLOCK_MONOTONIC).
  void thread(bool start, uint32_t pid, const RuntimeThread& t, uint64_t ktime_ns);

  const ThreadLedger& ledger() const { return ledger_; }
  std::string summary(const TraceTotals& t, std::string_view stop) const override;

 private:
  const Runtime& runtime_;
  const RuntimePlan* plan_;
  bool json_;
  OutputBuffer& out_;
  ThreadLedger ledger_;
  int64_t realtime_minus_monotonic_ns_ = 0;
  uint64_t events_ = 0;
};

}  // namespace uscope
