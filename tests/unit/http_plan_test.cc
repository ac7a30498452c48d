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
      {{"net/http.Request", "Method"}, 0}, {{"net/http.Request", "URL"}, 16},
      {{"net/url.URL", "Scheme"}, 0},      {{"net/url.URL", "Host"}, 40},
      {{"net/url.URL", "Path"}, 56},       {{"net/http.response", "status"}, 120},
      {{"net/http.response", "req"}, 8},   {{"net/http.Response", "StatusCode"}, 16}};
  auto it = offsets.find({std::string(type), std::string(field)});
  if (it == offsets.end()) return fail("no field {} in {}", field, type);
  GoField f;
  f.name = field;
  f.offset = it->second;
  f.source = GoTypeSource::TypeDescriptor;
  return f;
}

TEST(http_plan, layout_names_each_offset_and_its_source) {
  auto l = http_layout(go119, true, true);
  ASSERT_TRUE(l) << l.error().message;
  EXPECT_EQ(l->request_url, 16u);
  EXPECT_EQ(l->url_path, 56u);
  EXPECT_EQ(l->response_status, 120u);
  EXPECT_EQ(l->client_status, 16u);
  EXPECT_EQ(l->sources.size(), 8u);
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
  ProbeSpec s = http_probe(HttpSide::Server, *l, false);
  EXPECT_EQ(s.kind, ProbeKind::Return);
  EXPECT_EQ(s.function, "net/http.serverHandler.ServeHTTP");
  EXPECT_EQ(s.ends_at, "");
  ASSERT_EQ(s.args.size(), http_field::kServerFields);
  ASSERT_EQ(s.conversions.size(), s.args.size());
  EXPECT_EQ(s.format, "%s %s %d");
  EXPECT_EQ(s.args[http_field::kServerMethod].op, Expr::Op::Str);
  EXPECT_EQ(s.args[http_field::kServerPath].op, Expr::Op::Str);
  EXPECT_EQ(s.args[http_field::kServerStatus].op, Expr::Op::Binary);
  for (const auto& a : s.args) expect_registers_only_at_entry(a, false, {});
}

// Ended at finishRequest's entry, the status is read through its receiver (RAX) there.
TEST(http_plan, server_probe_ends_at_finish_request) {
  auto l = http_layout(go119, true, true);
  ProbeSpec s = http_probe(HttpSide::Server, *l, true);
  EXPECT_EQ(s.kind, ProbeKind::Return);
  EXPECT_EQ(s.function, "net/http.serverHandler.ServeHTTP");
  EXPECT_EQ(s.ends_at, "net/http.(*response).finishRequest");
  ASSERT_EQ(s.args.size(), http_field::kServerFields);
  for (const auto& a : s.args) expect_registers_only_at_entry(a, false, {"rax"});
}

TEST(http_plan, client_probe_reads_results_at_the_return) {
  auto l = http_layout(go119, true, true);
  ProbeSpec s = http_probe(HttpSide::Client, *l, true);
  EXPECT_EQ(s.function, "net/http.(*Client).do");
  EXPECT_EQ(s.ends_at, "");  // at its RETs: no function fits (http_plan.h)
  ASSERT_EQ(s.args.size(), http_field::kClientFields);
  EXPECT_EQ(s.format, "%s %s %s %s %x %d %x");
  // (*Response, error) are RAX and RBX/RCX at the return; RSP keeps a nil response unread.
  for (const auto& a : s.args) expect_registers_only_at_entry(a, false, {"rax", "rbx", "rsp"});
}

}  // namespace
}  // namespace uscope

namespace uscope {
namespace {

// The server probe compiled and run on a request in fake memory: `writer_req` is what the
// ResponseWriter's `req` field holds (the request itself for HTTP/1's *response); `end_entry`:
// ended at finishRequest's entry, whose receiver is the *response, else at ServeHTTP's RET.
int64_t served_status(uint64_t writer_req, bool end_entry) {
  auto l = http_layout(go119, true, false);
  ProbeSpec spec = http_probe(HttpSide::Server, *l, end_entry);
  SiteContext site;
  site.kind = ProbeKind::Return;
  site.cc = &go_register_convention();
  auto compiled = compile_probe(spec, site, 0);
  EXPECT_TRUE(compiled) << compiled.error().message;
  EXPECT_TRUE(compiled->entry);
  const uint64_t req = 0x1000, url = 0x2000, rw = 0x3000;
  FakeMemory m;
  m.word(req + 0, 0x4000);  // Method
  m.word(req + 8, 3);
  m.text(0x4000, "GET");
  m.word(req + 16, url);
  m.word(url + 56, 0x5000);  // Path
  m.word(url + 64, 6);
  m.text(0x5000, "/hello");
  m.word(rw + 8, writer_req);
  m.word(rw + 120, 404);
  RecipeInput at_entry;
  at_entry.regs[UREG_RDI] = req;
  at_entry.regs[UREG_RBX] = 0x7000;  // rw's itab
  at_entry.regs[UREG_RCX] = rw;
  at_entry.read = m.reader();
  RecipeRun saved = interpret_recipe(*compiled->entry, at_entry);
  EXPECT_EQ(saved.outcome, RecipeOutcome::SavedEntry);
  RecipeInput at_return;
  at_return.entry = saved.slots;
  if (end_entry) at_return.regs[UREG_RAX] = rw;  // finishRequest's w
  at_return.read = m.reader();
  RecipeRun ev = interpret_recipe(compiled->main, at_return);
  EXPECT_EQ(ev.outcome, RecipeOutcome::Emitted);
  EXPECT_EQ(ev.read_errors, 0u);
  auto values = decode_payload(compiled->fields, ev.payload);
  EXPECT_TRUE(values) << values.error().message;
  EXPECT_EQ((*values)[http_field::kServerMethod].text, "GET");
  EXPECT_EQ((*values)[http_field::kServerPath].text, "/hello");
  return static_cast<int64_t>((*values)[http_field::kServerStatus].number);
}

TEST(http_plan, server_status_only_from_an_http1_response) {
  EXPECT_EQ(served_status(0x1000, false), 404);
  EXPECT_EQ(served_status(0xdead, false), -1);  // another ResponseWriter (HTTP/2): not read as one
}

TEST(http_plan, server_status_from_finish_request_receiver) {
  EXPECT_EQ(served_status(0x1000, true), 404);
  EXPECT_EQ(served_status(0xdead, true), -1);  // not this request's *response
}

}  // namespace
}  // namespace uscope
