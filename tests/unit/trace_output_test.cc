// Rendering of decoded events: printf conversions (against the C library's own snprintf), escapes,
// strings cut short, and the text and JSON Lines event formats.
// operator new is replaced below (malloc/free) to count allocations.
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
#include "sink/trace_output.h"

#include <gtest/gtest.h>

#include <time.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <nlohmann/json.hpp>
#include <regex>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "plan/recipe.h"

// Counts allocations made through operator new (what std::string and std::vector use).
static uint64_t test_allocations = 0;

namespace uscope {
namespace {

// A probe with the output fields compile_probe gives its spec.
ProbePlan probe_of(std::string_view text, std::string label = "f") {
  ProbePlan p;
  auto spec = parse_probe_spec(text);
  EXPECT_TRUE(spec.has_value()) << text << ": " << (spec ? "" : spec.error().message);
  if (!spec) return p;
  p.spec = *spec;
  p.label = std::move(label);
  SiteContext site;
  site.kind = spec->kind;
  auto c = compile_probe(*spec, site, 0);
  EXPECT_TRUE(c.has_value()) << text << ": " << (c ? "" : c.error().message);
  if (c) p.fields = c->fields;
  return p;
}

DecodedValue num(uint64_t v) {
  DecodedValue f;
  f.number = v;
  return f;
}

DecodedValue text(std::string s) {
  DecodedValue f;
  f.is_string = true;
  f.text = std::move(s);
  return f;
}

// Renders `spec` with `values`.
std::string render(std::string_view spec, std::vector<DecodedValue> values) {
  return format_message(probe_of(spec), values);
}

// An event of probe `probe_id` with these values.
DecodedEvent decoded(const uscope_event& header, std::vector<DecodedValue> values) {
  DecodedEvent ev;
  ev.header = header;
  ev.n_values = values.size();
  ev.values = std::move(values);
  return ev;
}

uscope_event event_of(uint32_t probe_id, const char* comm) {
  uscope_event ev{};
  timespec mono{};
  clock_gettime(CLOCK_MONOTONIC, &mono);
  ev.ts = static_cast<uint64_t>(mono.tv_sec) * 1'000'000'000ull + mono.tv_nsec;
  ev.tgid = 1234;
  ev.tid = 1240;
  ev.cpu = 3;
  ev.probe_id = probe_id;
  ev.stack_len = 0;
  for (size_t i = 0; i < sizeof(ev.comm) && comm[i]; ++i) ev.comm[i] = comm[i];
  return ev;
}

TEST(trace_output, int_conversions_truncate_to_int_and_sign) {
  EXPECT_EQ(render(R"(p::f "%d", arg1)", {num(0xffffffffull)}), "-1");
  EXPECT_EQ(render(R"(p::f "%i", arg1)", {num(0xffffffffull)}), "-1");
  EXPECT_EQ(render(R"(p::f "%d", arg1)", {num(0x100000005ull)}), "5");
  EXPECT_EQ(render(R"(p::f "%u", arg1)", {num(0xffffffffull)}), "4294967295");
  EXPECT_EQ(render(R"(p::f "%u", arg1)", {num(UINT64_MAX)}), "4294967295");
  EXPECT_EQ(render(R"(p::f "%hd", arg1)", {num(0x18000)}), "-32768");
  EXPECT_EQ(render(R"(p::f "%hhu", arg1)", {num(0x1ff)}), "255");
  EXPECT_EQ(render(R"(p::f "%+d", arg1)", {num(5)}), "+5");
}

TEST(trace_output, long_conversions_use_64_bits) {
  EXPECT_EQ(render(R"(p::f "%ld", arg1)", {num(UINT64_MAX)}), "-1");
  EXPECT_EQ(render(R"(p::f "%lld", arg1)", {num(0x8000000000000000ull)}), "-9223372036854775808");
  EXPECT_EQ(render(R"(p::f "%lu", arg1)", {num(UINT64_MAX)}), "18446744073709551615");
  EXPECT_EQ(render(R"(p::f "%zu", arg1)", {num(UINT64_MAX)}), "18446744073709551615");
  EXPECT_EQ(render(R"(p::f "%zu", arg1)", {num(0x100000000ull)}), "4294967296");
  EXPECT_EQ(render(R"(p::f "%lx", arg1)", {num(0xdeadbeefcafeull)}), "deadbeefcafe");
}

TEST(trace_output, hex_pointer_and_char_conversions) {
  EXPECT_EQ(render(R"(p::f "%x", arg1)", {num(255)}), "ff");
  EXPECT_EQ(render(R"(p::f "%X", arg1)", {num(255)}), "FF");
  EXPECT_EQ(render(R"(p::f "%#x", arg1)", {num(255)}), "0xff");
  EXPECT_EQ(render(R"(p::f "%x", arg1)", {num(0x1000000ffull)}), "ff");
  EXPECT_EQ(render(R"(p::f "%08x", arg1)", {num(0xbeef)}), "0000beef");
  EXPECT_EQ(render(R"(p::f "%p", arg1)", {num(0x7ffd1234abcdull)}), "0x7ffd1234abcd");
  EXPECT_EQ(render(R"(p::f "%c", arg1)", {num('A')}), "A");
  EXPECT_EQ(render(R"(p::f "%c", arg1)", {num(0x141)}), "A");  // low byte
  EXPECT_EQ(render(R"(p::f "[%3c]", arg1)", {num('z')}), "[  z]");
}

TEST(trace_output, width_precision_and_flags) {
  EXPECT_EQ(render(R"(p::f "%5d|", arg1)", {num(42)}), "   42|");
  EXPECT_EQ(render(R"(p::f "%-5d|", arg1)", {num(42)}), "42   |");
  EXPECT_EQ(render(R"(p::f "%05d", arg1)", {num(42)}), "00042");
  EXPECT_EQ(render(R"(p::f "%.3d", arg1)", {num(7)}), "007");
  EXPECT_EQ(render(R"(p::f "%-8s|", str(arg1))", {text("ab")}), "ab      |");
  EXPECT_EQ(render(R"(p::f "%8.3s|", str(arg1))", {text("abcdef")}), "     abc|");
  EXPECT_EQ(render(R"(p::f "%12lu|", arg1)", {num(123456789)}), "   123456789|");
}

TEST(trace_output, literal_text_and_percent_escapes) {
  EXPECT_EQ(render(R"(p::f "100%% of %d%%, done", arg1)", {}), "100% of ?%, done");
  EXPECT_EQ(render(R"(p::f "100%% of %d%%, done", arg1)", {num(3)}), "100% of 3%, done");
  EXPECT_EQ(render(R"(p::f "%%")", {}), "%");
  EXPECT_EQ(render(R"(p::f "no conversions")", {}), "no conversions");
  EXPECT_EQ(render(R"(p::f "tab\there")", {}), "tab\there");
}

TEST(trace_output, missing_values_render_as_question_marks) {
  ProbePlan p = probe_of(R"(p::f "a=%d b=%s c=%x end", arg1, str(arg2), arg3)");
  EXPECT_EQ(format_message(p, std::vector<DecodedValue>{num(1)}), "a=1 b=? c=? end");
  EXPECT_EQ(format_message(p, std::vector<DecodedValue>{}), "a=? b=? c=? end");
}

TEST(trace_output, strings_escape_non_printable_bytes) {
  EXPECT_EQ(render(R"(p::f "<%s>", str(arg1))", {text(std::string("a\x01\xff\n\\b\0c", 8))}),
            "<a\\x01\\xff\\n\\\\b\\x00c>");
}

TEST(trace_output, printable_bytes_escapes) {
  EXPECT_EQ(printable_bytes("plain text ~!"), "plain text ~!");
  EXPECT_EQ(printable_bytes(std::string("\t\r\n\\\x7f\x1b\x80", 7)),
            "\\t\\r\\n\\\\\\x7f\\x1b\\x80");
  EXPECT_EQ(printable_bytes(std::string("\0", 1)), "\\x00");
  EXPECT_EQ(printable_bytes("caf\xc3\xa9"), "caf\\xc3\\xa9");
  EXPECT_EQ(printable_bytes(""), "");
}

TEST(trace_output, text_header_and_event_line_in_bcc_columns) {
  TracePlan plan;
  plan.probes.push_back(probe_of(R"(p::work "i=%d tag=%s", arg1, str(arg2))", "work"));
  OutputBuffer out(-1);
  TraceOutput t(plan, OutputFormat::Text, out);
  t.header();
  // bcc trace: "%-7s %-7s %-15s %-16s %s" with "-" over the messages.
  EXPECT_EQ(std::string(out.since(0)), "PID     TID     COMM            FUNC             -\n");
  t.event(decoded(event_of(0, "target_loop"), {num(0xffffffff), text("xyz")}));
  EXPECT_EQ(t.events(), 1u);
  std::string all = std::string(out.since(0));
  EXPECT_EQ(all.substr(all.find('\n') + 1),
            "1234    1240    target_loop     work             i=-1 tag=xyz\n");
}

TEST(trace_output, header_without_messages_has_no_message_column) {
  TracePlan plan;
  plan.probes.push_back(probe_of(R"(p::inet_pton)", "inet_pton"));
  OutputBuffer out(-1);
  TraceOutput t(plan, OutputFormat::Text, out);
  t.header();
  t.event(decoded(event_of(0, "ping"), {}));
  EXPECT_EQ(std::string(out.since(0)),
            "PID     TID     COMM            FUNC\n"
            "1234    1240    ping            inet_pton\n");
}

TEST(trace_output, time_and_cpu_columns) {
  TracePlan plan;
  plan.probes.push_back(probe_of(R"(p::work "%d", arg1)", "work"));
  for (auto [time, head, re] :
       {std::tuple{TraceColumns::Time::Clock, "TIME     CPU ", R"(\d\d:\d\d:\d\d 3   1234 .*\n)"},
        std::tuple{TraceColumns::Time::SinceStart, "TIME     CPU ", R"(\d+\.\d{6} +3   1234 .*\n)"},
        std::tuple{TraceColumns::Time::Unix, "TIME              CPU ",
                   R"(\d{10}\.\d{6} +3   1234 .*\n)"}}) {
    OutputBuffer out(-1);
    TraceColumns c;
    c.time = time;
    c.cpu = true;
    TraceOutput t(plan, OutputFormat::Text, out, c);
    t.header();
    t.event(decoded(event_of(0, "x"), {num(5)}));
    std::string all = std::string(out.since(0));
    EXPECT_EQ(all.substr(0, all.find("PID")), head);
    std::string line = all.substr(all.find('\n') + 1);
    EXPECT_TRUE(std::regex_match(line, std::regex(re))) << line;
  }
}

TEST(trace_output, message_filter_leaves_out_and_counts) {
  TracePlan plan;
  plan.probes.push_back(probe_of(R"(p::open "%s", str(arg1))", "open"));
  OutputBuffer out(-1);
  TraceColumns c;
  c.message_filter = "conf";
  TraceOutput t(plan, OutputFormat::Json, out, c);
  EXPECT_FALSE(t.event(decoded(event_of(0, "x"), {text("/etc/passwd")})));
  EXPECT_TRUE(t.event(decoded(event_of(0, "x"), {text("/etc/ld.so.conf")})));
  EXPECT_EQ(t.events(), 1u);
  EXPECT_EQ(t.message_filtered(), 1u);
  EXPECT_EQ(nlohmann::json::parse(std::string(out.since(0)))["message"], "/etc/ld.so.conf");
}

TEST(trace_output, user_and_kernel_symbol_conversions) {
  DecodedValue u = num(0x401234), k = num(0xffffffff81000000ull);
  u.symbol = "worker+0x0 [app]";
  EXPECT_EQ(render(R"(p::f "%U|%K", arg1, arg2)", {u, k}), "worker+0x0 [app]|0xffffffff81000000");
  EXPECT_EQ(render(R"(p::f "[%-20U]", arg1)", {u}), "[worker+0x0 [app]    ]");
}

TEST(trace_output, text_event_with_stacks_as_bcc_prints_them) {
  TracePlan plan;
  plan.probes.push_back(probe_of(R"(p::work)", "work"));
  OutputBuffer out(-1);
  TraceColumns c;
  c.stacks = true;
  c.addresses = true;
  TraceOutput t(plan, OutputFormat::Text, out, c);
  Frame f1;
  f1.address = 0x401234;
  f1.object = "/usr/bin/x";
  f1.function = "work";
  f1.function_offset = 0x4;
  Frame f2;
  f2.address = 0x401000;
  f2.object = "/usr/bin/x";
  f2.function = "main";
  Frame f3;
  f3.address = 0x7f0000001000;
  f3.object = "/usr/lib/libfoo.so";
  f3.miss = FrameMiss::UnknownAddress;
  Frame k;
  k.address = 0xffffffff81001000ull;
  k.object = "kernel";
  k.function = "asm_exc_int3";
  k.function_offset = 0x39;
  std::vector<Frame> stack = {f1, f2, f3}, kstack = {k};
  t.event(decoded(event_of(0, "x"), {}), EventStacks{&stack, &kstack});
  std::string s = std::string(out.since(0));
  const std::string tail =
      "        ffffffff81001000 asm_exc_int3+0x39 [kernel]\n"
      "                  401234 work+0x4 [x]\n"
      "                  401000 main+0x0 [x]\n"
      "            7f0000001000 [unknown: no symbol covers the address] [libfoo.so]\n\n";
  ASSERT_GE(s.size(), tail.size());
  EXPECT_EQ(s.substr(s.size() - tail.size()), tail);
  EXPECT_EQ(std::count(s.begin(), s.end(), '\n'), 6);
  EXPECT_EQ(t.events_in(s), 1u);
}

TEST(trace_output, unknown_probe_id_is_ignored) {
  TracePlan plan;
  plan.probes.push_back(probe_of(R"(p::work)", "work"));
  OutputBuffer out(-1);
  TraceOutput t(plan, OutputFormat::Json, out);
  t.event(decoded(event_of(1, "x"), {}));
  EXPECT_EQ(t.events(), 0u);
  EXPECT_EQ(std::string(out.since(0)), "");
}

TEST(trace_output, json_lines_event_fields) {
  TracePlan plan;
  plan.probes.push_back(probe_of(R"(p::work)", "work"));
  plan.probes.push_back(probe_of(R"(p::work "i=%d tag=%s c=%s", arg1, str(arg2), $comm)", "work"));
  OutputBuffer out(-1);
  TraceOutput t(plan, OutputFormat::Json, out);
  t.header();
  EXPECT_EQ(std::string(out.since(0)), "");  // no header in JSON Lines
  uscope_event ev = event_of(1, "target_loop");
  timespec rt{};
  clock_gettime(CLOCK_REALTIME, &rt);
  int64_t now = rt.tv_sec * 1'000'000'000LL + rt.tv_nsec;
  t.event(decoded(ev, {num(0xffffffff), text("xyz"), text("tl")}));
  std::string s = std::string(out.since(0));
  ASSERT_FALSE(s.empty());
  EXPECT_EQ(s.back(), '\n');
  EXPECT_EQ(std::count(s.begin(), s.end(), '\n'), 1);
  auto j = nlohmann::json::parse(s);
  EXPECT_EQ(j["kind"], "event");
  EXPECT_EQ(j["pid"], 1234);
  EXPECT_EQ(j["tid"], 1240);
  EXPECT_EQ(j["cpu"], 3);
  EXPECT_EQ(j["comm"], "target_loop");
  EXPECT_EQ(j["function"], "work");
  EXPECT_EQ(j["probe"], R"(p::work "i=%d tag=%s c=%s", arg1, str(arg2), $comm)");
  EXPECT_EQ(j["message"], "i=-1 tag=xyz c=tl");
  EXPECT_EQ(j["values"], nlohmann::json::parse(R"([4294967295, "xyz", "tl"])"));
  EXPECT_FALSE(j.contains("duration_ns"));
  EXPECT_FALSE(j.contains("stack"));
  // Wall-clock time: the monotonic timestamp moved onto the realtime clock.
  int64_t time_ns = j["time_ns"].get<int64_t>();
  EXPECT_LT(std::llabs(time_ns - now), 5'000'000'000LL) << time_ns << " vs " << now;
}

TEST(trace_output, json_lines_duration_stack_and_invalid_utf8) {
  TracePlan plan;
  plan.probes.push_back(probe_of(R"(r::work "%s", $entry(arg2))", "work"));
  OutputBuffer out(-1);
  TraceOutput t(plan, OutputFormat::Json, out);
  uscope_event ev = event_of(0, "w");
  ev.duration_ns = 1500;
  Frame f;
  f.address = 0x401234;
  f.object = "/usr/bin/x";
  f.function = "work";
  f.function_offset = 4;
  Frame gone;
  gone.address = 0x7f0000001000;
  gone.miss = FrameMiss::ProcessGone;
  std::vector<Frame> stack = {f, gone};
  t.event(decoded(ev, {text("a\xff\x01")}), EventStacks{&stack, nullptr});
  auto j = nlohmann::json::parse(std::string(out.since(0)));
  EXPECT_EQ(j["duration_ns"], 1500);
  // The message escapes bytes; the raw value has invalid UTF-8 replaced by U+FFFD.
  EXPECT_EQ(j["message"], "a\\xff\\x01");
  EXPECT_EQ(j["values"][0], "a\xef\xbf\xbd\x01");
  ASSERT_TRUE(j["stack"].is_array());
  ASSERT_EQ(j["stack"].size(), 2u);
  EXPECT_EQ(j["stack"][0]["address"], 0x401234);
  EXPECT_EQ(j["stack"][0]["function"], "work");
  EXPECT_EQ(j["stack"][0]["offset"], 4);
  EXPECT_EQ(j["stack"][0]["object"], "/usr/bin/x");
  EXPECT_FALSE(j["stack"][0].contains("unknown"));
  // A frame without a name says why, as the text's "[unknown: process gone]" does.
  EXPECT_EQ(j["stack"][1]["function"], "");
  EXPECT_EQ(j["stack"][1]["unknown"], "process gone");
}

TEST(trace_output, comm_of_full_length_is_not_overrun) {
  TracePlan plan;
  plan.probes.push_back(probe_of(R"(p::work)", "work"));
  OutputBuffer out(-1);
  TraceOutput t(plan, OutputFormat::Json, out);
  uscope_event ev = event_of(0, "");
  std::memcpy(ev.comm, "0123456789abcdef", 16);  // no NUL
  ev.return_address = 0x4141414141414141;        // what follows comm must not leak in
  t.event(decoded(ev, {}));
  auto j = nlohmann::json::parse(std::string(out.since(0)));
  EXPECT_EQ(j["comm"], "0123456789abcdef");
}

DecodedValue cut(std::string s) {
  DecodedValue f = text(std::move(s));
  f.truncated = true;
  return f;
}

TEST(trace_output, conversions_match_snprintf) {
  // The hand-written renderer against the C library for a spread of flags, widths and values.
  const char* specs[] = {"%d",   "%5d",  "%-5d", "%05d", "%+d", "% d",   "%.3d",  "%8.3d", "%-08d",
                         "%.0d", "%u",   "%x",   "%#x",  "%#X", "%08x",  "%#08x", "%-#8x", "%.5x",
                         "%hd",  "%hhd", "%hu",  "%hhx", "%ld", "%lu",   "%lx",   "%+ld",  "%020lu",
                         "%zu",  "%zd",  "%lld", "%llx", "%i",  "%+.4i", "%c",    "%3c",   "%-3c|"};
  const uint64_t values[] = {
      0,          1,       7,     42,         255,        0x7fffffff,      0x80000000,
      0xffffffff, 0x18000, 0x1ff, UINT64_MAX, 1ull << 63, 123456789012ull, 0xdeadbeefcafeull};
  for (const char* spec : specs) {
    std::string conv = spec;
    bool is_long = conv.find('l') != std::string::npos || conv.find('z') != std::string::npos;
    bool is_char = conv.find('c') != std::string::npos;
    bool is_signed = conv.find('d') != std::string::npos || conv.find('i') != std::string::npos;
    std::string c_spec = conv;
    if (auto z = c_spec.find('z'); z != std::string::npos) c_spec.replace(z, 1, "l");
    for (uint64_t v : values) {
      char want[128];
      int n = 0;
      if (is_char)
        n = std::snprintf(want, sizeof want, c_spec.c_str(), static_cast<int>(v & 0xff));
      else if (is_long && is_signed)
        n = std::snprintf(want, sizeof want, c_spec.c_str(), static_cast<long long>(v));
      else if (is_long)
        n = std::snprintf(want, sizeof want, c_spec.c_str(), static_cast<unsigned long long>(v));
      else if (is_signed)
        n = std::snprintf(want, sizeof want, c_spec.c_str(), static_cast<int>(v));
      else
        n = std::snprintf(want, sizeof want, c_spec.c_str(), static_cast<unsigned>(v));
      std::string probe = std::string("p::f \"") + spec + "\", arg1";
      EXPECT_EQ(render(probe, {num(v)}), std::string(want, static_cast<size_t>(n)))
          << spec << " of " << v;
    }
  }
}

TEST(trace_output, null_pointer_prints_as_nil) {
  EXPECT_EQ(render(R"(p::f "%p", arg1)", {num(0)}), "(nil)");
}

TEST(trace_output, truncated_string_ends_with_ellipsis_in_text) {
  EXPECT_EQ(render(R"(p::f "<%s>", str(arg1))", {cut("abc")}), "<abc\xe2\x80\xa6>");
  EXPECT_EQ(render(R"(p::f "<%6s>", str(arg1))", {cut("ab")}), "<   ab\xe2\x80\xa6>");
  EXPECT_EQ(render(R"(p::f "<%.2s>", str(arg1))", {cut("abcdef")}), "<ab\xe2\x80\xa6>");
  EXPECT_EQ(render(R"(p::f "<%s>", str(arg1))", {text("abc")}), "<abc>");
}

TEST(trace_output, json_marks_truncated_events) {
  TracePlan plan;
  plan.probes.push_back(probe_of(R"(p::work "%s %s", str(arg1), str(arg2))", "work"));
  OutputBuffer out(-1);
  TraceOutput t(plan, OutputFormat::Json, out);
  t.event(decoded(event_of(0, "w"), {text("whole"), cut("cu")}));
  t.event(decoded(event_of(0, "w"), {text("a"), text("b")}));
  std::string s(out.since(0));
  auto second = s.find('\n') + 1;
  auto j = nlohmann::json::parse(s.substr(0, second));
  EXPECT_EQ(j["truncated"], true);
  EXPECT_EQ(j["values"], nlohmann::json::parse(R"(["whole", "cu"])"));
  EXPECT_EQ(j["message"], "whole cu\u2026");
  EXPECT_FALSE(nlohmann::json::parse(s.substr(second)).contains("truncated"));
  EXPECT_EQ(t.truncated_strings(), 1u);
}

TEST(trace_output, json_strings_escape_and_stay_valid) {
  TracePlan plan;
  // A literal tab and quote in the format, and a comm with a newline (prctl allows it).
  plan.probes.push_back(probe_of("p::work \"q\\\"\\t%s\", str(arg1)", "wo\"rk"));
  OutputBuffer out(-1);
  TraceOutput t(plan, OutputFormat::Json, out);
  std::string raw = std::string("\"\\/\x01\x1f\x7f caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80 ") +
                    "\xc3(\xed\xa0\x80\xf8\x80" + std::string(1, '\0');
  uscope_event ev = event_of(0, "a\nb");
  t.event(decoded(ev, {text(raw)}));
  std::string s(out.since(0));
  EXPECT_EQ(std::count(s.begin(), s.end(), '\n'), 1) << s;
  auto j = nlohmann::json::parse(s);
  EXPECT_EQ(j["comm"], "a\nb");
  EXPECT_EQ(j["function"], "wo\"rk");
  // Valid UTF-8 is kept; bytes that start no valid sequence become U+FFFD, one each.
  EXPECT_EQ(j["values"][0],
            std::string("\"\\/\x01\x1f\x7f caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80 ") +
                "\xef\xbf\xbd(\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd" +
                std::string(1, '\0'));
  EXPECT_EQ(j["message"].get<std::string>().substr(0, 3), "q\"\t");
  // What nlohmann-json writes for the same string parses to the same value.
  EXPECT_EQ(j["values"][0], nlohmann::json::parse(nlohmann::json(raw).dump(
                                -1, ' ', false, nlohmann::json::error_handler_t::replace)));
}

TEST(trace_output, text_comm_is_made_printable) {
  TracePlan plan;
  plan.probes.push_back(probe_of(R"(p::work)", "work"));
  OutputBuffer out(-1);
  TraceOutput t(plan, OutputFormat::Text, out);
  t.event(decoded(event_of(0, "a\nb"), {}));
  std::string s(out.since(0));
  EXPECT_EQ(std::count(s.begin(), s.end(), '\n'), 1) << s;
  EXPECT_NE(s.find(" a\\nb "), std::string::npos) << s;
}

TEST(trace_output, events_in_counts_records_of_each_format) {
  TracePlan plan;
  plan.probes.push_back(probe_of(R"(p::work)", "work"));
  Frame f;
  f.function = "main";
  std::vector<Frame> stack = {f, f};
  for (auto format : {OutputFormat::Text, OutputFormat::Json}) {
    for (bool stacks : {false, true}) {
      OutputBuffer out(-1);
      TraceColumns c;
      c.stacks = stacks;
      TraceOutput t(plan, format, out, c);
      for (int i = 0; i < 3; ++i)
        t.event(decoded(event_of(0, "x"), {}), EventStacks{stacks ? &stack : nullptr, nullptr});
      EXPECT_EQ(t.events_in(out.since(0)), 3u) << static_cast<int>(format) << stacks;
    }
  }
}

TEST(trace_output, steady_state_formatting_does_not_allocate) {
  // The event path must not call malloc once buffers have grown (a system-wide malloc probe
  // would make uscope trap on itself): count operator new calls across many events.
  TracePlan plan;
  plan.probes.push_back(probe_of(R"(p::work "i=%d s=%-8s p=%p", arg1, str(arg2), arg3)", "work"));
  for (auto format : {OutputFormat::Text, OutputFormat::Json}) {
    OutputBuffer out(-1, 1 << 16);
    TraceColumns c;
    c.time = TraceColumns::Time::Clock;  // the wall-time cache is on the path too
    c.cpu = true;
    TraceOutput t(plan, format, out, c);
    DecodedEvent ev = decoded(event_of(0, "x"), {num(1), text("tag\x01"), num(0x1234)});
    for (int i = 0; i < 10; ++i) t.event(ev);
    out.truncate(0);
    uint64_t before = test_allocations;
    for (int i = 0; i < 1000; ++i) {
      ev.header.ts += 1'000'000;  // crosses seconds: the cached wall time is refreshed
      t.event(ev);
      if (out.pending() > 60000) out.truncate(0);
    }
    EXPECT_EQ(test_allocations - before, 0u) << static_cast<int>(format);
  }
}

}  // namespace
}  // namespace uscope

void* operator new(size_t n) {
  ++test_allocations;
  if (void* p = std::malloc(n ? n : 1)) return p;
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept {
  std::free(p);
}
void operator delete(void* p, size_t) noexcept {
  std::free(p);
}
