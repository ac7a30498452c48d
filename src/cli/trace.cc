// `uscope trace`: bcc trace's probes (p:, r:, u:) with predicates and printf-style messages, one
// line (or JSON object) per event, from one generic BPF program configured by recipes.
#include <fmt/core.h>

#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <vector>

#include "cli/command.h"
#include "cli/session.h"
#include "collect/event_decoder.h"
#include "collect/trace_program.h"
#include "sink/trace_output.h"
#include "symbolize/symbolizer.h"

namespace uscope::cli {

namespace {

struct TraceCommandOptions {
  SessionOptions session;
  std::vector<std::string> specs;
  bool user_stack = false;
  bool no_move = false;
  uint32_t buffer_kib = 0;
};

void print_summary(const TraceCommandOptions& o, const TracePlan& plan,
                   const std::vector<RecipeCounters>& counters, const TraceOutput& output,
                   const EventDecoder& decoder, StopReason why) {
  uint64_t printed = output.events();
  RecipeCounters total;
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
  total.malformed += decoder.malformed();
  total.truncated += decoder.late_truncated();
  if (o.session.json) {
    nlohmann::json j = {{"kind", "summary"},
                        {"stop", describe(why)},
                        {"events", printed},
                        {"lost", total.lost},
                        {"malformed", total.malformed},
                        {"stack_failed", total.stack_failed},
                        {"truncated_strings", total.truncated},
                        {"filtered", total.filtered},
                        {"read_errors", total.read_errors},
                        {"returns_without_entry", total.no_entry},
                        {"late_string_reads", decoder.late_strings()},
                        {"unreadable_strings", decoder.unreadable_strings()},
                        {"sites", plan.sites.size()}};
    fmt::print("{}\n", j.dump());
    return;
  }
  fmt::print(stderr, "uscope: {}; {} events printed, {} lost (ring buffer full), {} filtered out",
             describe(why), printed, total.lost, total.filtered);
  if (total.malformed)
    fmt::print(stderr, ", {} dropped as malformed (recipe error or event too big)",
               total.malformed);
  if (total.stack_failed)
    fmt::print(stderr, ", {} without their user stack (capture failed)", total.stack_failed);
  if (total.truncated) fmt::print(stderr, ", {} with a string cut short", total.truncated);
  if (total.read_errors) fmt::print(stderr, ", {} with unreadable memory", total.read_errors);
  if (decoder.late_strings())
    fmt::print(stderr,
               ", {} strings read from the live process after the event (their page was "
               "not yet touched at the probe)",
               decoder.late_strings());
  if (decoder.unreadable_strings())
    fmt::print(stderr, ", {} strings unreadable", decoder.unreadable_strings());
  if (total.no_entry) fmt::print(stderr, ", {} returns without a recorded entry", total.no_entry);
  fmt::print(stderr, "\n");
}

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
  if (o.session.verbose) print_sites(plan->sites);

  auto program = TraceProgram::load(plan->recipes, (*session)->watch_pid(), !o.session.no_multi,
                                    o.buffer_kib * 1024, (*session)->launched());
  if (!program) return report_error(program.error().message);
  std::vector<AttachSite> sites;
  for (const auto& s : plan->sites) sites.push_back(s.attach);
  if (auto r = program->attach(sites); !r)
    return report_error((*session)->explain_attach_failure(r.error(), sites).message);
  if (o.session.verbose)
    fmt::print(stderr, "uscope: {} sites attached through {} {}\n", sites.size(),
               program->link_count(), program->uses_multi() ? "uprobe_multi links" : "links");

  TraceOutput output(*plan,
                     o.session.json ? TraceOutput::Format::JsonLines : TraceOutput::Format::Text);
  Symbolizer symbolizer;
  EventDecoder decoder(*plan);
  DecodedEvent decoded;
  auto on_event = [&](const uscope_event& ev, std::span<const uint8_t> payload) {
    if (o.session.max_events && output.events() >= o.session.max_events) return;
    if (!decoder.decode(ev, payload, decoded)) return;  // counted as malformed
    auto data = payload.first(ev.data_len);
    if (o.user_stack) {
      std::vector<Frame> frames =
          symbolizer.symbolize(static_cast<pid_t>(ev.tgid), decoded.user_stack, true);
      output.event(ev, data, &frames);
    } else {
      output.event(ev, data, nullptr);
    }
  };
  if (auto r = program->open_events(on_event); !r) return report_error(r.error().message);
  output.header();
  if (auto r = (*session)->start(); !r) return report_error(r.error().message);

  EventLoop::Callbacks cb;
  cb.data_fd = program->events_epoll_fd();
  // Flushed per batch: a person (or a pipe) sees events as they happen, not at exit.
  // A bounded batch per wake-up (the event loop's rewrite owns the policy; see kPollPeriodMs).
  std::optional<Error> read_error;
  cb.drain = [&] {
    size_t handed = 0;
    for (int round = 0; round < 64; ++round) {
      auto r = program->consume(1024);
      if (!r) {
        read_error = r.error();
        break;
      }
      handed += r->events;
      if (!r->more_pending) break;
    }
    if (handed) std::fflush(stdout);
  };
  cb.done = [&] {
    return read_error || (o.session.max_events && output.events() >= o.session.max_events);
  };
  StopReason why = (*session)->run(cb);
  program->detach();
  if (auto r = program->consume_all(); !r && !read_error) read_error = r.error();
  if (read_error) return report_error(read_error->message);
  auto counters = program->counters();
  if (!counters) {
    std::fflush(stdout);
    return report_error("cannot read the event counters: " + counters.error().message);
  }
  print_summary(o, *plan, *counters, output, decoder, why);
  std::fflush(stdout);
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
  cmd->callback([&run, opts] { run = [opts] { return run_trace(*opts); }; });
}

}  // namespace uscope::cli
