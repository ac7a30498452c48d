#include "cli/count_job.h"

#include <fmt/core.h>

#include <chrono>

namespace uscope::cli {

CountJob::CountJob(Session& session, const SessionOptions& so, const CountPlan& plan,
                   std::function<void(std::vector<CountRow>)> table)
    : session_(session),
      so_(so),
      plan_(plan),
      table_(std::move(table)),
      meter_(session.watch_pid(), so.verbose) {
  for (const auto& s : plan.sites) sites_.push_back(s.attach);
}

Result<void> CountJob::start() {
  auto t0 = std::chrono::steady_clock::now();
  auto counts = HitCounts::attach(sites_, session_.target_filter(), !so_.no_multi, true);
  if (!counts) return tl::unexpected(session_.explain_attach_failure(counts.error(), sites_));
  counts_.emplace(std::move(*counts));
  auto attach_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0);
  size_t unprobeable = plan_.skipped.size() + counts_->refused().size();
  if (so_.verbose)
    for (const auto& r : counts_->refused())
      fmt::print(stderr, "uscope: {} not counted: {}\n", plan_.sites[r.site.cookie].label,
                 r.error.message);
  fmt::print(stderr,
             "uscope: counting {} sites{} (attached in {:.1f} ms through {} {}); Ctrl-C "
             "to stop\n",
             sites_.size() - counts_->refused().size(),
             unprobeable ? fmt::format(", {} unprobeable skipped", unprobeable) : "",
             attach_ms.count(), counts_->link_count(),
             counts_->used_multi() ? "uprobe_multi links" : "links");
  if (auto r = session_.start(); !r) return tl::unexpected(r.error());
  meter_.start();
  return {};
}

void CountJob::emit_table() {
  auto values = counts_->read();
  if (!values) {
    read_error_ = values.error();
    return;
  }
  std::vector<CountRow> rows;
  for (const auto& s : plan_.sites) rows.push_back({s.label, s.object, (*values)[s.attach.cookie]});
  table_(std::move(rows));
}

EventLoop::Callbacks CountJob::callbacks() {
  return table_job_callbacks([this] { emit_table(); }, meter_, read_error_);
}

Result<void> CountJob::stop(StopReason) {
  // The counters are read before the links go: the last table holds every hit.
  if (!read_error_) emit_table();
  counts_->detach();
  if (read_error_) return fail("cannot read the hit counters: {}", read_error_->message);
  return {};
}

std::optional<Overhead> CountJob::overhead() {
  auto hits = counts_->read();
  if (!hits) return std::nullopt;
  auto costed = costed_sites(plan_.sites, [&](uint64_t c) { return (*hits)[c]; });
  return meter_.finish(std::move(costed), counts_->program_fds(),
                       measured_hit_costs().counter_program_ns, session_.reaped_target_cpu_time());
}

}  // namespace uscope::cli
