#include "plan/http_plan.h"

#include <fmt/core.h>

#include <algorithm>
#include <span>
#include <utility>

#include "plan/expr_build.h"
#include "plan/keyed_plan.h"
#include "plan/site_match.h"

namespace uscope {

using expr::add_arg;
using expr::at_entry;
using expr::binary;
using expr::go_string_at;
using expr::integer;
using expr::reg;

namespace {

// The 8-byte word at `base` + `offset`.
Expr word_at(Expr base, uint64_t offset) {
  return expr::load(std::move(base), offset);
}

// Key bytes an aggregated method and scheme keep (a longer one is cut, counted as truncated).
constexpr int64_t kMethodBytes = 16, kSchemeBytes = 8;

// The n-th field a recipe emits (fields are emitted in order, one op each).
uscope_op* emitted_field(uscope_recipe& r, size_t n) {
  for (uint32_t i = 0; i < r.n_ops; ++i) {
    const uint8_t c = r.ops[i].code;
    if (c == TOP_EMIT || c == TOP_EMIT_STR || c == TOP_EMIT_COMM || c == TOP_EMIT_GOIFACE)
      if (n-- == 0) return &r.ops[i];
  }
  return nullptr;
}

}  // namespace

Result<HttpLayout> http_layout(const GoFieldLookup& lookup, bool server, bool client, bool http2) {
  HttpLayout l;
  auto place = [&](const char* type, const char* field, uint64_t& out) -> Result<void> {
    auto f = lookup(type, field);
    if (!f)
      return fail("cannot place {}.{}, which uscope http reads: {}", type, field,
                  f.error().message);
    out = f->offset;
    l.sources.push_back({type, field, f->offset, f->source});
    return {};
  };
  struct Need {
    bool wanted;
    const char* type;
    const char* field;
    uint64_t* out;
  };
  const Need needs[] = {
      {true, "net/http.Request", "Method", &l.request_method},
      {true, "net/http.Request", "URL", &l.request_url},
      {client, "net/url.URL", "Scheme", &l.url_scheme},
      {client, "net/url.URL", "Host", &l.url_host},
      {true, "net/url.URL", "Path", &l.url_path},
      {server, "net/http.response", "status", &l.response_status},
      {server, "net/http.response", "req", &l.response_req},
      {client, "net/http.Response", "StatusCode", &l.client_status},
      {server, "net/http.Request", "ProtoMajor", &l.request_proto_major},
      {server, "net/http.Request", "ProtoMinor", &l.request_proto_minor},
      {server && http2, "net/http.http2responseWriter", "rws", &l.h2_writer_state},
      {server && http2, "net/http.http2responseWriterState", "req", &l.h2_state_req},
      {server && http2, "net/http.http2responseWriterState", "status", &l.h2_state_status},
  };
  for (const auto& n : needs)
    if (n.wanted)
      if (auto r = place(n.type, n.field, *n.out); !r) return tl::unexpected(r.error());
  return l;
}

ProbeSpec http_probe(HttpSide side, const HttpLayout& l, const HttpSides& sides) {
  ProbeSpec spec;
  spec.kind = ProbeKind::Return;
  // Go register ABI (calling_convention.h): serverHandler.ServeHTTP(sh RAX, rw RBX/RCX, req RDI);
  // (*response).finishRequest(w RAX); (*http2responseWriter).handlerDone(w RAX);
  // (*Client).do(c RAX, req RBX) returning (*Response RAX, error RBX/RCX).
  const bool server = side == HttpSide::Server;
  spec.function = server ? kHttpServerFunction : kHttpClientFunction;
  const bool end_entry = server && sides.server_end_entry;
  if (end_entry) {
    spec.ends_at.emplace_back(kHttpServerEnd);
    if (sides.http2_end_entry) spec.ends_at.emplace_back(kHttp2ServerEnd);
    spec.one_per_goroutine = true;
    spec.abandoned_at = sides.abandon_at;
  }
  spec.text = fmt::format("http {} probe on {}", server ? "server" : "client", spec.function);
  const Expr req = at_entry(reg(server ? "rdi" : "rbx"));
  // req.URL read at the entry: one saved word serves every URL field.
  const Expr url = at_entry(word_at(reg(server ? "rdi" : "rbx"), l.request_url));
  add_arg(spec, go_string_at(req, l.request_method), 's');
  if (server) {
    // The path's (pointer, length) as the request arrived: a router may assign req.URL.Path
    // before the return (httprouter sets "/graph/" to redirect "/graph" there), while the bytes
    // of the old string are never written (Go strings are immutable) and are read at the return.
    const Expr url_now = word_at(reg("rdi"), l.request_url);
    add_arg(spec,
            expr::bytes_at(at_entry(word_at(url_now, l.url_path)),
                           at_entry(word_at(url_now, l.url_path + 8))),
            's');
    // The writer that ended the call: the end's receiver, or at a RET rw's data word. HTTP/1's
    // *response keeps the status WriteHeader set (0: nothing written yet, which net/http answers
    // with 200); HTTP/2's *http2responseWriter keeps it in its rws. Each is taken for what it is
    // only when its `req` is this request, else its status is -1: (is_it * (status + 1)) - 1.
    // Reading the other kind's fields reads the writer's heap neighbours or its *conn, which
    // are mapped. No type address is needed, so stripped and PIE binaries check alike.
    const Expr rw = end_entry ? reg("rax") : at_entry(reg("rcx"));
    // Ending at entries, each end reads only its own writer's fields (expr::at_end):
    // finishRequest (ends_at[0]) HTTP/1's, handlerDone (ends_at[1]) HTTP/2's; -1 at the other.
    auto own_end = [&](size_t end, Expr e) { return end_entry ? expr::at_end(end, e) : e; };
    add_arg(spec,
            own_end(0, expr::or_minus_one(binary("==", word_at(rw, l.response_req), req),
                                          word_at(rw, l.response_status))),
            'd');
    if (sides.http2_end_entry) {
      const Expr rws = word_at(rw, l.h2_writer_state);
      add_arg(spec,
              own_end(1, expr::or_minus_one(binary("==", word_at(rws, l.h2_state_req), req),
                                            word_at(rws, l.h2_state_status))),
              'd');
    } else {
      add_arg(spec, integer(-1), 'd');
    }
    add_arg(spec,
            binary("+", binary("*", word_at(req, l.request_proto_major), integer(10)),
                   word_at(req, l.request_proto_minor)),
            'd');
    return spec;
  }
  add_arg(spec, go_string_at(url, l.url_scheme), 's');
  add_arg(spec, go_string_at(url, l.url_host), 's');
  add_arg(spec, go_string_at(url, l.url_path), 's');
  // Whether there is a response and an error, not their addresses: an aggregated key must be the
  // same for equal exchanges.
  add_arg(spec, binary("!=", reg("rax"), integer(0)), 'd');
  // The StatusCode of a nil *Response is not read: its address is moved onto the stack, which
  // is readable, so a failed call counts no read error (the value is ignored with the nil).
  Expr nil_response = binary("==", reg("rax"), integer(0));
  Expr address = binary("+", binary("*", std::move(nil_response), reg("rsp")),
                        binary("+", reg("rax"), integer(static_cast<int64_t>(l.client_status))));
  add_arg(spec, expr::load(std::move(address), 0), 'd');
  add_arg(spec, binary("!=", reg("rbx"), integer(0)), 'd');  // the error's type word: non-nil
  return spec;
}

Result<HttpSides> http_sides(ObjectCache& cache, const std::string& target) {
  auto obj = cache.get(target);
  if (!obj) return tl::unexpected(obj.error());
  const std::string& path = (*obj)->ref.display_path;
  if (!(*obj)->is_go)
    return fail(
        "{} is not a Go program: uscope http instruments Go's net/http (for other servers, time "
        "their request handler with uscope latency)",
        path);
  if ((*obj)->go && !(*obj)->go->register_abi())
    return fail(
        "{} was built by {}, which passes arguments on the stack: uscope http reads Go's register "
        "ABI (Go 1.17 or later); rebuild it with a newer Go",
        path, (*obj)->go->version);
  auto syms = cache.symbols(**obj);
  if (!syms) return tl::unexpected(syms.error());
  HttpSides s;
  s.server = !functions_named(**syms, kHttpServerFunction).empty();
  s.client = !functions_named(**syms, kHttpClientFunction).empty();
  s.server_end_entry = go_functions_named(**syms, kHttpServerEnd).size() == 1;
  s.http2_end_entry = go_functions_named(**syms, kHttp2ServerEnd).size() == 1;
  for (auto name : {kHttpHijack, kHttp1ConnEnd, kHttp1ConnStart, kHttp2StreamStart})
    if (go_functions_named(**syms, name).size() == 1) s.abandon_at.emplace_back(name);
  if (!s.server && !s.client)
    return fail("{} does not use net/http's server or client (no {} and no {} in it)", path,
                kHttpServerFunction, kHttpClientFunction);
  return s;
}

Result<void> aggregate_http_end(uscope_recipe& r, uint32_t probe, HttpSide side,
                                std::span<const int64_t> bounds) {
  if (bounds.size() > TRACE_AGG_MAX_BOUNDS || !std::is_sorted(bounds.begin(), bounds.end()))
    return fail("{} histogram bounds: at most {}, ascending", bounds.size(), TRACE_AGG_MAX_BOUNDS);
  // Methods and schemes are short: what they leave goes to the path and the host.
  namespace f = http_field;
  std::vector<std::pair<size_t, int64_t>> short_strings = {
      {side == HttpSide::Server ? f::kServerMethod : f::kClientMethod, kMethodBytes}};
  if (side == HttpSide::Client) short_strings.emplace_back(f::kClientScheme, kSchemeBytes);
  for (auto [field, bytes] : short_strings)
    if (uscope_op* o = emitted_field(r, field); o && o->code == TOP_EMIT_STR)
      o->imm = std::min<int64_t>(o->imm, bytes);
  if (auto fit = fit_key(r); !fit) return fit;
  r.flags &= ~static_cast<uint32_t>(TRACE_F_STACK);
  r.flags |= TRACE_F_AGGREGATE | TRACE_F_HISTOGRAM;  // the value: the duration
  r.agg_slot = probe;
  r.agg_mode = TRACE_AGG_BOUNDS;
  r.agg_n_bounds = static_cast<uint32_t>(bounds.size());
  std::copy(bounds.begin(), bounds.end(), r.agg_bounds);
  return {};
}

Result<HttpPlan> plan_http(ObjectCache& cache, const GoFieldLookup& lookup,
                           const HttpPlanOptions& opts) {
  auto sides = http_sides(cache, opts.target);
  if (!sides) return tl::unexpected(sides.error());
  const bool server = sides->server && opts.server;
  const bool client = sides->client && opts.client;
  if (!server && !client)
    return fail("{} has no net/http {} to probe", opts.target.empty() ? "the target" : opts.target,
                opts.server ? "server" : "client");
  HttpPlan plan;
  auto layout = http_layout(lookup, server, client, sides->http2_end_entry);
  if (!layout) return tl::unexpected(layout.error());
  plan.layout = std::move(*layout);
  std::vector<ProbeSpec> specs;
  std::vector<HttpSide> side_of_spec;
  for (auto side : {HttpSide::Server, HttpSide::Client}) {
    if (side == HttpSide::Server ? !server : !client) continue;
    specs.push_back(http_probe(side, plan.layout, *sides));
    specs.back().target = opts.target;
    side_of_spec.push_back(side);
  }
  TraceOptions topts;
  topts.move_sites = opts.move_sites;
  auto trace = plan_trace(cache, specs, topts);
  if (!trace) return tl::unexpected(trace.error());
  plan.trace = std::move(*trace);
  for (const auto& p : plan.trace.probes)
    plan.side_of_probe.push_back(p.spec.function == kHttpServerFunction ? HttpSide::Server
                                                                        : HttpSide::Client);
  if (!opts.aggregate_bounds_ns.empty())
    for (PlannedSite& site : plan.trace.sites)
      if (site.role == SiteRole::Event) {
        auto r = aggregate_http_end(plan.trace.recipes[site.attach.cookie], site.probe,
                                    plan.side_of_probe[site.probe], opts.aggregate_bounds_ns);
        if (!r) return tl::unexpected(r.error());
        site.role = SiteRole::Aggregate;
      }
  return plan;
}

}  // namespace uscope
