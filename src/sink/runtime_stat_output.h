#pragma once
// `uscope stat` on a managed runtime (bcc's ustat): per interval, what the runtime's cheap probes
// mark: collections and their time, threads started and ended, classes loaded, exceptions
// raised; a column the runtime has no probe for shows "-". Then the totals and every loss.
#include <array>
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "model/runtime_gc.h"
#include "model/trace_totals.h"
#include "plan/runtime.h"
#include "sink/event_sink.h"
#include "sink/output_format.h"
#include "util/output_buffer.h"

namespace uscope {

class RuntimeStatOutput : public SummarizingSink {
 public:
  RuntimeStatOutput(const RuntimePlan& plan, OutputFormat format, OutputBuffer& out);
  void header() override;
  bool event(const DecodedEvent& ev, const EventStacks& stacks) override;
  uint64_t events() const override { return events_; }
  // Interval lines stand for no event each: nothing a stop drops is an event.
  uint64_t events_in(std::string_view) const override { return 0; }
  void interval() override;
  std::string summary(const TraceTotals& t, std::string_view stop) const override;

 private:
  // What an interval (and the whole session) counts.
  struct Tally {
    uint64_t gcs = 0, gc_ns = 0, threads_started = 0, threads_ended = 0, classes = 0,
             exceptions = 0;
    void add(const Tally& o);
  };
  bool has(RuntimeEvent e) const;
  // A tally's JSON keys: gc and gc_ns, and the columns the runtime has probes for.
  nlohmann::json json_of(const Tally& t) const;

  const RuntimePlan& plan_;
  bool json_;
  OutputBuffer& out_;
  GcPairing gc_;
  // Per thread (pid << 32 | tid): GC phases open, and when the outermost began. A runtime's
  // phases nest (Ruby sweeps inside a mark): GC-TIME counts the time any is open, once.
  struct Open {
    uint32_t depth = 0;
    uint64_t since = 0;
  };
  std::map<uint64_t, Open> open_;
  Tally now_, total_;
  uint64_t events_ = 0, intervals_ = 0;
  std::string gc_unit_;  // the collection, or the phase counted as one (Ruby's mark)
};

}  // namespace uscope
