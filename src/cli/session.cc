#include "cli/session.h"

#include <fmt/core.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>

#include "attach/attach_race.h"
#include "attach/bpf_features.h"
#include "discover/library_names.h"
#include "plan/probe_notes.h"

namespace uscope::cli {

void add_session_options(CLI::App* cmd, SessionOptions& o, bool with_interval,
                         bool with_max_events) {
  cmd->add_option("-p,--pid", o.pid,
                  "Trace only process PID (all its threads; processes it forks are not traced)");
  cmd->add_option("-c,--command", o.command,
                  "Start CMD (quoted, with its arguments) as a shell would, trace it from its "
                  "first instruction (not the processes it forks), stop when it exits");
  cmd->add_option("-d,--duration", o.duration_s, "Stop after SECONDS")->check(CLI::PositiveNumber);
  if (with_interval)
    cmd->add_option("-i,--interval", o.interval_s, "Print the summary every SECONDS")
        ->check(CLI::PositiveNumber);
  if (with_max_events) cmd->add_option("-M,--max-events", o.max_events, "Stop after N events");
  add_output_options(cmd, o.output, "JSON Lines");
  cmd->add_flag("-v,--verbose", o.verbose, "Show every attach site and what it costs per hit");
  cmd->add_flag("--no-multi", o.no_multi, "Attach one link per site, not uprobe_multi links");
}

namespace {

Result<void> check_capabilities(const SessionOptions& o) {
  bool other_user = false;
  if (o.pid > 0) {
    struct stat st {};
    if (stat(fmt::format("/proc/{}", o.pid).c_str(), &st) == 0) other_user = st.st_uid != geteuid();
  }
  return require_tracing_capabilities(other_user);
}

}  // namespace

Result<std::vector<ProbeSpec>> parse_patterns(const std::vector<std::string>& texts) {
  std::vector<ProbeSpec> out;
  for (const auto& text : texts) {
    auto p = parse_probe_pattern(text);
    if (!p) return fail("pattern '{}': {}", text, p.error().message);
    out.push_back(std::move(*p));
  }
  return out;
}

Result<std::unique_ptr<Session>> Session::open(const SessionOptions& o, Runner* shared) {
  if (o.pid > 0 && !o.command.empty()) return fail("give -p PID or -c CMD, not both");
  if (auto r = check_capabilities(o); !r) return tl::unexpected(r.error());
  std::unique_ptr<Session> s(new Session);
  EventLoopOptions lo;
  if (o.pid > 0) {
    auto p = Process::open(o.pid);
    if (!p) return tl::unexpected(p.error());
    s->process_ = std::move(*p);
    s->context_.process = &*s->process_;
    s->context_.pid = o.pid;
    // The executable the plan is made for: an exec before the loop starts still ends the session.
    lo.exe_dev = s->process_->exe().dev;
    lo.exe_ino = s->process_->exe().ino;
  } else if (!o.command.empty()) {
    auto c = LaunchedCommand::prepare(o.command);
    if (!c) return tl::unexpected(c.error());
    s->command_ = std::move(*c);
    s->command_text_ = o.command;
    s->context_.main_executable = s->command_->executable();
    s->context_.pid = s->command_->pid();
    lo.watch_is_child = true;
    struct stat st {};
    if (stat(s->command_->executable().c_str(), &st) == 0) {
      lo.exe_dev = st.st_dev;
      lo.exe_ino = st.st_ino;
    }
  }
  lo.watch_pid = s->context_.pid;
  lo.runner = shared;
  lo.check_exec = shared == nullptr;
  if (o.duration_s > 0) lo.duration = std::chrono::duration<double>(o.duration_s);
  if (o.interval_s > 0) lo.interval = std::chrono::duration<double>(o.interval_s);
  auto loop = EventLoop::create(lo);
  if (!loop) return tl::unexpected(loop.error());
  s->loop_.emplace(std::move(*loop));
  return s;
}

Error Session::explain_attach_failure(const Error& failure,
                                      std::span<const AttachSite> sites) const {
  // A launched command runs uscope's image until released: only its exit can explain anything.
  ExeIdentity planned = process_ ? process_->exe() : ExeIdentity{};
  return uscope::explain_attach_failure(failure, context_.pid, planned, sites);
}

std::optional<std::string> Session::command_line() const {
  if (command_) return command_text_;
  if (process_) return process_command_line(process_->pid());
  return std::nullopt;
}

void announce_plan(const Session& session, const ObjectCache& cache,
                   std::span<const PlannedSite> sites) {
  for (const PlannedObject* o : cache.not_mapped())
    fmt::print(stderr, "uscope: {} does not map {} yet: its probes wait for it\n",
               session.watch_pid(), o->ref.display_path);
  const std::string who = session.launched()
                              ? std::string("the -c command line")
                              : fmt::format("the command line of process {}", session.watch_pid());
  for (const auto& note : probe_notes(sites, session.command_line(), who))
    fmt::print(stderr, "uscope: {}\n", note);
}

Result<void> Session::start() {
  return command_ ? command_->release() : Result<void>{};
}

StopReason Session::run(const EventLoop::Callbacks& cb) {
  StopReason why = loop_->run(cb);
  // The loop reaped the command if it exited; then there is nothing left to terminate.
  if (loop_->child_status() && command_) command_->mark_reaped();
  return why;
}

bool append_printed(OutputBuffer& out, const std::function<void(std::FILE*)>& print) {
  if (!out.has_room()) return false;
  char* text = nullptr;
  size_t len = 0;
  std::FILE* mem = open_memstream(&text, &len);
  if (!mem) return false;
  print(mem);
  std::fclose(mem);
  out.append(std::string_view(text, len));
  std::free(text);
  return true;
}

void finish_output(OutputBuffer& out, uint64_t tables_not_written) {
  constexpr auto kFinalFlush = std::chrono::milliseconds(100);
  bool written = out.flush_until(std::chrono::steady_clock::now() + kFinalFlush);
  if (!written) out.drop_pending();
  if (!written || tables_not_written)
    fmt::print(stderr, "uscope: {} table(s) not written: the output did not take them\n",
               tables_not_written + !written);
}

namespace {
// Writing the lines after a stop (the target still running): at most this long.
constexpr auto kStopFlush = std::chrono::milliseconds(50);
bool target_ended(StopReason why) {
  return why == StopReason::TargetExited || why == StopReason::TargetExeced;
}
}  // namespace

Result<TraceProgram> attach_trace_plan(const Session& session, const TracePlan& plan, bool no_multi,
                                       uint32_t ring_bytes, uint32_t agg_keys) {
  auto program =
      TraceProgram::load(plan.recipes, session.target_filter(), !no_multi, ring_bytes, agg_keys);
  if (!program) return tl::unexpected(program.error());
  std::vector<AttachSite> sites;
  for (const auto& s : plan.sites) sites.push_back(s.attach);
  if (auto r = program->attach(sites); !r)
    return tl::unexpected(session.explain_attach_failure(r.error(), sites));
  return program;
}

StopReason run_event_session(Session& session, TraceProgram& program, OutputBuffer& out,
                             std::optional<Error>& read_error) {
  EventLoop::Callbacks cb;
  read_events_in_loop(program, cb, read_error);
  cb.output = &out;
  cb.done = [&] { return read_error.has_value(); };
  StopReason why = session.run(cb);
  program.detach();
  using clock = std::chrono::steady_clock;
  const bool read_all = target_ended(why);
  auto drain_until = clock::now() + kStopDrain;
  while (why != StopReason::OutputClosed) {
    if (!out.has_room() && !out.flush_until(clock::now() + kStalledOutput)) break;
    if ((!read_all && clock::now() >= drain_until) || !cb.drain()) break;
  }
  return why;
}

Result<void> add_program_losses(const TraceProgram& program, const EventDecoder& decoder,
                                uint64_t events_read, EventLosses& l) {
  auto counters = program.counters();
  if (!counters) return fail("cannot read the event counters: {}", counters.error().message);
  const RecipeCounters c = sum_of(*counters);
  l.ring_lost += c.lost;
  l.read_errors += c.read_errors;
  l.no_entry += c.no_entry;
  l.entry_save_failed += c.entry_save_failed;
  l.malformed += c.malformed;
  l.truncated += c.truncated;
  l.agg_full += c.agg_full;
  l.filtered += c.filtered;
  l.malformed += decoder.malformed() + program.short_records();
  if (c.emitted > events_read) l.output_dropped += c.emitted - events_read;
  return {};
}

void finish_event_output(StopReason why, OutputBuffer& out) {
  using clock = std::chrono::steady_clock;
  if (target_ended(why))
    while (out.pending() && out.flush_until(clock::now() + kStalledOutput)) {
    }
  else
    out.flush_until(clock::now() + kStopFlush);
  if (out.pending()) {
    uint64_t lines = 0;
    for (char c : out.drop_pending()) lines += c == '\n';
    fmt::print(stderr, "uscope: {} lines not written (the output did not take them in time)\n",
               lines);
  }
}

void read_events_in_loop(TraceProgram& program, EventLoop::Callbacks& cb,
                         std::optional<Error>& read_error) {
  cb.data_fd = program.events_epoll_fd();
  cb.drain = [&program, &read_error] {
    auto r = program.consume(kBatchEvents);
    if (!r) read_error = r.error();
    return r && r->more_pending;
  };
  cb.data_poll = std::chrono::milliseconds(TraceProgram::kPollPeriodMs);
}

void print_sites(std::span<const PlannedSite> sites, std::span<const SkippedSite> skipped) {
  for (const auto& s : sites) {
    const auto& p = s.placement;
    fmt::print(stderr, "site {:<28} {:<6} {} @ {:#x}  {} ({}){}{}{}\n", s.label,
               s.attach.retprobe ? "return" : "entry", s.object, s.attach.offset,
               site_cost_name(p.cost.cost), p.cost.insn, p.note.empty() ? "" : ": ", p.note,
               s.role == SiteRole::Event ? "" : fmt::format(" [{}]", site_role_name(s.role)));
  }
  for (const auto& s : skipped)
    fmt::print(stderr, "site {:<28} {:<6} {}  not probed: {}\n", s.label, "-", s.object, s.why);
}

void print_name_origins(const TracePlan& plan) {
  for (const auto& p : plan.probes)
    for (const auto& n : p.names)
      fmt::print(stderr, "uscope: {}: {} {}, from {}\n", p.label, n.name, n.where, n.source);
}

void report_unprobed(const TracePlan& plan, std::span<const UprobeLinks::Refused> refused,
                     bool verbose) {
  if (verbose)
    for (const auto& r : refused)
      fmt::print(stderr, "uscope: {} not probed: {}\n", plan.sites[r.site.cookie].label,
                 r.error.message);
  size_t n = plan.skipped.size() + refused.size();
  if (n == 0) return;
  fmt::print(stderr,
             "uscope: {} function(s) matched by a glob not probed: the kernel cannot probe {}{}\n",
             n, n == 1 ? "its site" : "their sites", verbose ? "" : " (-v names them)");
}

Result<void> Session::prepare_unwind(UnwindMaps& maps, pid_t pid) const {
  if (launched()) return maps.expect_exec(pid, startup_files(context_.main_executable));
  if (pid > 0) return maps.load_process(pid);
  return {};
}

}  // namespace uscope::cli
