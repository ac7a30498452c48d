// `uscope trace`: bcc trace's probes (p:, r:, u:) with predicates and printf-style messages, one
// line (or JSON object) per event, from one generic BPF program configured by recipes.
#include <fmt/core.h>

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <vector>

#include "cli/command.h"
#include "cli/session.h"
#include "cli/trace_options.h"
#include "collect/event_decoder.h"
#include "collect/overhead_meter.h"
#include "collect/trace_program.h"
#include "collect/unwind_follower.h"
#include "discover/object_store.h"
#include "discover/unwind_cache.h"
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
  // bcc trace's options
  BccFilters filters;           // -L, --uid, -Z
  std::string comm_filter;      // -n
  std::string message_filter;   // -f
  bool timestamp = false;       // -t
  bool unix_timestamp = false;  // -u
  bool clock_time = false;      // -T
  bool print_cpu = false;       // -C
  bool addresses = false;       // -a
  bool kernel_stack = false;    // -K
  uint32_t buffer_pages = 0;    // -b
  std::string symbol_files;     // -s
};

// The ring buffer bcc's -b asks for: PAGES per CPU of its perf buffers, as one shared ring.
uint32_t buffer_kib_of_pages(uint32_t pages) {
  uint64_t bytes = uint64_t{pages} * static_cast<uint64_t>(sysconf(_SC_PAGESIZE)) *
                   static_cast<uint64_t>(std::max(1L, sysconf(_SC_NPROCESSORS_ONLN)));
  uint64_t kib = 4;
  while (kib * 1024 < bytes && kib < (uint64_t{1} << 21)) kib *= 2;
  return static_cast<uint32_t>(kib);
}

// bcc's options that need a target or a combination checked before anything starts.
Result<void> check_bcc_options(TraceCommandOptions& o) {
  if (o.unix_timestamp && !o.timestamp)
    return fail("-u prints -t's timestamps since the epoch: add -t");
  if (o.buffer_pages) {
    if (o.buffer_kib) return fail("-b and --buffer-kb both size the ring buffer: give one");
    if (o.buffer_pages & (o.buffer_pages - 1))
      return fail("-b {}: the page count must be a power of two", o.buffer_pages);
    o.buffer_kib = buffer_kib_of_pages(o.buffer_pages);
  }
  // bcc's -s names files for symbolizing stacks of processes gone by then. uscope symbolizes from
  // the process's own mappings (kept after it exits), so the files are only checked to exist.
  for (size_t pos = 0; pos < o.symbol_files.size();) {
    size_t comma = std::min(o.symbol_files.find(',', pos), o.symbol_files.size());
    std::string file = o.symbol_files.substr(pos, comma - pos);
    if (!file.empty() && access(file.c_str(), R_OK) != 0)
      return fail("-s: cannot read {}: {}", file, std::strerror(errno));
    pos = comma + 1;
  }
  if (o.filters.tid) {
    if (!o.session.command.empty())
      return fail("-L {} names a thread that exists now, which -c's command does not yet: use -p",
                  *o.filters.tid);
    auto pid = process_of_thread(*o.filters.tid);
    if (!pid) return tl::unexpected(pid.error());
    if (o.session.pid && o.session.pid != *pid)
      return fail("-L {}: that thread belongs to process {}, not to -p {}", *o.filters.tid, *pid,
                  o.session.pid);
    o.session.pid = *pid;
  }
  return {};
}

TraceColumns columns_of(const TraceCommandOptions& o) {
  TraceColumns c;
  // bcc: -t wins over -T.
  if (o.timestamp)
    c.time = o.unix_timestamp ? TraceColumns::Time::Unix : TraceColumns::Time::SinceStart;
  else if (o.clock_time)
    c.time = TraceColumns::Time::Clock;
  c.cpu = o.print_cpu;
  c.addresses = o.addresses;
  c.stacks = o.user_stack || o.kernel_stack;
  c.message_filter = o.message_filter;
  return c;
}

// What a session saw and lost, each loss under its own name (the JSON summary's keys).
struct TraceTotals {
  RecipeCounters bpf;         // summed over recipes
  uint64_t printed = 0;       // events formatted for the output
  uint64_t late_strings = 0;  // read from the live process after the event
  uint64_t unreadable_strings = 0;
  uint64_t output_dropped = 0;    // read from the ring but never written out (stop deadline)
  uint64_t comm_filtered = 0;     // -n: comm without the name
  uint64_t message_filtered = 0;  // -f: message without the text
};

TraceTotals totals_of(const std::vector<RecipeCounters>& counters) {
  TraceTotals t;
  t.bpf = sum_of(counters);
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
                      {"comm_filtered", t.comm_filtered},
                      {"message_filtered", t.message_filtered},
                      {"sites", plan.sites.size()},
                      {"overhead", overhead_json(overhead)}};
  return j.dump() + "\n";
}

