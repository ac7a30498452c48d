#include "plan/http_plan.h"

#include "fake_memory.h"
#include "plan/calling_convention.h"
#include "plan/recipe_interpreter.h"

#include <gtest/gtest.h>

#include <map>
#include <set>

namespace uscope {
namespace {

// net/http's layout in Go 1.19 (the fixture's DWARF).
Result<GoField> go119(std::string_view type, std::string_view field) {
  static const std::map<std::pair<std::string, std::string>, uint64_t> offsets = {
      {{"net/http.Request", "Method"}, 0},
      {{"net/http.Request", "URL"}, 16},
      {{"net/url.URL", "Scheme"}, 0},
      {{"net/url.URL", "Host"}, 40},
      {{"net/url.URL", "Path"}, 56},
      {{"net/http.response", "status"}, 120},
      {{"net/http.response", "req"}, 8},
      {{"net/http.Response", "StatusCode"}, 16},
      {{"net/http.Request", "ProtoMajor"}, 40},
      {{"net/http.Request", "ProtoMinor"}, 48},
      {{"net/http.http2responseWriter", "rws"}, 0},
      {{"net/http.http2responseWriterState", "req"}, 8},
      {{"net/http.http2responseWriterState", "status"}, 80}};

  auto it = offsets.find({std::string(type), std::string(field)});
  if (it == offsets.end()) return fail("no field {} in {}", field, type);
  GoField f;
  f.name = field;
  f.offset = it->second;
  f.source = GoTypeSource::TypeDescriptor;
  return f;
}

// What the fixtures' Go 1.19 binaries have: every end out of line.
HttpSides all_ends() {
  HttpSides s;
  s.server = s.client = s.server_end_entry = s.http2_end_entry = true;
  s.abandon_at = {"net/http.(*conn).hijackLocked", "net/http.(*conn).serve.func1",
                  "net/http.(*conn).serve", "net/http.(*http2serverConn).runHandler"};
  return s;
}

// A binary without an out-of-line finishRequest: the server ends at ServeHTTP's RETs.
HttpSides ret_ends() {
  HttpSides s = all_ends();
  s.server_end_entry = false;
  return s;
}

TEST(http_plan, layout_names_each_offset_and_its_source) {
  auto l = http_layout(go119, true, true);
  ASSERT_TRUE(l) << l.error().message;
  EXPECT_EQ(l->request_url, 16u);
  EXPECT_EQ(l->url_path, 56u);
  EXPECT_EQ(l->response_status, 120u);
  EXPECT_EQ(l->client_status, 16u);
  EXPECT_EQ(l->sources.size(), 10u);  // and ProtoMajor, ProtoMinor
  auto h2 = http_layout(go119, true, false, true);
  ASSERT_TRUE(h2) << h2.error().message;
  EXPECT_EQ(h2->h2_state_status, 80u);
  EXPECT_EQ(h2->sources.size(), 10u);  // no client fields, HTTP/2's three
  EXPECT_EQ(l->sources[0].source, GoTypeSource::TypeDescriptor);
}

TEST(http_plan, server_only_layout_needs_no_client_types) {
  auto lookup = [](std::string_view t, std::string_view f) -> Result<GoField> {
    if (t == "net/http.Response") return fail("absent");
    return go119(t, f);
  };
  EXPECT_TRUE(http_layout(lookup, true, false));
  auto both = http_layout(lookup, true, true);
  ASSERT_FALSE(both);
  EXPECT_EQ(both.error().message,
            "cannot place net/http.Response.StatusCode, which uscope http reads: absent");
}

// Every value is read at the return from what was saved at the entry, so no argument register
// is read after the handler has reused it.
void expect_registers_only_at_entry(const Expr& e, bool under_entry,
                                    const std::set<std::string>& at_return) {
  if (e.op == Expr::Op::Reg && !under_entry) {
    EXPECT_TRUE(at_return.count(e.text)) << e.text;
  }
  for (const auto& c : e.children)
    expect_registers_only_at_entry(c, under_entry || e.op == Expr::Op::Entry, at_return);
}

TEST(http_plan, server_probe_reads_method_path_status) {
  auto l = http_layout(go119, true, true);
  ProbeSpec s = http_probe(HttpSide::Server, *l, ret_ends());
  EXPECT_EQ(s.kind, ProbeKind::Return);
  EXPECT_EQ(s.function, "net/http.serverHandler.ServeHTTP");
  EXPECT_TRUE(s.ends_at.empty());
  EXPECT_FALSE(s.one_per_goroutine);
  ASSERT_EQ(s.args.size(), http_field::kServerFields);
  ASSERT_EQ(s.conversions.size(), s.args.size());
  EXPECT_EQ(s.format, "%s %s %d %d %d");
  EXPECT_EQ(s.args[http_field::kServerMethod].op, Expr::Op::Str);
  EXPECT_EQ(s.args[http_field::kServerPath].op, Expr::Op::Str);
  EXPECT_EQ(s.args[http_field::kServerStatus].op, Expr::Op::Binary);
  for (const auto& a : s.args) expect_registers_only_at_entry(a, false, {});
}

// Ended at finishRequest's entry (HTTP/1) or handlerDone's (HTTP/2), the status is read through
// the end's receiver (RAX) there; keyed by goroutine alone, and dropped where it exits.
TEST(http_plan, server_probe_ends_at_finish_request_or_handler_done) {
  auto l = http_layout(go119, true, true, true);
  ProbeSpec s = http_probe(HttpSide::Server, *l, all_ends());
  EXPECT_EQ(s.kind, ProbeKind::Return);
  EXPECT_EQ(s.function, "net/http.serverHandler.ServeHTTP");
  EXPECT_EQ(s.ends_at, (std::vector<std::string>{"net/http.(*response).finishRequest",
                                                 "net/http.(*http2responseWriter).handlerDone"}));
  EXPECT_TRUE(s.one_per_goroutine);
  EXPECT_EQ(s.abandoned_at, all_ends().abandon_at);
  // Each status is its own end's: HTTP/1's at finishRequest (ends_at[0]), HTTP/2's at handlerDone.
  EXPECT_EQ(s.args[http_field::kServerStatus].op, Expr::Op::AtEnd);
  EXPECT_EQ(s.args[http_field::kServerStatus].index, 0);
  EXPECT_EQ(s.args[http_field::kServerH2Status].op, Expr::Op::AtEnd);
  EXPECT_EQ(s.args[http_field::kServerH2Status].index, 1);
  ASSERT_EQ(s.args.size(), http_field::kServerFields);
  for (const auto& a : s.args) expect_registers_only_at_entry(a, false, {"rax"});
}

TEST(http_plan, client_probe_reads_results_at_the_return) {
  auto l = http_layout(go119, true, true);
  ProbeSpec s = http_probe(HttpSide::Client, *l, all_ends());
  EXPECT_EQ(s.function, "net/http.(*Client).do");
  EXPECT_TRUE(s.ends_at.empty());  // at its RETs: no function fits (http_plan.h)
  ASSERT_EQ(s.args.size(), http_field::kClientFields);
  EXPECT_EQ(s.format, "%s %s %s %s %d %d %d");
  // (*Response, error) are RAX and RBX/RCX at the return; RSP keeps a nil response unread.
  for (const auto& a : s.args) expect_registers_only_at_entry(a, false, {"rax", "rbx", "rsp"});
}

}  // namespace
}  // namespace uscope

