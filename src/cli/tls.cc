// `uscope tls`: the plaintext a process reads and writes over TLS, as bcc's sslsniff shows it:
// OpenSSL 3 (libssl, or linked into the program) and Go's crypto/tls. Return probes planned as
// trace probes (plan/tls_plan.h): the buffer pointer saved at the entry, read at the return for
// the bytes the call moved; failed calls are dropped in the kernel, their buffer never read.
#include <fmt/core.h>
#include <sys/stat.h>
#include <time.h>

#include <memory>
#include <optional>

#include "cli/command.h"
#include "cli/session.h"
#include "cli/tls_job.h"
#include "model/tls_records.h"
#include "plan/tls_plan.h"
#include "sink/tls_output.h"
#include "util/names.h"
#include "util/output_buffer.h"

namespace uscope::cli {

namespace {

struct TlsCommandOptions {
  SessionOptions session;
  size_t max_bytes = kTlsDefaultMaxBytes;
  bool no_redact = false;
  std::vector<std::string> libraries;
  bool no_move = false;
};

uint64_t monotonic_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000 + static_cast<uint64_t>(ts.tv_nsec);
}

void print_objects(const TlsPlan& plan) {
  for (const auto& o : plan.objects) {
    std::vector<std::string> names;
    for (const auto* f : o.found) names.emplace_back(f->name);
    fmt::print(stderr, "uscope: {} ({}): {}{}{}\n", o.path, o.how, join(names),
               o.missing.empty() ? "" : "; missing: ", join(o.missing));
    if (!o.fd.known) fmt::print(stderr, "uscope: {}: fd unknown: {}\n", o.path, o.fd.why_unknown);
  }
}

int run_tls(const TlsCommandOptions& o) {
  if (!o.session.pid && o.session.command.empty())
    return report_error("uscope tls needs a process: -p PID or -c 'COMMAND'", kExitUsage);
  if (o.max_bytes < 1 || o.max_bytes > kTlsMaxBytesLimit)
    return report_error(
        fmt::format("--max-bytes {}: from 1 to {} bytes per call", o.max_bytes, kTlsMaxBytesLimit),
        kExitUsage);
  auto output = open_output(o.session.output, 0600);
  if (!output) return output.error();
  // A file that existed keeps its mode when truncated: what it will hold is no one else's.
  if (!output->file.is_stdout()) fchmod(output->fd(), 0600);
  auto session = Session::open(o.session);
  if (!session) return report_error(session.error().message);
  ObjectCache cache((*session)->context());
  TlsJob::Options to;
  to.plan.max_bytes = o.max_bytes;
  to.plan.libraries = o.libraries;
  to.plan.move_sites = !o.no_move;
  to.use_multi = !o.session.no_multi;
  auto job = TlsJob::plan(**session, cache, to);
  if (!job) return report_error(job.error().message);
  const TlsPlan& plan = (*job)->plan();
  if (o.session.verbose) {
    print_objects(plan);
    print_sites(plan.trace.sites, plan.trace.skipped);
  }

  OutputBuffer out(output->fd());
  const TlsSink sink = tls_sink(output->format);
  TlsRender render;
  render.start_ns = monotonic_ns();
  render.max_bytes = o.max_bytes;
  render.redact = !o.no_redact;
  uint64_t output_dropped = 0;
  auto attached = (*job)->attach([&](const TlsRecord& record) {
    if (!out.has_room()) {
      ++output_dropped;
      return;
    }
    out.append(sink.line(record, render));
  });
  if (!attached) return report_error(attached.error().message);
  {
    std::vector<std::string> what;
    bool fd_unknown = false;
    for (const auto& obj : plan.objects) {
      what.push_back(fmt::format("{} ({} functions)", obj.path, obj.found.size()));
      fd_unknown |= !obj.fd.known;
    }
    fmt::print(stderr, "uscope: watching TLS in {}{}; Ctrl-C to stop\n", join(what),
               fd_unknown && !o.session.verbose ? " (fd unknown for some: -v says why)" : "");
  }
  if (!sink.header.empty()) out.append(sink.header);
  if (auto r = (*session)->start(); !r) return report_error(r.error().message);

  std::optional<Error> read_error;
  StopReason why = run_event_session(**session, (*job)->events(), out, read_error);
  if (read_error) return report_error(read_error->message);
  auto losses = (*job)->losses();
  if (!losses) return report_error(losses.error().message);
  losses->output_dropped += output_dropped;
  const std::string stop = describe(why);
  out.append(sink.summary((*job)->totals(), *losses, stop));
  finish_event_output(why, out);
  return kExitOk;
}

}  // namespace

// What `uscope tls --help` ends with; man uscope-tls is made from that help, and
// docs/tls.md shows the same examples (tests/e2e/help_test.cc checks both).
constexpr const char* kTlsExamples = R"(Examples:
  uscope tls -p PID
      every TLS read and write of a process, until Ctrl-C or -d
  uscope tls -c 'curl -s https://example.internal/' --json
      a command's TLS plaintext as JSON Lines
  uscope tls -p PID --max-bytes 256 -o capture.jsonl
      at most 256 bytes of each call, to a file created mode 0600
  uscope tls -p PID --lib ssl
      also a libssl the process will dlopen()

Reference: docs/tls.md)";

void add_tls_command(CLI::App& app, Run& run) {
  auto opts = std::make_shared<TlsCommandOptions>();
  auto* cmd = app.add_subcommand(
      "tls", "TLS plaintext: every read and write of OpenSSL 3 and Go crypto/tls, with its bytes");
  add_session_options(cmd, opts->session, false, false);
  cmd->get_option("--output")
      ->description(
          "Write to FILE (created mode 0600: it holds TLS plaintext) instead of "
          "stdout; a .json or .jsonl name means --format json, .txt or .log text");
  cmd->add_option("--max-bytes", opts->max_bytes,
                  fmt::format("Bytes of each call shown (default {}, at most {}); the rest are "
                              "counted",
                              kTlsDefaultMaxBytes, kTlsMaxBytesLimit))
      ->type_name("N");
  cmd->add_flag("--no-redact", opts->no_redact,
                "Show Authorization, Proxy-Authorization, Cookie and Set-Cookie values");
  cmd->add_option("--lib", opts->libraries,
                  "Probe OpenSSL in LIB (a path or a short name: ssl) also when the process has "
                  "not loaded it yet (dlopen)")
      ->type_name("LIB");
  cmd->add_flag("--no-move", opts->no_move, "Always probe a function's first instruction");
  cmd->footer(
      "Text payloads are shown as text, others as hex. A call whose fd cannot be found says "
      "'fd ?' (-v says why); its peer comes from /proc/PID/net/tcp{,6}.");
  add_examples(cmd, kTlsExamples);
  cmd->callback([&run, opts] { run = [opts] { return run_tls(*opts); }; });
}

}  // namespace uscope::cli