void print_text_summary(const TraceTotals& t, StopReason why) {
  const RecipeCounters& total = t.bpf;
  fmt::print(stderr, "uscope: {}; {} events printed, {} lost (ring buffer full), {} filtered out",
             describe(why), t.printed, total.lost, total.filtered);
  if (t.comm_filtered) fmt::print(stderr, ", {} left out by -n (comm)", t.comm_filtered);
  if (t.message_filtered) fmt::print(stderr, ", {} left out by -f (message)", t.message_filtered);
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

// After a stop (kStopDrain, session.h, to read the ring), the output is written for at most these:
// the events, then the summary.
constexpr auto kTraceStopFlush = std::chrono::milliseconds(30);
constexpr auto kSummaryFlush = std::chrono::milliseconds(10);
int run_trace(TraceCommandOptions o) {
  std::vector<ProbeSpec> specs;
  for (const auto& text : o.specs) {
    auto spec = parse_probe_spec(text);
    // The spec with a caret under the column the message names.
    if (!spec) return report_error(caret_message(text, 0, spec.error().message), kExitUsage);
    specs.push_back(std::move(*spec));
  }
  if (auto r = check_bcc_options(o); !r) return report_error(r.error().message, kExitUsage);
  auto output = open_output(o.session.output);
  if (!output) return output.error();
  if (auto r = apply_filters(specs, o.filters); !r)
    return report_error(r.error().message, kExitUsage);
  auto session = Session::open(o.session);
  if (!session) return report_error(session.error().message);
  ObjectCache cache((*session)->context());
  TraceOptions topts;
  topts.capture_stack = o.user_stack;
  topts.move_sites = !o.no_move;
  topts.kernel_stack = o.kernel_stack;
  auto plan = plan_trace(cache, specs, topts);
  if (!plan) return report_error(plan.error().message);
  announce_plan(**session, cache, plan->sites);
  if (o.session.verbose) {
    print_name_origins(*plan);
    print_sites(plan->sites, plan->skipped);
  }

  // Before anything attaches: a -p target may exit as soon as its first event is caught.
  EventSymbols symbols(*plan, o.user_stack, o.kernel_stack);
  if (auto r = symbols.load_kernel_symbols(); !r) return report_error(r.error().message);
  if (!(*session)->launched() && (*session)->watch_pid() > 0)
    symbols.remember_process((*session)->watch_pid());
  if (auto r = symbols.follow_exits((*session)->watch_pid(), (*session)->started_as()); !r)
    return report_error(r.error().message);

  OverheadMeter meter((*session)->watch_pid(), o.session.verbose);
  // -U: stacks walked by CFI in the kernel, through tables loaded for the target.
  std::unique_ptr<UnwindMaps> unwind;
  if (o.user_stack) {
    auto u = UnwindMaps::create(ObjectStore::shared(), UnwindCache::open_default());
    if (!u) return report_error(u.error().message);
    unwind = std::move(*u);
    // A -p target's tables before its probes fire; a -c command's at its exec.
    pid_t pid = (*session)->watch_pid();
    auto r = (*session)->launched() ? unwind->expect_exec(pid)
             : pid > 0              ? unwind->load_process(pid)
                                    : Result<void>{};
    if (!r) return report_error(r.error().message);
  }
  auto program = TraceProgram::load(plan->recipes, (*session)->target_filter(), !o.session.no_multi,
                                    o.buffer_kib * 1024, 0, unwind.get());
  if (!program) return report_error(program.error().message);
  if (o.session.verbose) fmt::print(stderr, "uscope: {}\n", program->load_summary());
  std::vector<AttachSite> sites;
  for (const auto& s : plan->sites) sites.push_back(s.attach);
  if (auto r = program->attach(sites, plan->skip_refused); !r)
    return report_error((*session)->explain_attach_failure(r.error(), sites).message);
  report_unprobed(*plan, program->refused(), o.session.verbose);
  if (o.session.verbose)
    fmt::print(stderr, "uscope: {} sites attached through {} {}\n", sites.size(),
               program->link_count(), program->uses_multi() ? "uprobe_multi links" : "links");

  OutputBuffer out(output->fd());
  TraceOutput sink(*plan, output->format, out, columns_of(o));
  EventDecoder decoder(*plan);
  uint64_t comm_filtered = 0;
  DecodedEvent decoded;  // reused from event to event
  uint64_t read_events = 0;
  auto limit_reached = [&] {
    return o.session.max_events && sink.events() >= o.session.max_events;
  };
  auto on_event = [&](const uscope_event& ev, std::span<const uint8_t> payload) {
    ++read_events;
    if (limit_reached()) return;
    // bcc tests -n in user space too: the kernel has no substring test of comm.
    if (!o.comm_filter.empty() && !comm_contains(ev, o.comm_filter)) {
      ++comm_filtered;
      return;
    }
    if (!decoder.decode(ev, payload, decoded)) return;  // counted as malformed
    sink.event(decoded, symbols.resolve(decoded));
  };
  if (auto r = program->open_events(on_event); !r) return report_error(r.error().message);
  std::optional<UnwindFollower> follower;
  if (unwind) {
    follower.emplace(*unwind);
    if (auto r = follower->listen(*program->ring()); !r) return report_error(r.error().message);
  }
  sink.header();
  if (auto r = (*session)->start(); !r) return report_error(r.error().message);
  meter.start();

  EventLoop::Callbacks cb;
  std::optional<Error> read_error;
  read_events_in_loop(*program, cb, read_error);
  if (follower)
    cb.drain = [&follower, events = cb.drain] {
      bool more = events();
      follower->serve();
      return more;
    };
  cb.output = &out;
  cb.done = [&] {
    meter.sample();
    symbols.catch_up();  // every wake-up: a full ring would lose the exits that matter
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
    out.flush_until(clock::now() + kTraceStopFlush);
  if (read_error) return report_error(read_error->message);
  auto counters = program->counters();
  if (!counters) return report_error("cannot read the event counters: " + counters.error().message);
  TraceTotals t = totals_of(*counters);
  t.bpf.malformed += decoder.malformed() + program->short_records();
  t.bpf.truncated += decoder.late_truncated();
  t.printed = sink.events();
  t.late_strings = decoder.late_strings();
  t.comm_filtered = comm_filtered;
  t.message_filtered = sink.message_filtered();
  t.unreadable_strings = decoder.unreadable_strings();
  // Written by the BPF side but never written out: left in the ring buffer at the stop (unless
  // -M said no more), or formatted and still buffered when the output did not take them in time.
  if (why != StopReason::MaxEvents && t.bpf.emitted > read_events)
    t.output_dropped += t.bpf.emitted - read_events;
  uint64_t dropped = sink.events_in(out.drop_pending());
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
  if (output->json()) {
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

// What `uscope trace --help` ends with; man uscope-trace is made from that help, and
// docs/trace.md shows the same examples (tests/e2e/help_test.cc checks both).
constexpr const char* kTraceExamples = R"(Examples:
  uscope trace -p PID 'p:c:malloc "size=%d", arg1'
      every malloc() of process PID, with the size it asked for
  uscope trace -p PID 'r:c:malloc "size=%d -> %p", $entry(arg1), retval'
      at each return: the size read at entry, and the pointer returned
  uscope trace -c './server --port 8080' 'p:./server:handle (arg2 > 100) "len=%d", arg2'
      start ./server, print the calls of handle() whose second argument is over 100
  uscope trace -p PID 'p::handle "%s %d", req->path, len'
      parameters and struct members by name, from the binary's DWARF
  uscope trace -p PID 'p:c:str* "%s", arg1'
      a glob: every libc function starting with str is a probe of its own
  uscope trace -p PID 'u:/usr/bin/python3.11:python:function__entry "%s:%s:%d", arg1, arg2, arg3'
      a USDT probe of Python 3.11 (list shows a file's probes)
  uscope trace -T -U -p PID 'c:open "%s", arg1'
      bcc's forms and options: HH:MM:SS, and the user stack of each call
  uscope trace -c ./goapp 'p::main.work "%d %s", i, tag'
      a Go function's parameters by name (docs/GO.md)
  uscope trace -M 10 --json -p PID 'p:c:write "%d", arg3'
      the first 10 events as JSON Lines

Reference: docs/trace.md)";

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
  // bcc trace's options, under bcc's names.
  cmd->add_flag("-t,--timestamp", opts->timestamp,
                "Print a TIME column: seconds since the trace started");
  cmd->add_flag("-u,--unix-timestamp", opts->unix_timestamp,
                "With -t: seconds since the epoch instead");
  cmd->add_flag("-T,--time", opts->clock_time, "Print a TIME column: HH:MM:SS");
  cmd->add_flag("-C,--print_cpu", opts->print_cpu, "Print a CPU column");
  cmd->add_option("-n,--name", opts->comm_filter,
                  "Only events of processes whose name contains NAME");
  cmd->add_option("-f,--msg-filter", opts->message_filter,
                  "Only events whose message contains MSG");
  cmd->add_option("-L,--tid", opts->filters.tid,
                  "Only events of thread TID (tested in the kernel)");
  cmd->add_option("--uid", opts->filters.uid, "Only events of user UID (tested in the kernel)");
  cmd->add_option("-Z,--string-size", opts->filters.string_size,
                  "Read at most this many bytes of each printed string (default 128)");
  cmd->add_flag("-K,--kernel-stack", opts->kernel_stack,
                "Print the kernel stack of each event (empty at a uprobe: it fires in user mode)");
  cmd->add_flag("-a,--address", opts->addresses, "Print addresses beside symbols in stacks");
  cmd->add_option("-b,--buffer-pages", opts->buffer_pages,
                  "bcc's perf buffer pages per CPU: sizes the ring buffer to PAGES x CPUs");
  cmd->add_option("-s,--sym_file_list", opts->symbol_files,
                  "bcc's symbol files (checked only: stacks are symbolized from the process's "
                  "own mappings)");
  cmd->footer(kOverheadHelp);
  add_examples(cmd, kTraceExamples);
  cmd->callback([&run, opts] { run = [opts] { return run_trace(*opts); }; });
}

}  // namespace uscope::cli