namespace uscope {
namespace {

// The server probe compiled and run on a request in fake memory: `writer_req` is what the
// ResponseWriter's `req` field holds (the request itself for HTTP/1's *response); `end_entry`:
// ended at an end's entry, whose receiver is the writer, else at ServeHTTP's RET. `http2`: the
// writer is an *http2responseWriter, whose rws holds req and status.
struct Served {
  int64_t status = 0, h2_status = 0, proto = 0;
};

// A GET of `path` in fake memory, with the registers of ServeHTTP's entry and of the end.
struct FakeRequest {
  FakeMemory m;
  RecipeInput at_entry, at_return;
};
FakeRequest fake_request(uint64_t writer_req, bool end_entry, bool http2,
                         std::string_view path = "/hello") {
  const uint64_t req = 0x1000, url = 0x2000, rw = 0x3000, rws = 0x6000;
  FakeRequest f;
  FakeMemory& m = f.m;
  m.word(req + 0, 0x4000);  // Method
  m.word(req + 8, 3);
  m.text(0x4000, "GET");
  m.word(req + 16, url);
  m.word(req + 40, http2 ? 2 : 1);  // ProtoMajor
  m.word(req + 48, http2 ? 0 : 1);  // ProtoMinor
  m.word(url + 56, 0x10000);        // Path
  m.word(url + 64, path.size());
  m.text(0x10000, path);
  if (http2) {
    m.word(rw, rws);  // rws
    m.word(rw + 8, 0);
    m.word(rw + 120, 0);
    m.word(rws + 8, writer_req);
    m.word(rws + 80, 201);
  } else {
    m.word(rw, 0x8000);  // conn, whose words are no request
    m.word(0x8000 + 8, 0x9000);
    m.word(0x8000 + 80, 0);
    m.word(rw + 8, writer_req);
    m.word(rw + 120, 404);
  }
  f.at_entry.regs[UREG_RDI] = req;
  f.at_entry.regs[UREG_RBX] = 0x7000;  // rw's itab
  f.at_entry.regs[UREG_RCX] = rw;
  if (end_entry) f.at_return.regs[UREG_RAX] = rw;  // finishRequest's or handlerDone's w
  return f;
}

CompiledProbe server_probe(bool end_entry) {
  auto l = http_layout(go119, true, false, true);
  ProbeSpec spec = http_probe(HttpSide::Server, *l, end_entry ? all_ends() : ret_ends());
  SiteContext site;
  site.kind = ProbeKind::Return;
  site.cc = &go_register_convention();
  auto compiled = compile_probe(spec, site, 0);
  EXPECT_TRUE(compiled) << compiled.error().message;
  EXPECT_TRUE(compiled->entry);
  return *compiled;
}

// `main` run at the end of a call whose entry ran the probe's entry half.
RecipeRun run_end(const CompiledProbe& c, const uscope_recipe& main, FakeRequest& f) {
  f.at_entry.read = f.m.reader();
  RecipeRun saved = interpret_recipe(*c.entry, f.at_entry);
  EXPECT_EQ(saved.outcome, RecipeOutcome::SavedEntry);
  f.at_return.entry = saved.slots;
  f.at_return.read = f.m.reader();
  return interpret_recipe(main, f.at_return);
}

Served served(uint64_t writer_req, bool end_entry, bool http2 = false) {
  const CompiledProbe compiled = server_probe(end_entry);
  FakeRequest f = fake_request(writer_req, end_entry, http2);
  RecipeRun ev = run_end(compiled, compiled.main, f);
  EXPECT_EQ(ev.outcome, RecipeOutcome::Emitted);
  EXPECT_EQ(ev.read_errors, 0u);
  auto values = decode_payload(compiled.fields, ev.payload);
  EXPECT_TRUE(values) << values.error().message;
  EXPECT_EQ((*values)[http_field::kServerMethod].text, "GET");
  EXPECT_EQ((*values)[http_field::kServerPath].text, "/hello");
  return {static_cast<int64_t>((*values)[http_field::kServerStatus].number),
          static_cast<int64_t>((*values)[http_field::kServerH2Status].number),
          static_cast<int64_t>((*values)[http_field::kServerProto].number)};
}

// The agent's end: no event, but a row keyed by the fields, the duration in its bound's bucket.
TEST(http_plan, aggregated_end_counts_the_duration_under_its_fields) {
  const CompiledProbe compiled = server_probe(true);
  uscope_recipe agg = compiled.main;
  const std::vector<int64_t> bounds = {5'000'000, 10'000'000, 25'000'000};  // 5, 10, 25 ms
  ASSERT_TRUE(aggregate_http_end(agg, 3, HttpSide::Server, bounds));
  // Bucket i holds (bounds[i-1], bounds[i]], as Prometheus' `le` and OpenTelemetry count.
  const std::map<uint64_t, int> want = {
      {1, 0}, {5'000'000, 0}, {5'000'001, 1}, {10'000'000, 1}, {25'000'001, 3}};
  for (auto [duration, bucket] : want) {
    FakeRequest f = fake_request(0x1000, true, false);
    f.at_return.duration_ns = duration;
    RecipeRun r = run_end(compiled, agg, f);
    ASSERT_EQ(r.outcome, RecipeOutcome::Aggregated);
    EXPECT_EQ(r.bucket, bucket) << duration;
    EXPECT_EQ(r.value, duration);
    EXPECT_EQ(r.key.slot, 3u);
    auto key = decode_payload(compiled.fields, std::span(r.key.data), true);
    ASSERT_TRUE(key) << key.error().message;
    EXPECT_EQ((*key)[http_field::kServerMethod].text, "GET");
    EXPECT_EQ((*key)[http_field::kServerPath].text, "/hello");
    EXPECT_EQ((*key)[http_field::kServerStatus].number, 404u);
  }
  // A path longer than the key leaves it (248 bytes, less the method's 16 and the rest's 32) is
  // cut there and says so.
  const std::string long_path = "/" + std::string(299, 'a');
  FakeRequest f = fake_request(0x1000, true, false, long_path);
  RecipeRun r = run_end(compiled, agg, f);
  ASSERT_EQ(r.outcome, RecipeOutcome::Aggregated);
  auto key = decode_payload(compiled.fields, std::span(r.key.data), true);
  ASSERT_TRUE(key) << key.error().message;
  EXPECT_EQ((*key)[http_field::kServerPath].text, long_path.substr(0, 200));
  EXPECT_TRUE((*key)[http_field::kServerPath].truncated);
  // More bounds than a recipe holds are refused.
  std::vector<int64_t> many(TRACE_AGG_MAX_BOUNDS + 1);
  for (size_t i = 0; i < many.size(); ++i) many[i] = static_cast<int64_t>(i);
  EXPECT_FALSE(aggregate_http_end(agg, 3, HttpSide::Server, many));
}

TEST(http_plan, server_status_only_from_an_http1_response) {
  EXPECT_EQ(served(0x1000, false).status, 404);
  EXPECT_EQ(served(0x1000, false).h2_status, -1);
  EXPECT_EQ(served(0x1000, false).proto, 11);
  EXPECT_EQ(served(0xdead, false).status, -1);  // another writer: not read as one
}

TEST(http_plan, server_status_from_finish_request_receiver) {
  EXPECT_EQ(served(0x1000, true).status, 404);
  EXPECT_EQ(served(0x1000, true).h2_status, -1);
  EXPECT_EQ(served(0xdead, true).status, -1);  // not this request's *response
}

TEST(http_plan, server_status_from_handler_done_receiver) {
  const Served h2 = served(0x1000, true, true);
  EXPECT_EQ(h2.status, -1);  // not an HTTP/1 *response
  EXPECT_EQ(h2.h2_status, 201);
  EXPECT_EQ(h2.proto, 20);
  EXPECT_EQ(served(0xdead, true, true).h2_status, -1);    // not this request's writer
  EXPECT_EQ(served(0x1000, false, true).h2_status, 201);  // at a RET, through rw
}

}  // namespace
}  // namespace uscope
