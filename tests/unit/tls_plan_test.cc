// The probes of `uscope tls` compiled and run by the recipe interpreter on calls in fake memory:
// what each reads at the entry and at the return, and that a failed call reads no buffer.
#include "plan/tls_plan.h"

#include <gtest/gtest.h>

#include <map>

#include "fake_memory.h"
#include "plan/calling_convention.h"
#include "plan/recipe_interpreter.h"

namespace uscope {
namespace {

const TlsFunction& function(std::string_view name) {
  for (const auto& f : tls_functions())
    if (f.name == name) return f;
  throw std::runtime_error("no TLS function " + std::string(name));
}

// crypto/tls, net and internal/poll in Go 1.19 (the fixtures' DWARF).
Result<GoField> go119(std::string_view type, std::string_view field) {
  static const std::map<std::pair<std::string, std::string>, uint64_t> offsets = {
      {{"crypto/tls.Conn", "conn"}, 0},
      {{"net.conn", "fd"}, 0},
      {{"net.netFD", "pfd"}, 0},
      {{"internal/poll.FD", "Sysfd"}, 16}};
  auto it = offsets.find({std::string(type), std::string(field)});
  if (it == offsets.end()) return fail("no field {} in {}", field, type);
  GoField f;
  f.name = field;
  f.offset = it->second;
  return f;
}

constexpr uint64_t kConn = 0x1000, kBuf = 0x2000, kBio = 0x3000, kMethod = 0x4000,
                   kOutCount = 0x5000, kTcpConn = 0x6000, kNetFd = 0x7000, kItab = 0x8000;

struct Call {
  RecipeOutcome outcome = RecipeOutcome::Emitted;
  uint32_t read_errors = 0;
  std::vector<PayloadValue> values;
};

// `f`'s probe entered with `entry` registers and returning with `ret` ones, over `m`.
Call run_call(const TlsFunction& f, const TlsFdLayout& fd, const FakeMemory& m, RecipeInput entry,
              RecipeInput ret, size_t max_bytes = kTlsDefaultMaxBytes) {
  ProbeSpec spec = tls_probe(f, "", fd, max_bytes);
  SiteContext site;
  site.kind = ProbeKind::Return;
  site.cc = f.library == TlsLibrary::Go ? &go_register_convention() : &sysv_convention();
  auto compiled = compile_probe(spec, site, 0);
  EXPECT_TRUE(compiled) << compiled.error().message;
  if (!compiled) return {};
  EXPECT_TRUE(compiled->entry);
  entry.read = m.reader();
  RecipeRun saved = interpret_recipe(*compiled->entry, entry);
  EXPECT_EQ(saved.outcome, RecipeOutcome::SavedEntry);
  EXPECT_EQ(saved.read_errors, 0u);
  ret.entry = saved.slots;
  ret.read = m.reader();
  RecipeRun ev = interpret_recipe(compiled->main, ret);
  Call c{ev.outcome, ev.read_errors, {}};
  if (ev.outcome != RecipeOutcome::Emitted) return c;
  auto values = decode_payload(compiled->fields, ev.payload);
  EXPECT_TRUE(values) << values.error().message;
  if (values) c.values = std::move(*values);
  EXPECT_EQ(c.values.size(), tls_field::kFields);
  return c;
}

// An SSL whose read and write BIO is a BIO of `bio_type` holding fd 7.
FakeMemory openssl_memory(uint32_t bio_type) {
  FakeMemory m;
  m.word(kConn + 16, kBio);  // ssl->rbio
  m.word(kConn + 24, kBio);  // ssl->wbio
  m.word(kBio + 8, kMethod);
  m.word(kBio + 56, 7, 4);  // bio->num
  m.word(kMethod, bio_type, 4);
  m.text(kBuf, "GET / HTTP/1.1\r\nHost: x\r\n\r\n");
  return m;
}

RecipeInput openssl_entry() {
  RecipeInput in;
  in.regs[UREG_RDI] = kConn;
  in.regs[UREG_RSI] = kBuf;
  in.regs[UREG_RDX] = 4096;
  in.regs[UREG_RCX] = kOutCount;
  return in;
}

RecipeInput returning(uint64_t rax) {
  RecipeInput in;
  in.regs[UREG_RAX] = rax;
  in.regs[UREG_RSP] = 0x9000;
  return in;
}

TEST(tls_plan, openssl_fd_layout_only_for_3_0_and_3_1) {
  EXPECT_TRUE(openssl_fd_layout(true, false).known);
  auto old = openssl_fd_layout(false, false);
  EXPECT_FALSE(old.known);
  EXPECT_NE(old.why_unknown.find("OpenSSL before 3"), std::string::npos);
  auto newer = openssl_fd_layout(true, true);
  EXPECT_FALSE(newer.known);
  EXPECT_NE(newer.why_unknown.find("3.2 or later"), std::string::npos);
}

TEST(tls_plan, ssl_read_reads_the_bytes_returned_and_the_socket_fd) {
  FakeMemory m = openssl_memory(kBioTypeSocket);
  Call c = run_call(function("SSL_read"), openssl_fd_layout(true, false), m, openssl_entry(),
                    returning(14));
  ASSERT_EQ(c.outcome, RecipeOutcome::Emitted) << recipe_outcome_name(c.outcome);
  EXPECT_EQ(c.read_errors, 0u);
  EXPECT_EQ(c.values[tls_field::kConn].number, kConn);
  EXPECT_EQ(static_cast<int64_t>(c.values[tls_field::kFd].number), 7);
  EXPECT_EQ(c.values[tls_field::kBytes].number, 14u);
  EXPECT_EQ(c.values[tls_field::kData].text, "GET / HTTP/1.1");
}

TEST(tls_plan, fd_of_a_bio_that_is_no_socket_is_unknown) {
  FakeMemory m = openssl_memory(1 | 0x0400);  // BIO_TYPE_MEM
  Call c = run_call(function("SSL_write"), openssl_fd_layout(true, false), m, openssl_entry(),
                    returning(3));
  ASSERT_EQ(c.outcome, RecipeOutcome::Emitted);
  EXPECT_EQ(static_cast<int64_t>(c.values[tls_field::kFd].number), -1);
  EXPECT_EQ(c.read_errors, 0u);
  // Without a known layout nothing of the SSL is read.
  FakeMemory bare;
  bare.text(kBuf, "abc");
  Call u = run_call(function("SSL_write"), openssl_fd_layout(false, false), bare, openssl_entry(),
                    returning(3));
  ASSERT_EQ(u.outcome, RecipeOutcome::Emitted);
  EXPECT_EQ(static_cast<int64_t>(u.values[tls_field::kFd].number), -1);
  EXPECT_EQ(u.values[tls_field::kData].text, "abc");
}

TEST(tls_plan, failed_calls_are_dropped_before_the_buffer_is_read) {
  FakeMemory m = openssl_memory(kBioTypeSocket);
  const auto layout = openssl_fd_layout(true, false);
  // int -1 leaves the upper half of rax zero.
  for (uint64_t rax : {uint64_t{0}, uint64_t{0xffffffff}})
    EXPECT_EQ(run_call(function("SSL_read"), layout, m, openssl_entry(), returning(rax)).outcome,
              RecipeOutcome::Filtered)
        << rax;
  // SSL_read_ex returning 0: its *readbytes is not read (it is not in memory here).
  Call c = run_call(function("SSL_read_ex"), layout, m, openssl_entry(), returning(0));
  EXPECT_EQ(c.outcome, RecipeOutcome::Filtered);
  EXPECT_EQ(c.read_errors, 0u);
}

TEST(tls_plan, ex_functions_count_bytes_through_their_out_parameter_and_cap_at_max_bytes) {
  FakeMemory m = openssl_memory(kBioTypeSocket);
  m.word(kOutCount, 26);
  Call c = run_call(function("SSL_write_ex"), openssl_fd_layout(true, false), m, openssl_entry(),
                    returning(1), 5);
  ASSERT_EQ(c.outcome, RecipeOutcome::Emitted);
  EXPECT_EQ(c.values[tls_field::kBytes].number, 26u);
  EXPECT_EQ(c.values[tls_field::kData].text, "GET /");
}

RecipeInput go_entry() {
  RecipeInput in;
  in.regs[UREG_RAX] = kConn;  // c *tls.Conn
  in.regs[UREG_RBX] = kBuf;   // b []byte
  in.regs[UREG_RCX] = 64;
  in.regs[UREG_RDI] = 64;
  in.regs[UREG_RSP] = 0x9000;
  in.regs[UREG_R14] = 0xa000;  // g
  return in;
}

FakeMemory go_memory(uint64_t itab) {
  FakeMemory m;
  m.word(kConn, itab);  // c.conn: itab, data
  m.word(kConn + 8, kTcpConn);
  m.word(kTcpConn, kNetFd);
  m.word(kNetFd + 16, 9);  // pfd.Sysfd
  // The stack, read instead of what is not a *net.TCPConn (its caller's frame above rsp).
  for (uint64_t a = 0x9000; a < 0x9100; a += 8) m.word(a, 0);
  m.word(0xa000 + 8, 0xb000);  // g.stack.hi
  m.text(kBuf, "HTTP/1.1 200 OK\r\n");
  return m;
}

TEST(tls_plan, go_read_keys_by_goroutine_and_finds_the_tcp_fd) {
  const auto layout = go_fd_layout(go119, kItab);
  ASSERT_TRUE(layout.known) << layout.why_unknown;
  RecipeInput ret = returning(8);
  ret.regs[UREG_R14] = 0xa000;
  Call c = run_call(function("crypto/tls.(*Conn).Read"), layout, go_memory(kItab), go_entry(), ret);
  ASSERT_EQ(c.outcome, RecipeOutcome::Emitted) << recipe_outcome_name(c.outcome);
  EXPECT_EQ(c.read_errors, 0u);
  EXPECT_EQ(static_cast<int64_t>(c.values[tls_field::kFd].number), 9);
  EXPECT_EQ(c.values[tls_field::kData].text, "HTTP/1.1");
  // Another net.Conn (not a *net.TCPConn): no fd, and nothing read through its pointer.
  Call other =
      run_call(function("crypto/tls.(*Conn).Read"), layout, go_memory(0xdead), go_entry(), ret);
  ASSERT_EQ(other.outcome, RecipeOutcome::Emitted);
  EXPECT_EQ(static_cast<int64_t>(other.values[tls_field::kFd].number), -1);
  EXPECT_EQ(other.read_errors, 0u);
  // n == 0 (an error): dropped.
  RecipeInput none = returning(0);
  none.regs[UREG_R14] = 0xa000;
  EXPECT_EQ(
      run_call(function("crypto/tls.(*Conn).Read"), layout, go_memory(kItab), go_entry(), none)
          .outcome,
      RecipeOutcome::Filtered);
}

TEST(tls_plan, go_fd_unknown_without_the_itab) {
  auto l = go_fd_layout(go119, std::nullopt);
  EXPECT_FALSE(l.known);
  EXPECT_NE(l.why_unknown.find(".itablink"), std::string::npos);
  auto missing = go_fd_layout(
      [](std::string_view, std::string_view) -> Result<GoField> { return fail("absent"); }, kItab);
  EXPECT_FALSE(missing.known);
  EXPECT_EQ(missing.why_unknown, "cannot place crypto/tls.Conn.conn: absent");
}

TEST(tls_plan, every_function_is_a_return_probe_with_the_same_fields) {
  for (const auto& f : tls_functions()) {
    ProbeSpec s = tls_probe(f, "", TlsFdLayout{}, 100);
    EXPECT_EQ(s.kind, ProbeKind::Return) << f.name;
    EXPECT_EQ(s.function, f.name);
    EXPECT_TRUE(s.predicate) << f.name;
    EXPECT_EQ(s.format, "%x %d %u %s") << f.name;
  }
}

}  // namespace
}  // namespace uscope
