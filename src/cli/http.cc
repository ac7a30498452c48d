// `uscope http`: Beyla-style RED for Go net/http servers and clients. Every request a line
// (method, URL, status, duration), and at the end a summary per route (count, errors, p50, p90,
// p99). A served request from serverHandler.ServeHTTP's entry to (*response).finishRequest's, a
// client call from (*Client).do's entry to its RETs, planned as trace probes (plan/http_plan.h);
// struct offsets from the binary (DWARF, type descriptors, uscope's table).
#include <fmt/core.h>

#include <memory>
#include <optional>

#include "cli/command.h"
#include "cli/session.h"
#include "collect/event_decoder.h"
#include "collect/trace_program.h"
#include "discover/go_types.h"
#include "model/http_red.h"
#include "plan/http_plan.h"
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
  HttpPlanOptions popts;
  popts.server = !o.client_only;
  popts.client = !o.server_only;
  popts.move_sites = !o.no_move;
  auto plan = plan_http(cache, go_field_lookup(cache), popts);
  if (!plan) return report_error(plan.error().message);
  if (o.session.verbose) {
    for (const auto& s : plan->layout.sources)
      fmt::print(stderr, "uscope: {}.{} at offset {} (from {})\n", s.type, s.field, s.offset,
                 go_type_source_name(s.source));
    print_sites(plan->trace.sites, plan->trace.skipped);
  }

  auto program = attach_trace_plan(**session, plan->trace, o.session.no_multi);
  if (!program) return report_error(program.error().message);
  {
    bool server = false, client = false;
    for (auto side : plan->side_of_probe) (side == HttpSide::Server ? server : client) = true;
    fmt::print(stderr, "uscope: watching net/http {}{}{}; Ctrl-C to stop\n",
               server ? "server requests" : "", server && client ? " and " : "",
               client ? "client calls" : "");
  }

  OutputBuffer out(output->fd());
  const HttpSink sink = http_sink(output->format);
  EventDecoder decoder(plan->trace);
  HttpRed red;
  DecodedEvent decoded;
  uint64_t read_events = 0, output_dropped = 0, not_http = 0, status_unknown = 0;
  auto on_event = [&](const uscope_event& ev, std::span<const uint8_t> payload) {
    ++read_events;
    if (!decoder.decode(ev, payload, decoded)) return;  // counted as malformed
    if (ev.probe_id >= plan->side_of_probe.size()) {
      ++not_http;
      return;
    }
    auto x = http_exchange(plan->side_of_probe[ev.probe_id], decoded);
    if (!x) {
      ++not_http;
      return;
    }
    x->route = red.add(*x);
    if (x->status == kHttpStatusUnknown) ++status_unknown;
    if (!out.has_room()) {
      ++output_dropped;
      return;
    }
    out.append(sink.line(*x));
  };
  if (auto r = program->open_events(on_event); !r) return report_error(r.error().message);
  if (!sink.header.empty()) out.append(sink.header);
  if (auto r = (*session)->start(); !r) return report_error(r.error().message);

  std::optional<Error> read_error;
  StopReason why = run_event_session(**session, *program, out, read_error);
  if (read_error) return report_error(read_error->message);
  HttpLosses losses;
  if (auto r = add_program_losses(*program, decoder, read_events, losses); !r)
    return report_error(r.error().message);
  losses.malformed += not_http;
  losses.output_dropped += output_dropped;
  losses.status_unknown = status_unknown;
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
