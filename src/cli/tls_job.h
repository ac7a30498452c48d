#pragma once
// The TLS calls of one process, as `uscope tls` reads them: the probes of plan/tls_plan.h attached
// to the session's target, each event decoded into a TlsRecord with its peer, counted into the
// totals and handed to the caller (`tls` prints it), with every loss counted.
#include <functional>
#include <memory>
#include <optional>

#include "cli/session.h"
#include "collect/event_decoder.h"
#include "collect/tls_peers.h"
#include "collect/trace_program.h"
#include "model/tls_records.h"
#include "plan/tls_plan.h"

namespace uscope::cli {

class TlsJob {
 public:
  struct Options {
    TlsPlanOptions plan;
    bool use_multi = true;
  };
  using OnRecord = std::function<void(const TlsRecord&)>;
  // Plans the probes of the session's target (nothing attached yet).
  static Result<std::unique_ptr<TlsJob>> plan(const Session& session, ObjectCache& cache,
                                              const Options& options);
  TlsJob(const TlsJob&) = delete;
  TlsJob& operator=(const TlsJob&) = delete;

  const TlsPlan& plan() const { return plan_; }
  // Attaches the probes; events are read by the session's loop (events() with
  // run_event_session), each record handed to `on_record`.
  Result<void> attach(OnRecord on_record);
  TraceProgram& events() { return *program_; }
  const TlsTotals& totals() const { return totals_; }
  // Losses so far by cause (the program's counters, which stay readable after the detach, and
  // what the reader could not use); an error when the counters cannot be read.
  Result<TlsLosses> losses() const;

 private:
  TlsJob(const Session& session, TlsPlan plan, bool use_multi)
      : session_(session), plan_(std::move(plan)), decoder_(plan_.trace), use_multi_(use_multi) {}
  void on_event(const uscope_event& ev, std::span<const uint8_t> payload);

  const Session& session_;
  TlsPlan plan_;
  EventDecoder decoder_;
  bool use_multi_;
  OnRecord on_record_;
  std::optional<TraceProgram> program_;
  TlsPeers peers_;
  TlsTotals totals_;
  TlsLosses losses_;  // what the reader counts: unreadable payloads, calls cut short
  DecodedEvent decoded_;
  TlsRecord record_;
  uint64_t events_read_ = 0, not_tls_ = 0;
};

}  // namespace uscope::cli
