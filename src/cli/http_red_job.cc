#include "cli/http_red_job.h"

#include "discover/go_types.h"

namespace uscope::cli {

namespace {
// A process's ring: ~2,500 events, read every agent tick (100 ms): 25,000 requests a second
// before the kernel counts losses, in 256 KiB instead of the CLI's default.
constexpr uint32_t kRingBytes = 256 << 10;
}  // namespace

Result<std::unique_ptr<HttpRedJob>> HttpRedJob::start(const Session& s, ObjectCache& cache,
                                                      size_t max_series) {
  std::unique_ptr<HttpRedJob> job(new HttpRedJob);
  job->metrics_ = HttpMetrics(max_series);
  auto plan = plan_http(cache, go_field_lookup(cache), HttpPlanOptions{});
  if (!plan) return tl::unexpected(plan.error());
  job->plan_.emplace(std::move(*plan));
  const TracePlan& trace = job->plan_->trace;
  auto program = TraceProgram::load(trace.recipes, s.target_filter(), true, kRingBytes);
  if (!program) return tl::unexpected(program.error());
  std::vector<AttachSite> sites;
  for (const auto& site : trace.sites) sites.push_back(site.attach);
  if (auto r = program->attach(sites); !r)
    return tl::unexpected(s.explain_attach_failure(r.error(), sites));
  job->program_.emplace(std::move(*program));
  job->decoder_.emplace(trace);
  HttpRedJob* self = job.get();
  if (auto r = job->program_->open_events(
          [self](const uscope_event& ev, std::span<const uint8_t> payload) {
            self->on_event(ev, payload);
          });
      !r)
    return tl::unexpected(r.error());
  return job;
}

HttpRedJob::~HttpRedJob() {
  stop();
}

void HttpRedJob::on_event(const uscope_event& ev, std::span<const uint8_t> payload) {
  ++events_read_;
  if (!decoder_->decode(ev, payload, decoded_)) return;  // counted as malformed
  if (ev.probe_id >= plan_->side_of_probe.size()) {
    ++not_http_;
    return;
  }
  auto x = http_exchange(plan_->side_of_probe[ev.probe_id], decoded_);
  if (!x) {
    ++not_http_;
    return;
  }
  if (x->status == kHttpStatusUnknown) ++status_unknown_;
  metrics_.add(*x);
}

bool HttpRedJob::drain() {
  if (stopped_ || read_error_) return false;
  auto r = program_->consume(kBatchEvents);
  if (!r) {
    read_error_ = r.error();
    return false;
  }
  return r->more_pending;
}

void HttpRedJob::stop() {
  if (stopped_) return;
  stopped_ = true;
  if (!program_) return;
  program_->detach();
  // What the ring still holds: a bounded read, the process is gone or being dropped.
  for (int i = 0; i < 64 && !read_error_; ++i) {
    auto r = program_->consume(kBatchEvents);
    if (!r || !r->more_pending) break;
  }
}

// The program's counters stay readable after the detach: its maps live until the job goes.
HttpLosses HttpRedJob::losses() const {
  HttpLosses l;
  if (!program_ || !decoder_) return l;
  if (add_program_losses(*program_, *decoder_, events_read_, l)) {
    l.malformed += not_http_;
    l.status_unknown = status_unknown_;
  }
  return l;
}

std::vector<int> HttpRedJob::program_fds() const {
  return program_ ? program_->program_fds() : std::vector<int>{};
}

}  // namespace uscope::cli
