// Decoding of event payloads as trace.bpf.c writes them (u64 values; u32 length + bytes strings)
// and their rendering: printf conversions, escapes, truncated payloads, and the text and JSON Lines
// event formats.
#include "sink/trace_output.h"

#include <gtest/gtest.h>

#include <time.h>
#include <tuple>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <nlohmann/json.hpp>
#include <regex>
#include <string>
#include <string_view>
#include <vector>

#include "mem_file.h"
#include "plan/recipe.h"

namespace uscope {
namespace {

// The payload of one event, laid out as the BPF side emits it.
struct Payload {
  std::vector<uint8_t> bytes;
  Payload& u64(uint64_t v) {
    const auto* p = reinterpret_cast<const uint8_t*>(&v);
    bytes.insert(bytes.end(), p, p + 8);
    return *this;
  }
  Payload& str(std::string_view s) {
    auto n = static_cast<uint32_t>(s.size());
    const auto* p = reinterpret_cast<const uint8_t*>(&n);
    bytes.insert(bytes.end(), p, p + 4);
    bytes.insert(bytes.end(), s.begin(), s.end());
    return *this;
  }
  // A string the BPF side could not read: flags and length, then the user address.
  Payload deferred(uint32_t len, bool exact, uint64_t addr) {
    uint32_t head = TRACE_STR_DEFERRED | (exact ? TRACE_STR_EXACT : 0) | len;
    const auto* p = reinterpret_cast<const uint8_t*>(&head);
    bytes.insert(bytes.end(), p, p + 4);
    return u64(addr);
  }
};

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

FieldValue num(uint64_t v) {
  FieldValue f;
  f.number = v;
  return f;
}

FieldValue text(std::string s) {
  FieldValue f;
  f.is_string = true;
  f.text = std::move(s);
  return f;
}

// Renders `spec` with `values`.
std::string render(std::string_view spec, std::vector<FieldValue> values) {
  return format_message(probe_of(spec), values);
}

using test::MemFile;

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
  std::strncpy(ev.comm, comm, sizeof(ev.comm));
  return ev;
}

TEST(trace_output, decodes_values_and_strings_in_emit_order) {
  ProbePlan p = probe_of(R"(p::f "%d %s %lu %s", arg1, str(arg2), arg3, $comm)");
  ASSERT_EQ(p.fields.size(), 4u);
  Payload data;
  data.u64(0xffffffffffffff85ull).str("hello").u64(42).str("");
  auto v = decode_fields(p, data.bytes);
  ASSERT_EQ(v.size(), 4u);
  EXPECT_FALSE(v[0].is_string);
  EXPECT_EQ(v[0].number, 0xffffffffffffff85ull);
  EXPECT_TRUE(v[1].is_string);
  EXPECT_EQ(v[1].text, "hello");
  EXPECT_FALSE(v[2].is_string);
  EXPECT_EQ(v[2].number, 42u);
  EXPECT_TRUE(v[3].is_string);
  EXPECT_EQ(v[3].text, "");
}

TEST(trace_output, deferred_strings_are_read_late_or_marked_unreadable) {
  ProbePlan p = probe_of(R"(p::f "%s|%s|%d", str(arg1), str(arg2, arg3), arg4)");
  Payload data;
  data.deferred(128, false, 0x1000);
  data.deferred(5, true, 0x2000);
  data.u64(9);
  std::vector<std::tuple<uint64_t, uint32_t, bool>> asked;
  LateStringReader reader = [&](uint64_t addr, uint32_t len,
                                bool exact) -> std::optional<std::string> {
    asked.emplace_back(addr, len, exact);
    if (addr == 0x1000) return std::string("late");
    return std::nullopt;
  };
  auto v = decode_fields(p, data.bytes, reader);
  ASSERT_EQ(v.size(), 3u);
  EXPECT_EQ(asked, (std::vector<std::tuple<uint64_t, uint32_t, bool>>{{0x1000, 128, false},
                                                                      {0x2000, 5, true}}));
  EXPECT_TRUE(v[0].late);
  EXPECT_EQ(v[0].text, "late");
  EXPECT_TRUE(v[1].unreadable);
  EXPECT_EQ(v[1].text, "");
  EXPECT_EQ(v[2].number, 9u);
  EXPECT_EQ(format_message(p, v), "late||9");

  auto without = decode_fields(p, data.bytes);
  ASSERT_EQ(without.size(), 3u);
  EXPECT_TRUE(without[0].unreadable);
  EXPECT_EQ(without[2].number, 9u);
}

TEST(trace_output, decoding_stops_at_truncated_data) {
  ProbePlan p = probe_of(R"(p::f "%d %d %s", arg1, arg2, arg3)");
  Payload data;
  data.u64(7);
  data.bytes.resize(8 + 5);  // half of the second value
  auto v = decode_fields(p, data.bytes);
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(v[0].number, 7u);

  // A string whose length runs past the end keeps the bytes that are there.
  Payload s;
  s.u64(1).u64(2).str("abcdef");
  s.bytes.resize(s.bytes.size() - 3);
  auto w = decode_fields(p, s.bytes);
  ASSERT_EQ(w.size(), 3u);
  EXPECT_EQ(w[2].text, "abc");

  // Not even the string's length.
  Payload l;
  l.u64(1).u64(2);
  l.bytes.push_back(3);
  l.bytes.push_back(0);
  EXPECT_EQ(decode_fields(p, l.bytes).size(), 2u);
  EXPECT_TRUE(decode_fields(p, {}).empty());
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
  EXPECT_EQ(format_message(p, {num(1)}), "a=1 b=? c=? end");
  EXPECT_EQ(format_message(p, {}), "a=? b=? c=? end");
  // Through the decoder: the payload ends after the first value.
  Payload data;
  data.u64(9).bytes.push_back(0);
  EXPECT_EQ(format_message(p, decode_fields(p, data.bytes)), "a=9 b=? c=? end");
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

TEST(trace_output, text_header_and_event_line) {
  TracePlan plan;
  plan.probes.push_back(probe_of(R"(p::work "i=%d tag=%s", arg1, str(arg2))", "work"));
  MemFile out;
  TraceOutput t(plan, TraceOutput::Format::Text, out.get());
  t.header();
  EXPECT_EQ(out.str(),
            "TIME                PID     TID COMM             FUNC                 MESSAGE\n");
  Payload data;
  data.u64(0xffffffff).str("xyz");
  t.event(event_of(0, "target_loop"), data.bytes, nullptr);
  EXPECT_EQ(t.events(), 1u);
  std::string all = out.str();
  std::string line = all.substr(all.find('\n') + 1);
  std::smatch m;
  ASSERT_TRUE(std::regex_match(line, m, std::regex(R"((\d\d:\d\d:\d\d\.\d{6}) (.*)\n)"))) << line;
  EXPECT_EQ(m[2].str(), "   1234    1240 target_loop      work                 i=-1 tag=xyz");
}

TEST(trace_output, text_event_with_stack) {
  TracePlan plan;
  plan.probes.push_back(probe_of(R"(p::work)", "work"));
  MemFile out;
  TraceOutput t(plan, TraceOutput::Format::Text, out.get());
  Frame f1;
  f1.address = 0x401234;
  f1.object = "/usr/bin/x";
  f1.function = "work";
  f1.function_offset = 0x4;
  Frame f2;
  f2.address = 0x401000;
  f2.object = "/usr/bin/x";
  f2.function = "main";
  std::vector<Frame> stack = {f1, f2};
  t.event(event_of(0, "x"), {}, &stack);
  std::string s = out.str();
  const std::string tail = "        work+0x4 (/usr/bin/x)\n        main (/usr/bin/x)\n\n";
  ASSERT_GE(s.size(), tail.size());
  EXPECT_EQ(s.substr(s.size() - tail.size()), tail);
  EXPECT_EQ(std::count(s.begin(), s.end(), '\n'), 4);
}

TEST(trace_output, unknown_probe_id_is_ignored) {
  TracePlan plan;
  plan.probes.push_back(probe_of(R"(p::work)", "work"));
  MemFile out;
  TraceOutput t(plan, TraceOutput::Format::JsonLines, out.get());
  t.event(event_of(1, "x"), {}, nullptr);
  EXPECT_EQ(t.events(), 0u);
  EXPECT_EQ(out.str(), "");
}

TEST(trace_output, json_lines_event_fields) {
  TracePlan plan;
  plan.probes.push_back(probe_of(R"(p::work)", "work"));
  plan.probes.push_back(probe_of(R"(p::work "i=%d tag=%s c=%s", arg1, str(arg2), $comm)", "work"));
  MemFile out;
  TraceOutput t(plan, TraceOutput::Format::JsonLines, out.get());
  t.header();
  EXPECT_EQ(out.str(), "");  // no header in JSON Lines
  Payload data;
  data.u64(0xffffffff).str("xyz").str("tl");
  uscope_event ev = event_of(1, "target_loop");
  timespec rt{};
  clock_gettime(CLOCK_REALTIME, &rt);
  int64_t now = rt.tv_sec * 1'000'000'000LL + rt.tv_nsec;
  t.event(ev, data.bytes, nullptr);
  std::string s = out.str();
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
  MemFile out;
  TraceOutput t(plan, TraceOutput::Format::JsonLines, out.get());
  uscope_event ev = event_of(0, "w");
  ev.duration_ns = 1500;
  Payload data;
  data.str("a\xff\x01");
  Frame f;
  f.address = 0x401234;
  f.object = "/usr/bin/x";
  f.function = "work";
  f.function_offset = 4;
  std::vector<Frame> stack = {f};
  t.event(ev, data.bytes, &stack);
  auto j = nlohmann::json::parse(out.str());
  EXPECT_EQ(j["duration_ns"], 1500);
  // The message escapes bytes; the raw value has invalid UTF-8 replaced by U+FFFD.
  EXPECT_EQ(j["message"], "a\\xff\\x01");
  EXPECT_EQ(j["values"][0], "a\xef\xbf\xbd\x01");
  ASSERT_TRUE(j["stack"].is_array());
  ASSERT_EQ(j["stack"].size(), 1u);
  EXPECT_EQ(j["stack"][0]["address"], 0x401234);
  EXPECT_EQ(j["stack"][0]["function"], "work");
  EXPECT_EQ(j["stack"][0]["offset"], 4);
  EXPECT_EQ(j["stack"][0]["object"], "/usr/bin/x");
}

TEST(trace_output, comm_of_full_length_is_not_overrun) {
  TracePlan plan;
  plan.probes.push_back(probe_of(R"(p::work)", "work"));
  MemFile out;
  TraceOutput t(plan, TraceOutput::Format::JsonLines, out.get());
  uscope_event ev = event_of(0, "");
  std::memcpy(ev.comm, "0123456789abcdef", 16);  // no NUL
  ev.return_address = 0x4141414141414141;        // what follows comm must not leak in
  t.event(ev, {}, nullptr);
  auto j = nlohmann::json::parse(out.str());
  EXPECT_EQ(j["comm"], "0123456789abcdef");
}

}  // namespace
}  // namespace uscope
