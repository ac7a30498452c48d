// `uscope http`: Beyla-style RED for Go net/http servers and clients. Every request a line
// (method, URL, status, duration), and at the end a summary per route (count, errors, p50, p90,
// p99). A served request from serverHandler.ServeHTTP's entry to (*response).finishRequest's, a
// client call from (*Client).do's entry to its RETs, planned as trace probes (plan/http_plan.h);
// struct offsets from the binary (DWARF, type descriptors, uscope's table).
#include <fmt/core.h>

#include <memory>
#include <optional>

#include "cli/command.h"
#include "cli/http_job.h"
#include "cli/session.h"
#include "discover/go_types.h"
#include "sink/http_output.h"
#include "util/output_buffer.h"

namespace uscope::cli {

namespace {

struct HttpCommandOptions {
  SessionOptions session;
  bool server_only = false;
  bool client_only = false;
  bool no_move = false;
};

int run_http(const HttpCommandOptions& o) {
  if (!o.session.pid && o.session.command.empty())
    return report_error("uscope http needs a Go program: -p PID or -c 'COMMAND'", kExitUsage);
  if (o.server_only && o.client_only)
    return report_error("--server and --client each leave the other out: give at most one",
                        kExitUsage);
  auto output = open_output(o.session.output);
  if (!output) return output.error();
  auto session = Session::open(o.session);
  if (!session) return report_error(session.error().message);
  ObjectCache cache((*session)->context());
  HttpJob::Options ho;
  ho.plan.server = !o.client_only;
  ho.plan.client = !o.server_only;
  ho.plan.move_sites = !o.no_move;
  ho.use_multi = !o.session.no_multi;
  OutputBuffer out(output->fd());
  const HttpSink sink = http_sink(output->format);
  HttpRed red;
  uint64_t output_dropped = 0;
  auto job = HttpJob::start(**session, cache, ho, [&](HttpExchange& x) {
    x.route = red.add(x);
    if (!out.has_room()) {
      ++output_dropped;
      return;
    }
    out.append(sink.line(x));
  });
  if (!job) return report_error(job.error().message);
  const HttpPlan& plan = (*job)->plan();
  if (o.session.verbose) {
    for (const auto& s : plan.layout.sources)
      fmt::print(stderr, "uscope: {}.{} at offset {} (from {})\n", s.type, s.field, s.offset,
                 go_type_source_name(s.source));
    print_sites(plan.trace.sites, plan.trace.skipped);
  }
  {
    bool server = false, client = false;
    for (auto side : plan.side_of_probe) (side == HttpSide::Server ? server : client) = true;
    fmt::print(stderr, "uscope: watching net/http {}{}{}; Ctrl-C to stop\n",
               server ? "server requests" : "", server && client ? " and " : "",
               client ? "client calls" : "");
  }
  if (!sink.header.empty()) out.append(sink.header);
  if (auto r = (*session)->start(); !r) return report_error(r.error().message);

  std::optional<Error> read_error;
  StopReason why = run_event_session(**session, (*job)->events(), out, read_error);
  if (read_error) return report_error(read_error->message);
  (*job)->stop();  // the last events in, and the counters final (requests left unfinished)
  HttpLosses losses = (*job)->losses();
  losses.output_dropped += output_dropped;
  const std::string stop = describe(why);
  // The summary is what -d asks for: on the output, after the lines.
  out.append(sink.summary(red, losses, stop));
  finish_event_output(why, out);
  return kExitOk;
}

}  // namespace

// What `uscope http --help` ends with; man uscope-http is made from that help, and
// docs/http.md shows the same examples (tests/e2e/help_test.cc checks both).
constexpr const char* kHttpExamples = R"(Examples:
  uscope http -p PID -d 30
      every request a Go net/http program serves or makes, and RED per route at the end
  uscope http -p PID --server
      only the requests it serves
  uscope http -c ./goserver --json -o requests.jsonl
      start a server and write each request as JSON Lines

Reference: docs/http.md)";

void add_http_command(CLI::App& app, Run& run) {
  auto opts = std::make_shared<HttpCommandOptions>();
  auto* cmd = app.add_subcommand(
      "http", "RED of Go net/http servers and clients: every request, and per route at the end");
  add_session_options(cmd, opts->session, false, false);
  cmd->add_flag("--server", opts->server_only, "Only the server side (requests served)");
  cmd->add_flag("--client", opts->client_only, "Only the client side (requests made)");
  cmd->add_flag("--no-move", opts->no_move, "Always probe a function's first instruction");
  cmd->footer(
      "Routes: a path segment counts as '*' once more than 20 distinct values were seen "
      "there after the same segments (/items/1../items/21 -> /items/*; /api/v1/query stays). "
      "Errors: 5xx answers; for clients also calls that failed. "
      "Percentiles within 1.6% (log-linear histogram).");
  add_examples(cmd, kHttpExamples);
  cmd->callback([&run, opts] { run = [opts] { return run_http(*opts); }; });
}

}  // namespace uscope::cli
