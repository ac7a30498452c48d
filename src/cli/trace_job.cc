#include "cli/trace_job.h"

#include <fmt/core.h>

#include <chrono>
#include <vector>

#include "discover/object_store.h"
#include "discover/unwind_cache.h"

namespace uscope::cli {

namespace {
// After a stop (kStopDrain, session.h, to read the ring), the events are written for at most this.
constexpr auto kTraceStopFlush = std::chrono::milliseconds(30);
}  // namespace

TraceJob::TraceJob(Session& session, const SessionOptions& so, const TracePlan& plan,
                   TraceJobOptions o, EventSink& sink, OutputBuffer& out)
    : session_(session),
      so_(so),
      plan_(plan),
      o_(std::move(o)),
      sink_(sink),
      out_(out),
      symbols_(plan, o_.user_stack, o_.kernel_stack),
      decoder_(plan),
      meter_(session.watch_pid(), so.verbose) {}

Result<void> TraceJob::start() {
  // Before anything attaches: a -p target may exit as soon as its first event is caught.
  if (auto r = symbols_.load_kernel_symbols(); !r) return r;
  if (!session_.launched() && session_.watch_pid() > 0)
    symbols_.remember_process(session_.watch_pid());
  if (auto r = symbols_.follow_exits(session_.watch_pid(), session_.started_as()); !r) return r;

  // -U: stacks walked by CFI in the kernel, through tables loaded for the target.
  if (o_.user_stack) {
    auto u = UnwindMaps::create(ObjectStore::shared(), UnwindCache::open_default());
    if (!u) return tl::unexpected(u.error());
    unwind_ = std::move(*u);
    // A -p target's tables before its probes fire; a -c command's at its exec.
    if (auto r = session_.prepare_unwind(*unwind_, session_.watch_pid()); !r) return r;
  }
  auto program = TraceProgram::load(plan_.recipes, session_.target_filter(), !so_.no_multi,
                                    o_.ring_bytes, 0, unwind_.get());
  if (!program) return tl::unexpected(program.error());
  program_.emplace(std::move(*program));
  if (so_.verbose) fmt::print(stderr, "uscope: {}\n", program_->load_summary());
  std::vector<AttachSite> sites;
  for (const auto& s : plan_.sites) sites.push_back(s.attach);
  if (auto r = program_->attach(sites, plan_.skip_refused); !r)
    return tl::unexpected(session_.explain_attach_failure(r.error(), sites));
  report_unprobed(plan_, program_->refused(), so_.verbose);
  if (so_.verbose)
    fmt::print(stderr, "uscope: {} sites attached through {} {}\n", sites.size(),
               program_->link_count(), program_->uses_multi() ? "uprobe_multi links" : "links");

  if (auto r =
          program_->open_events([this](const uscope_event& ev, std::span<const uint8_t> payload) {
            on_event(ev, payload);
          });
      !r)
    return r;
  if (unwind_) {
    follower_.emplace(*unwind_);
    if (auto r = follower_->listen(*program_->ring()); !r) return r;
  }
  sink_.header();
  if (auto r = session_.start(); !r) return r;
  meter_.start();
  return {};
}

void TraceJob::on_event(const uscope_event& ev, std::span<const uint8_t> payload) {
  ++read_events_;
  if (limit_reached()) return;
  // bcc tests -n in user space too: the kernel has no substring test of comm.
  if (!o_.comm_filter.empty() && !comm_contains(ev, o_.comm_filter)) {
    ++comm_filtered_;
    return;
  }
  if (!decoder_.decode(ev, payload, decoded_)) return;  // counted as malformed
  sink_.event(decoded_, symbols_.resolve(decoded_));
}

bool TraceJob::drain() {
  auto r = program_->consume(kBatchEvents);
  if (!r) read_error_ = r.error();
  bool more = r && r->more_pending;
  if (follower_) follower_->serve();
  return more;
}

EventLoop::Callbacks TraceJob::callbacks() {
  EventLoop::Callbacks cb;
  cb.data_fd = program_->events_epoll_fd();
  cb.drain = [this] { return drain(); };
  cb.data_poll = std::chrono::milliseconds(TraceProgram::kPollPeriodMs);
  cb.output = &out_;
  cb.done = [this] {
    meter_.sample();
    symbols_.catch_up();  // every wake-up: a full ring would lose the exits that matter
    return read_error_ || limit_reached();
  };
  return cb;
}

Result<void> TraceJob::stop(StopReason why) {
  // Detach first: nothing new arrives while what was caught is read and written out.
  program_->detach();
  using clock = std::chrono::steady_clock;
  // What the ring still holds is read and written out. When the user stopped the session (signal,
  // -d), only within a short deadline, so that the stop takes effect at once; when the target
  // ended, all of it (nothing new can arrive, and a -c user wants every event of the command) for
  // as long as the output keeps taking bytes.
  const bool read_all = why == StopReason::TargetExited || why == StopReason::TargetExeced;
  // Writes what is pending; false when the output took nothing for kStalledOutput.
  auto flush_while_taken = [&] {
    for (;;) {
      size_t before = out_.pending();
      if (out_.flush_until(clock::now() + kStalledOutput)) return true;
      if (out_.failed() || out_.pending() >= before) return false;
    }
  };
  auto drain_until = clock::now() + kStopDrain;
  while (why != StopReason::OutputClosed && !limit_reached()) {
    if (!out_.has_room() && (!read_all || !flush_while_taken())) break;
    if ((!read_all && clock::now() >= drain_until) || !drain()) break;
  }
  if (read_all)
    flush_while_taken();
  else
    out_.flush_until(clock::now() + kTraceStopFlush);
  if (read_error_) return tl::unexpected(*read_error_);
  auto counters = program_->counters();
  if (!counters) return fail("cannot read the event counters: {}", counters.error().message);
  const RecipeCounters bpf = sum_of(*counters);
  TraceTotals& t = totals_;
  t.lost = bpf.lost;
  t.malformed = bpf.malformed + decoder_.malformed() + program_->short_records();
  t.stack_failed = bpf.stack_failed;
  t.truncated = bpf.truncated + decoder_.late_truncated();
  t.filtered = bpf.filtered;
  t.read_errors = bpf.read_errors;
  t.no_entry = bpf.no_entry;
  t.printed = sink_.events();
  t.late_strings = decoder_.late_strings();
  t.comm_filtered = comm_filtered_;
  t.message_filtered = sink_.message_filtered();
  t.unreadable_strings = decoder_.unreadable_strings();
  // Written by the BPF side but never written out: left in the ring buffer at the stop (unless
  // -M said no more), or formatted and still buffered when the output did not take them in time.
  if (why != StopReason::MaxEvents && bpf.emitted > read_events_)
    t.output_dropped += bpf.emitted - read_events_;
  uint64_t dropped = sink_.events_in(out_.drop_pending());
  t.output_dropped += dropped;
  t.printed -= dropped;
  auto costed = costed_sites(plan_.sites, [&](uint64_t c) { return (*counters)[c].hits; });
  overhead_ =
      meter_.finish(std::move(costed), program_->program_fds(),
                    measured_hit_costs().trace_program_ns, session_.reaped_target_cpu_time());
  return {};
}

}  // namespace uscope::cli
