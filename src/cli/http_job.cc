#include "cli/http_job.h"

#include <algorithm>

#include "discover/go_types.h"

namespace uscope::cli {

Result<std::unique_ptr<HttpJob>> HttpJob::start(const Session& session, ObjectCache& cache,
                                                const Options& options, OnExchange on_exchange,
                                                OnTally on_tally) {
  auto plan = plan_http(cache, go_field_lookup(cache), options.plan);
  if (!plan) return tl::unexpected(plan.error());
  std::unique_ptr<HttpJob> job(
      new HttpJob(std::move(*plan), std::move(on_exchange), std::move(on_tally)));
  job->aggregated_ = !options.plan.aggregate_bounds_ns.empty();
  job->buckets_ = options.plan.aggregate_bounds_ns.size() + 1;
  auto program = attach_trace_plan(session, job->plan_.trace, !options.use_multi,
                                   options.ring_bytes, options.aggregate_keys);
  if (!program) return tl::unexpected(program.error());
  job->program_.emplace(std::move(*program));
  if (job->aggregated_) return job;  // nothing is sent on the ring
  HttpJob* self = job.get();
  if (auto r = job->program_->open_events(
          [self](const uscope_event& ev, std::span<const uint8_t> payload) {
            self->on_event(ev, payload);
          });
      !r)
    return tl::unexpected(r.error());
  return job;
}

void HttpJob::on_event(const uscope_event& ev, std::span<const uint8_t> payload) {
  ++events_read_;
  if (!decoder_.decode(ev, payload, decoded_)) return;  // counted as malformed
  if (ev.probe_id >= plan_.side_of_probe.size()) {
    ++not_http_;
    return;
  }
  auto x = http_exchange(plan_.side_of_probe[ev.probe_id], decoded_);
  if (!x) {
    ++not_http_;
    return;
  }
  if (x->status == kHttpStatusUnknown) ++status_unknown_;
  on_exchange_(*x);
}

void HttpJob::harvest() {
  if (!aggregated_ || stopped_ || read_error_) return;
  take(epoch_ ^ 1);  // left at the previous harvest, a beat ago
  epoch_ ^= 1;
  if (auto r = program_->set_epoch(epoch_); !r) read_error_ = r.error();
}

void HttpJob::take(uint32_t epoch) {
  auto rows = program_->take_aggregates(epoch);
  if (!rows) {
    read_error_ = rows.error();
    return;
  }
  for (const AggregateRow& row : *rows) {
    std::optional<HttpExchange> x;
    if (decoder_.decode_key(row, decoded_) && row.slot < plan_.side_of_probe.size())
      x = http_exchange(plan_.side_of_probe[row.slot], decoded_);
    if (!x) {  // the row's calls, malformed
      not_http_ += row.count;
      continue;
    }
    if (x->status == kHttpStatusUnknown) status_unknown_ += row.count;
    if (x->cut) truncated_ += row.count;
    tally_.count = row.count;
    tally_.sum_ns = row.sum;
    tally_.buckets.assign(row.buckets.begin(),
                          row.buckets.begin() + std::min(row.buckets.size(), buckets_));
    on_tally_(*x, tally_);
  }
}

void HttpJob::stop() {
  if (stopped_ || !program_) return;
  stopped_ = true;
  program_->detach();
  if (aggregated_) {
    if (!read_error_) take(epoch_ ^ 1);
    if (!read_error_) take(epoch_);
    return;
  }
  // What the ring still holds: a bounded read, the process is gone or being dropped.
  for (int i = 0; i < 64 && !read_error_; ++i) {
    auto r = program_->consume(kBatchEvents);
    if (!r || !r->more_pending) break;
  }
}

uint64_t HttpJob::unfinished(std::span<const RecipeCounters> c) const {
  // a - b, or 0: per-CPU counters summed while probes run may be a hit apart.
  auto less = [](uint64_t a, uint64_t b) { return a > b ? a - b : 0; };
  uint64_t started = 0, ended = 0, abandoned = 0;
  for (const auto& s : plan_.trace.sites) {
    if (s.attach.cookie >= c.size() || s.probe >= plan_.side_of_probe.size() ||
        plan_.side_of_probe[s.probe] != HttpSide::Server)
      continue;
    const RecipeCounters& r = c[s.attach.cookie];
    if (s.role == SiteRole::SaveEntry)  // recorded (a repeat is a rerun after morestack)
      started += less(r.hits, r.filtered + r.malformed + r.entry_save_failed + r.entry_repeated);
    else if (s.role == SiteRole::Event || s.role == SiteRole::Aggregate)
      ended += less(r.hits, r.no_entry);
    else if (s.role == SiteRole::Abandon)
      abandoned += r.abandoned;
  }
  // While the probes run, a request not yet ended may still end: only those whose goroutine
  // exited are known unfinished. Once stopped, every recorded start that no end took is (still
  // running at the stop, or dropped from the full entry map).
  return stopped_ ? std::max(abandoned, less(started, ended)) : abandoned;
}

HttpLosses HttpJob::losses() const {
  HttpLosses l;
  if (add_program_losses(*program_, decoder_, events_read_, l)) {
    l.malformed += not_http_;
    l.status_unknown = status_unknown_;
    l.truncated += truncated_;
  }
  if (auto c = program_->counters()) l.unfinished = unfinished(*c);
  return l;
}

}  // namespace uscope::cli
