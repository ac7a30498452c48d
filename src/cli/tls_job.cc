#include "cli/tls_job.h"

#include "discover/go_types.h"

namespace uscope::cli {

Result<std::unique_ptr<TlsJob>> TlsJob::plan(const Session& session, ObjectCache& cache,
                                             const Options& options) {
  auto plan = plan_tls(cache, session.context(), go_field_lookup(cache), options.plan);
  if (!plan) return tl::unexpected(plan.error());
  return std::unique_ptr<TlsJob>(new TlsJob(session, std::move(*plan), options.use_multi));
}

Result<void> TlsJob::attach(OnRecord on_record) {
  on_record_ = std::move(on_record);
  auto program = attach_trace_plan(session_, plan_.trace, !use_multi_);
  if (!program) return tl::unexpected(program.error());
  program_.emplace(std::move(*program));
  return program_->open_events(
      [this](const uscope_event& ev, std::span<const uint8_t> payload) { on_event(ev, payload); });
}

void TlsJob::on_event(const uscope_event& ev, std::span<const uint8_t> payload) {
  ++events_read_;
  if (!decoder_.decode(ev, payload, decoded_)) return;  // counted as malformed
  if (ev.probe_id >= plan_.of_probe.size() ||
      !tls_record(plan_.of_probe[ev.probe_id], decoded_, record_)) {
    ++not_tls_;
    return;
  }
  record_.peer = peers_.peer(static_cast<pid_t>(record_.pid), record_.fd);
  totals_.add(record_);
  if (record_.unreadable) ++losses_.unreadable_payloads;
  if (record_.not_captured()) {
    ++losses_.cut_calls;
    losses_.cut_bytes += record_.not_captured();
  }
  on_record_(record_);
}

Result<TlsLosses> TlsJob::losses() const {
  TlsLosses l = losses_;
  if (auto r = add_program_losses(*program_, decoder_, events_read_, l); !r)
    return tl::unexpected(r.error());
  l.malformed += not_tls_;
  return l;
}

}  // namespace uscope::cli
