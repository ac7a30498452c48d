// `uscope trace`: bcc trace's probes (p:, r:, u:) with predicates and printf-style messages, one
// line (or JSON object) per event, from one generic BPF program configured by recipes.
#include <fmt/core.h>

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <memory>
#include <vector>

#include "cli/command.h"
#include "cli/session.h"
#include "cli/trace_job.h"
#include "cli/trace_options.h"
#include "sink/overhead_output.h"
#include "sink/trace_output.h"
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

// The summary is written after the events for at most this.
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

  OutputBuffer out(output->fd());
  TraceOutput sink(*plan, output->format, out, columns_of(o));
  TraceJob job(**session, o.session, *plan,
               {.user_stack = o.user_stack,
                .kernel_stack = o.kernel_stack,
                .ring_bytes = o.buffer_kib * 1024,
                .comm_filter = o.comm_filter},
               sink, out);
  if (auto r = job.start(); !r) return report_error(r.error().message);
  StopReason why = (*session)->run(job.callbacks());
  if (auto r = job.stop(why); !r) return report_error(r.error().message);
  const Overhead overhead = *job.overhead();
  if (o.session.verbose) print_overhead_sites(overhead, stderr);
  // JSON's summary after the events, in the same stream; when even it cannot be written, or in
  // text, stderr says it all.
  if (auto summary = sink.summary(job.totals(), plan->sites.size(), describe(why), overhead);
      !summary.empty()) {
    out.append(summary);
    if (out.flush_until(std::chrono::steady_clock::now() + kSummaryFlush)) return kExitOk;
    fmt::print(stderr, "uscope: the JSON summary could not be written to the output in time\n");
  }
  fmt::print(stderr, "{}", trace_text_summary(job.totals(), describe(why)));
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
