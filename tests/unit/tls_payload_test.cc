#include "sink/tls_payload.h"

#include <gtest/gtest.h>

#include "model/tls_records.h"
#include "sink/tls_output.h"

namespace uscope {
namespace {

TEST(tls_payload, text_is_utf8_without_control_characters) {
  EXPECT_TRUE(payload_is_text("GET / HTTP/1.1\r\nHost: x\r\n\r\n"));
  EXPECT_TRUE(payload_is_text("caf\xc3\xa9\t"));
  EXPECT_TRUE(payload_is_text("cut in a sequence: \xe2\x82"));  // the capture ended in it
  EXPECT_TRUE(payload_is_text(""));
  EXPECT_FALSE(payload_is_text(std::string("\x16\x03\x01\x00", 4)));
  const char h2[] = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\x00\x00\x12\x04";
  EXPECT_FALSE(payload_is_text(std::string_view(h2, sizeof(h2) - 1)));
  EXPECT_FALSE(payload_is_text("bad \xc3\x28 utf8"));
  EXPECT_FALSE(payload_is_text("del \x7f"));
}

TEST(tls_payload, credential_header_values_are_redacted) {
  size_t n = 0;
  std::string out = redact_headers(
      "GET / HTTP/1.1\r\nAuthorization: Bearer abc.def\r\ncookie: a=1; b=2\r\n"
      "X-Cookie: keep\r\nProxy-Authorization:Basic Zm9v\r\n\r\n",
      n);
  EXPECT_EQ(n, 3u);
  EXPECT_EQ(out,
            "GET / HTTP/1.1\r\nAuthorization: [redacted 14 bytes]\r\ncookie: [redacted 8 "
            "bytes]\r\nX-Cookie: keep\r\nProxy-Authorization:[redacted 10 bytes]\r\n\r\n");
  // A response's Set-Cookie, a header at the very start (the call began mid-headers), no CR.
  EXPECT_EQ(redact_headers("Set-Cookie: id=42; HttpOnly\nServer: x", n),
            "Set-Cookie: [redacted 15 bytes]\nServer: x");
  EXPECT_EQ(n, 1u);
  // An empty value has nothing to hide.
  EXPECT_EQ(redact_headers("Cookie:\r\n", n), "Cookie:\r\n");
  EXPECT_EQ(n, 0u);
}

TEST(tls_payload, text_lines_are_indented_and_control_characters_escaped) {
  EXPECT_EQ(payload_text_lines("a\r\nb\x01\tc\n\nd", "  "), "  a\n  b\\x01\tc\n  \n  d\n");
  EXPECT_EQ(payload_text_lines("", "  "), "");
}

TEST(tls_payload, binary_as_a_hex_dump_and_hex) {
  std::string data(
      "\x16\x03\x01\x00\x2a"
      "ABCDEFGHIJKLMNOPQ",
      22);
  EXPECT_EQ(payload_hex_lines(data, "  "),
            "  0000  16 03 01 00 2a 41 42 43 44 45 46 47 48 49 4a 4b  |....*ABCDEFGHIJK|\n"
            "  0010  4c 4d 4e 4f 50 51                                |LMNOPQ|\n");
  EXPECT_EQ(payload_hex(std::string("\x00\xff", 2)), "00ff");
}

TlsRecord record(std::string data, uint64_t bytes) {
  TlsRecord r;
  r.function = &tls_functions()[0];  // SSL_read
  r.ts_ns = 2'500'000'000;
  r.pid = 42;
  r.comm = "curl";
  r.conn = 0xabc;
  r.fd = 5;
  r.peer = "127.0.0.1:4433";
  r.bytes = bytes;
  r.data = std::move(data);
  return r;
}

TEST(tls_output, text_record_says_what_was_not_captured) {
  TlsRender how;
  how.start_ns = 500'000'000;
  how.max_bytes = 4;
  std::string out = tls_text_record(record("HTTP", 17), how);
  EXPECT_NE(out.find("2.000000"), std::string::npos) << out;
  EXPECT_NE(out.find("SSL_read"), std::string::npos);
  EXPECT_NE(out.find("ssl 0xabc fd 5 127.0.0.1:4433"), std::string::npos) << out;
  EXPECT_NE(out.find("    HTTP\n"), std::string::npos) << out;
  EXPECT_NE(out.find("13 more bytes not captured: --max-bytes 4"), std::string::npos) << out;
  TlsRecord unknown = record("x", 1);
  unknown.fd = -1;
  EXPECT_NE(tls_text_record(unknown, how).find("ssl 0xabc fd ?"), std::string::npos);
}

TEST(tls_output, json_record_redacts_unless_asked_not_to) {
  TlsRender how;
  std::string out = tls_json_record(record("Cookie: s=1\r\n", 13), how);
  EXPECT_NE(out.find(R"("data":"Cookie: [redacted 3 bytes]\r\n")"), std::string::npos) << out;
  EXPECT_NE(out.find(R"("redacted":1)"), std::string::npos) << out;
  EXPECT_NE(out.find(R"("direction":"read")"), std::string::npos) << out;
  how.redact = false;
  out = tls_json_record(record("Cookie: s=1\r\n", 13), how);
  EXPECT_NE(out.find(R"("data":"Cookie: s=1\r\n")"), std::string::npos) << out;
  out = tls_json_record(record(std::string("\x16\x03", 2), 2), how);
  EXPECT_NE(out.find(R"("encoding":"hex")"), std::string::npos) << out;
  EXPECT_NE(out.find(R"("data":"1603")"), std::string::npos) << out;
}

TEST(tls_output, summary_names_every_loss) {
  TlsTotals t;
  TlsLosses l;
  EXPECT_NE(tls_text_summary(t, l, "stopped").find("nothing lost"), std::string::npos);
  l.ring_lost = 2;
  l.cut_calls = 1;
  l.cut_bytes = 100;
  std::string s = tls_text_summary(t, l, "stopped");
  EXPECT_NE(s.find("2 lost (ring buffer full)"), std::string::npos) << s;
  EXPECT_NE(s.find("1 calls cut at --max-bytes (100 bytes not captured)"), std::string::npos) << s;
  std::string j = tls_json_summary(t, l, "stopped");
  EXPECT_NE(j.find(R"("ring_lost":2)"), std::string::npos) << j;
  EXPECT_NE(j.find(R"("cut_bytes":100)"), std::string::npos) << j;
}

}  // namespace
}  // namespace uscope
