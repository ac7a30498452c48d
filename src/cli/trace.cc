// `uscope trace`: bcc trace's probes (p:, r:, u:) with predicates and printf-style messages, one
// line (or JSON object) per event, from one generic BPF program configured by recipes.
#include <fmt/core.h>

#include <unistd.h>

#include <chrono>
#include <cstring>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <vector>

#include "cli/command.h"
#include "cli/session.h"
#include "collect/event_decoder.h"
#include "collect/overhead_meter.h"
#include "collect/trace_program.h"
#include "sink/overhead_output.h"
#include "sink/trace_output.h"
#include "symbolize/symbolizer.h"
#include "util/output_buffer.h"

namespace uscope::cli {

namespace {

struct TraceCommandOptions {
  SessionOptions session;
  std::vector<std::string> specs;
  bool user_stack = false;
  bool no_move = false;
  uint32_t buffer_kib = 0;
};

// What a session saw and lost, each loss under its own name (the JSON summary's keys).
struct TraceTotals {
  RecipeCounters bpf;         // summed over recipes
  uint64_t printed = 0;       // events formatted for the output
  uint64_t late_strings = 0;  // read from the live process after the event
  uint64_t unreadable_strings = 0;
  uint64_t output_dropped = 0;  // read from the ring but never written out (stop deadline)
};

TraceTotals totals_of(const std::vector<RecipeCounters>& counters) {
  TraceTotals t;
  RecipeCounters& total = t.bpf;
  for (const auto& c : counters) {
    total.hits += c.hits;
    total.emitted += c.emitted;
    total.lost += c.lost;
    total.filtered += c.filtered;
    total.read_errors += c.read_errors;
    total.no_entry += c.no_entry;
    total.entry_save_failed += c.entry_save_failed;
    total.malformed += c.malformed;
    total.stack_failed += c.stack_failed;
    total.truncated += c.truncated;
  }
  return t;
}

std::string json_summary(const TracePlan& plan, const TraceTotals& t, StopReason why,
                         const Overhead& overhead) {
  const RecipeCounters& total = t.bpf;
  nlohmann::json j = {{"kind", "summary"},
                      {"stop", describe(why)},
                      {"events", t.printed},
                      {"lost", total.lost},
                      {"malformed", total.malformed},
                      {"stack_failed", total.stack_failed},
                      {"truncated_strings", total.truncated},
                      {"filtered", total.filtered},
                      {"read_errors", total.read_errors},
                      {"returns_without_entry", total.no_entry},
                      {"late_string_reads", t.late_strings},
                      {"unreadable_strings", t.unreadable_strings},
                      {"output_dropped", t.output_dropped},
                      {"sites", plan.sites.size()},
                      {"overhead", overhead_json(overhead)}};
  return j.dump() + "\n";
}

void print_text_summary(const TraceTotals& t, StopReason why) {
  const RecipeCounters& total = t.bpf;
  fmt::print(stderr, "uscope: {}; {} events printed, {} lost (ring buffer full), {} filtered out",
             describe(why), t.printed, total.lost, total.filtered);
  if (t.output_dropped)
    fmt::print(stderr, ", {} not written (output too slow at the stop)", t.output_dropped);
  if (total.malformed)
    fmt::print(stderr, ", {} dropped as malformed (recipe error or event too big)",
               total.malformed);
  if (total.stack_failed)
    fmt::print(stderr, ", {} without their user stack (capture failed)", total.stack_failed);
  if (total.truncated) fmt::print(stderr, ", {} with a string cut short", total.truncated);
  if (total.read_errors) fmt::print(stderr, ", {} with unreadable memory", total.read_errors);
  if (t.late_strings)
    fmt::print(stderr,
               ", {} strings read from the live process after the event (their page was "
               "not yet touched at the probe)",
               t.late_strings);
  if (t.unreadable_strings) fmt::print(stderr, ", {} strings unreadable", t.unreadable_strings);
  if (total.no_entry) fmt::print(stderr, ", {} returns without a recorded entry", total.no_entry);
  fmt::print(stderr, "\n");
}

// A stop must take effect within ~100 ms: after the detach (tens of ms: the kernel waits for an
// RCU grace period), what the ring buffer holds is read and the output written for at most these.
constexpr auto kStopDrain = std::chrono::milliseconds(20);
constexpr auto kStopFlush = std::chrono::milliseconds(30);
constexpr auto kSummaryFlush = std::chrono::milliseconds(10);
// After the target ended: how long an output that takes nothing is waited for.
constexpr auto kStalledOutput = std::chrono::seconds(1);
// Events per read of the ring buffer: bounds the work between two looks at signals and timers
// (~0.5 ms of formatting).
constexpr size_t kBatchEvents = 512;

int run_trace(const TraceCommandOptions& o) {
  std::vector<ProbeSpec> specs;
  for (const auto& text : o.specs) {
    auto spec = parse_probe_spec(text);
    // The spec with a caret under the column the message names.
    if (!spec) return report_error(caret_message(text, 0, spec.error().message), kExitUsage);
    specs.push_back(std::move(*spec));
  }
  auto session = Session::open(o.session);
  if (!session) return report_error(session.error().message);
  ObjectCache cache((*session)->context());
  TraceOptions topts;
  topts.capture_stack = o.user_stack;
  topts.move_sites = !o.no_move;
  auto plan = plan_trace(cache, specs, topts);
  if (!plan) return report_error(plan.error().message);
  if (o.session.verbose) print_sites(plan->sites, plan->skipped);

  OverheadMeter meter((*session)->watch_pid());
  auto program = TraceProgram::load(plan->recipes, (*session)->watch_pid(), !o.session.no_multi,
                                    o.buffer_kib * 1024, (*session)->launched());
  if (!program) return report_error(program.error().message);
  std::vector<AttachSite> sites;
  for (const auto& s : plan->sites) sites.push_back(s.attach);
  if (auto r = program->attach(sites, plan->skip_refused); !r)
    return report_error((*session)->explain_attach_failure(r.error(), sites).message);
  report_unprobed(*plan, program->refused(), o.session.verbose);
  if (o.session.verbose)
    fmt::print(stderr, "uscope: {} sites attached through {} {}\n", sites.size(),
               program->link_count(), program->uses_multi() ? "uprobe_multi links" : "links");

  OutputBuffer out(STDOUT_FILENO);
  TraceOutput output(*plan,
                     o.session.json ? TraceOutput::Format::JsonLines : TraceOutput::Format::Text,
                     out, o.user_stack);
  Symbolizer symbolizer;
  EventDecoder decoder(*plan);
  DecodedEvent decoded;  // reused from event to event
  std::vector<Frame> frames;
  uint64_t read_events = 0;
  auto limit_reached = [&] {
    return o.session.max_events && output.events() >= o.session.max_events;
  };
  auto on_event = [&](const uscope_event& ev, std::span<const uint8_t> payload) {
    ++read_events;
    if (limit_reached()) return;
    if (!decoder.decode(ev, payload, decoded)) return;  // counted as malformed
    if (o.user_stack) {
      // Symbolizing allocates: -U is not the cheap path.
      frames = symbolizer.symbolize(static_cast<pid_t>(ev.tgid), decoded.user_stack, true);
      output.event(decoded, &frames);
    } else {
      output.event(decoded, nullptr);
    }
  };
  if (auto r = program->open_events(on_event); !r) return report_error(r.error().message);
  output.header();
  if (auto r = (*session)->start(); !r) return report_error(r.error().message);
  meter.start();

  EventLoop::Callbacks cb;
  cb.data_fd = program->events_epoll_fd();
  std::optional<Error> read_error;
  cb.drain = [&] {
    auto r = program->consume(kBatchEvents);
    if (!r) read_error = r.error();
    return r && r->more_pending;
  };
  cb.output = &out;
  // The BPF side batches its wake-ups: read the ring on a timer as well.
  cb.data_poll = std::chrono::milliseconds(TraceProgram::kPollPeriodMs);
  cb.done = [&] {
    meter.sample();
    return read_error || limit_reached();
  };
  StopReason why = (*session)->run(cb);

  // Detach first: nothing new arrives while what was caught is read and written out.
  program->detach();
  using clock = std::chrono::steady_clock;
  // What the ring still holds is read and written out. When the user stopped the session (signal,
  // -d), only within a short deadline, so that the stop takes effect at once; when the target
  // ended, all of it (nothing new can arrive, and a -c user wants every event of the command) for
  // as long as the output keeps taking bytes.
  const bool read_all = why == StopReason::TargetExited || why == StopReason::TargetExeced;
  // Writes what is pending; false when the output took nothing for kStalledOutput.
  auto flush_while_taken = [&] {
    for (;;) {
      size_t before = out.pending();
      if (out.flush_until(clock::now() + kStalledOutput)) return true;
      if (out.failed() || out.pending() >= before) return false;
    }
  };
  auto drain_until = clock::now() + kStopDrain;
  while (why != StopReason::OutputClosed && !limit_reached()) {
    if (!out.has_room() && (!read_all || !flush_while_taken())) break;
    if ((!read_all && clock::now() >= drain_until) || !cb.drain()) break;
  }
  if (read_all)
    flush_while_taken();
  else
    out.flush_until(clock::now() + kStopFlush);
  if (read_error) return report_error(read_error->message);
  auto counters = program->counters();
  if (!counters) return report_error("cannot read the event counters: " + counters.error().message);
  TraceTotals t = totals_of(*counters);
  t.bpf.malformed += decoder.malformed() + program->short_records();
  t.bpf.truncated += decoder.late_truncated();
  t.printed = output.events();
  t.late_strings = decoder.late_strings();
  t.unreadable_strings = decoder.unreadable_strings();
  // Written by the BPF side but never written out: left in the ring buffer at the stop (unless
  // -M said no more), or formatted and still buffered when the output did not take them in time.
  if (why != StopReason::MaxEvents && t.bpf.emitted > read_events)
    t.output_dropped += t.bpf.emitted - read_events;
  uint64_t dropped = output.events_in(out.drop_pending());
  t.output_dropped += dropped;
  t.printed -= dropped;
  std::vector<OverheadSite> costed;
  for (const auto& s : plan->sites)
    costed.push_back(
        overhead_site(s.attach, s.label, s.placement.cost.cost, (*counters)[s.attach.cookie].hits));
  Overhead overhead =
      meter.finish(std::move(costed), program->program_fds(), measured_hit_costs().trace_program_ns,
                   (*session)->reaped_target_cpu_time());
  if (o.session.verbose) print_overhead_sites(overhead, stderr);
  if (o.session.json) {
    // After the events, in the same stream; when even it cannot be written, stderr says it all.
    out.append(json_summary(*plan, t, why, overhead));
    if (out.flush_until(clock::now() + kSummaryFlush)) return kExitOk;
    fmt::print(stderr, "uscope: the JSON summary could not be written to the output in time\n");
  }
  print_text_summary(t, why);
  fmt::print(stderr, "uscope: {}\n", overhead_summary(overhead));
  return kExitOk;
}

}  // namespace

void add_trace_command(CLI::App& app, Run& run) {
  auto opts = std::make_shared<TraceCommandOptions>();
  auto* cmd = app.add_subcommand(
      "trace", "Print an event for every hit of uprobes (p:), return probes (r:) and USDT (u:)");
  cmd->add_option("probe", opts->specs,
                  "'[p|r|u]:[target]:function[+off] [(predicate)] [\"format\"[, args]]'")
      ->required();
  add_session_options(cmd, opts->session, false, true);
  cmd->add_flag("-U,--user-stack", opts->user_stack, "Print the symbolized user stack");
  cmd->add_option("--buffer-kb", opts->buffer_kib,
                  "Ring buffer size in KiB, a power of two (default 1024); events that do not fit "
                  "are counted as lost");
  cmd->add_flag("--no-move", opts->no_move,
                "Always probe a function's first instruction, even when single-stepped");
  cmd->footer(kOverheadHelp);
  cmd->callback([&run, opts] { run = [opts] { return run_trace(*opts); }; });
}

}  // namespace uscope::cli
