#include "cli/latency_job.h"

#include <fmt/core.h>

#include <algorithm>

namespace uscope::cli {

LatencyJob::LatencyJob(Session& session, const SessionOptions& so, const LatencyPlan& plan,
                       std::function<void(std::vector<LatencyRow>)> table)
    : session_(session),
      so_(so),
      plan_(plan),
      table_(std::move(table)),
      meter_(session.watch_pid(), so.verbose),
      refused_(plan.functions.size()) {
  for (const auto& s : plan.sites) sites_.push_back(s.attach);
}

Result<void> LatencyJob::start() {
  auto program = TraceProgram::load(plan_.recipes, session_.target_filter(), !so_.no_multi);
  if (!program) return tl::unexpected(program.error());
  program_.emplace(std::move(*program));
  if (auto r = program_->attach(sites_, true); !r)
    return tl::unexpected(session_.explain_attach_failure(r.error(), sites_));
  // A function with either half refused cannot be timed: leave it out and say so.
  for (const auto& r : program_->refused()) {
    const PlannedSite& s = plan_.sites[r.site.cookie];
    refused_[s.probe] = true;
    fmt::print(stderr, "uscope: {} not timed: {}\n", s.label, r.error.message);
  }
  fmt::print(stderr, "uscope: timing {} functions; Ctrl-C to stop\n",
             std::count(refused_.begin(), refused_.end(), false));
  if (auto r = session_.start(); !r) return tl::unexpected(r.error());
  meter_.start();
  return {};
}

void LatencyJob::emit_table() {
  auto counters = program_->counters();
  if (!counters) {
    read_error_ = counters.error();
    return;
  }
  std::vector<LatencyRow> rows;
  for (uint32_t k = 0; k < plan_.functions.size(); ++k) {
    const auto& f = plan_.functions[k];
    const auto& entry = (*counters)[f.entry_cookie];
    // Go functions return through several RET sites: their counters and histograms add up.
    uint64_t ret_hits = 0, matched = 0, no_entry = 0;
    std::vector<uint64_t> hist;
    for (uint64_t cookie : f.return_cookies) {
      const auto& ret = (*counters)[cookie];
      ret_hits += ret.hits;
      matched += ret.matched;
      no_entry += ret.no_entry;
      auto h = program_->histogram(static_cast<uint32_t>(cookie));
      if (!h) {
        read_error_ = h.error();
        return;
      }
      if (hist.size() < h->size()) hist.resize(h->size());
      for (size_t i = 0; i < h->size(); ++i) hist[i] += (*h)[i];
    }
    if (refused_[k] || (entry.hits == 0 && ret_hits == 0)) continue;
    rows.push_back({f.label, f.object, std::move(hist), entry.hits, matched, no_entry,
                    entry.entry_repeated, entry.entry_save_failed});
  }
  table_(std::move(rows));
}

EventLoop::Callbacks LatencyJob::callbacks() {
  return table_job_callbacks([this] { emit_table(); }, meter_, read_error_);
}

Result<void> LatencyJob::stop(StopReason) {
  program_->detach();
  if (!read_error_) emit_table();
  if (read_error_) return fail("cannot read the latency counters: {}", read_error_->message);
  return {};
}

std::optional<Overhead> LatencyJob::overhead() {
  return trace_program_overhead(*program_, plan_.sites, meter_, session_);
}

}  // namespace uscope::cli
