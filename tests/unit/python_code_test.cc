// Python line tables and code objects. The 3.11 location table is checked against python3.11
// itself: for every code object of a few stdlib modules (and a source made to need long and
// negative line deltas), its co_lines() ranges and the line of every instruction. The 3.10 and
// <= 3.9 formats against tables made by hand from Objects/lnotab_notes.txt. Code objects and
// strings read from a fake target memory laid out as 3.11's.
#include "symbolize/python_code.h"

#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "python_fake_target.h"
#include "tool_output.h"

namespace uscope {
namespace {

using Bytes = std::vector<uint8_t>;

// Per code object: "first_line hex_table n_ranges (start end line)* n_instr line*", bytes of
// co_lines() halved to code units, None as -1.
constexpr const char* kDumpScript = R"PY(
import argparse, dataclasses, json.decoder, types
src = "def far():\n" + "\n" * 300 + "    x = 1\n" + "\n" * 70 + "    return [\n        y\n        for y in range(3)\n    ]\n"
src += "def back(a,\n         b):\n    return (a +\n            b)\n"
extra = compile(src, "made.py", "exec")
seen = set()
def walk(c):
    if id(c) in seen: return
    seen.add(id(c))
    ranges = list(c.co_lines())
    lines = []
    for i in range(len(c.co_code) // 2):
        line = -1
        for s, e, l in ranges:
            if s <= 2 * i < e:
                line = -1 if l is None else l
                break
        lines.append(line)
    parts = [c.co_firstlineno, c.co_linetable.hex() or "-", len(ranges)]
    for s, e, l in ranges: parts += [s // 2, e // 2, -1 if l is None else l]
    parts += [len(lines)] + lines
    print(*parts)
    for k in c.co_consts:
        if isinstance(k, types.CodeType): walk(k)
for m in (argparse, dataclasses, json.decoder):
    for v in vars(m).values():
        for f in ([v] + list(vars(v).values()) if isinstance(v, type) else [v]):
            if isinstance(f, types.FunctionType): walk(f.__code__)
walk(extra)
)PY";

Bytes from_hex(const std::string& hex) {
  Bytes b;
  if (hex == "-") return b;
  for (size_t i = 0; i + 1 < hex.size(); i += 2)
    b.push_back(static_cast<uint8_t>(std::stoul(hex.substr(i, 2), nullptr, 16)));
  return b;
}

TEST(python_code, location_table_lines_are_python3_11s) {
  std::string script = kDumpScript;
  std::string out = test::command_output("python3.11 -c '" + script + "'");
  std::istringstream in(out);
  std::string row;
  size_t codes = 0, instructions = 0, long_deltas = 0, no_line = 0;
  while (std::getline(in, row)) {
    std::istringstream r(row);
    int first_line = 0;
    std::string hex;
    size_t n_ranges = 0, n_instr = 0;
    r >> first_line >> hex >> n_ranges;
    Bytes table = from_hex(hex);
    std::vector<PythonLineRange> want(n_ranges);
    for (auto& w : want) r >> w.start >> w.end >> w.line;
    auto got = decode_python_line_table(PythonLineTable::Locations, first_line, table);
    ASSERT_EQ(got.size(), want.size()) << row;
    for (size_t i = 0; i < want.size(); ++i) {
      EXPECT_EQ(got[i].start, want[i].start) << row;
      EXPECT_EQ(got[i].end, want[i].end) << row;
      EXPECT_EQ(got[i].line, want[i].line) << row;
      if (want[i].line == -1) ++no_line;
    }
    r >> n_instr;
    for (uint32_t i = 0; i < n_instr; ++i) {
      int line = 0;
      r >> line;
      ASSERT_EQ(python_line_of(PythonLineTable::Locations, first_line, table, i), line)
          << "instruction " << i << " of " << row;
    }
    for (size_t i = 0; i + 1 < want.size(); ++i)
      if (want[i + 1].line - want[i].line > 63 || want[i + 1].line < want[i].line - 1)
        ++long_deltas;
    instructions += n_instr;
    ++codes;
  }
  // Enough of every kind of entry to mean something.
  EXPECT_GT(codes, 200u) << out.substr(0, 2000);
  EXPECT_GT(instructions, 20000u);
  EXPECT_GT(long_deltas, 2u);
  EXPECT_GT(no_line, 10u);
}

TEST(python_code, past_the_end_of_the_table_there_is_no_line) {
  // One short-form entry of 2 code units on the first line.
  Bytes table = {0x80 | (0 << 3) | 1, 0x00};
  EXPECT_EQ(python_line_of(PythonLineTable::Locations, 10, table, 0), 10);
  EXPECT_EQ(python_line_of(PythonLineTable::Locations, 10, table, 1), 10);
  EXPECT_EQ(python_line_of(PythonLineTable::Locations, 10, table, 2), -1);
  // A varint cut short ends the decode at the last whole entry.
  Bytes cut = {0x80 | (0 << 3) | 1, 0x00, 0x80 | (13 << 3), 0x41};
  EXPECT_EQ(decode_python_line_table(PythonLineTable::Locations, 10, cut).size(), 1u);
}

TEST(python_code, linetable_of_3_10) {
  // (byte delta, line delta) pairs: 6 bytes on first+1, then a line jump of 300 taking three
  // pairs (127, 127, 46) whose first two cover no bytes, then 4 bytes with no line (-128), then 2
  // bytes back 3 lines.
  Bytes t = {6, 1, 0, 127, 0, 127, 10, 46, 4, 0x80, 2, 0xfd};
  auto r = decode_python_line_table(PythonLineTable::Linetable, 100, t);
  ASSERT_EQ(r.size(), 4u);
  EXPECT_EQ(r[0].start, 0u);
  EXPECT_EQ(r[0].end, 3u);
  EXPECT_EQ(r[0].line, 101);
  EXPECT_EQ(r[1].start, 3u);
  EXPECT_EQ(r[1].end, 8u);
  EXPECT_EQ(r[1].line, 401);
  EXPECT_EQ(r[2].line, -1);
  EXPECT_EQ(r[3].start, 10u);
  EXPECT_EQ(r[3].line, 398);
  EXPECT_EQ(python_line_of(PythonLineTable::Linetable, 100, t, 2), 101);
  EXPECT_EQ(python_line_of(PythonLineTable::Linetable, 100, t, 7), 401);
  EXPECT_EQ(python_line_of(PythonLineTable::Linetable, 100, t, 9), -1);
  EXPECT_EQ(python_line_of(PythonLineTable::Linetable, 100, t, 10), 398);
  EXPECT_EQ(python_line_of(PythonLineTable::Linetable, 100, t, 11), -1);
}

TEST(python_code, lnotab_of_3_9_and_before) {
  // lnotab_notes.txt's walk: bytes [0, 6) line 1, [6, 50) line 2, [50, 350) line 7 (the 300
  // bytes take two pairs, 255 + 45), [350, 361) line 307 (200 more lines: two pairs of 100 that
  // cover no bytes), [361, 365) 308, then back 2 lines to the end.
  Bytes t = {6, 1, 44, 5, 255, 0, 45, 100, 0, 100, 0, 100, 11, 1, 4, 0xfe};
  EXPECT_EQ(python_line_of(PythonLineTable::Lnotab, 1, t, 0), 1);
  EXPECT_EQ(python_line_of(PythonLineTable::Lnotab, 1, t, 2), 1);
  EXPECT_EQ(python_line_of(PythonLineTable::Lnotab, 1, t, 3), 2);
  EXPECT_EQ(python_line_of(PythonLineTable::Lnotab, 1, t, 25), 7);
  EXPECT_EQ(python_line_of(PythonLineTable::Lnotab, 1, t, 174), 7);
  EXPECT_EQ(python_line_of(PythonLineTable::Lnotab, 1, t, 175), 307);
  EXPECT_EQ(python_line_of(PythonLineTable::Lnotab, 1, t, 180), 307);
  EXPECT_EQ(python_line_of(PythonLineTable::Lnotab, 1, t, 181), 308);
  EXPECT_EQ(python_line_of(PythonLineTable::Lnotab, 1, t, 182), 308);
  EXPECT_EQ(python_line_of(PythonLineTable::Lnotab, 1, t, 183), 306);
  EXPECT_EQ(python_line_of(PythonLineTable::Lnotab, 1, t, 5000), 306);
  EXPECT_EQ(python_line_of(PythonLineTable::Lnotab, 42, {}, 7), 42);
}

TEST(python_code, table_kind_follows_the_version) {
  EXPECT_EQ(python_line_table_kind({3, 8, 0}), PythonLineTable::Lnotab);
  EXPECT_EQ(python_line_table_kind({3, 9, 18}), PythonLineTable::Lnotab);
  EXPECT_EQ(python_line_table_kind({3, 10, 4}), PythonLineTable::Linetable);
  EXPECT_EQ(python_line_table_kind({3, 11, 2}), PythonLineTable::Locations);
  EXPECT_EQ(python_line_table_kind({3, 13, 0}), PythonLineTable::Locations);
}

void put_u64(Bytes& b, size_t off, uint64_t v) {
  std::memcpy(b.data() + off, &v, 8);
}
void put_u32(Bytes& b, size_t off, uint32_t v) {
  std::memcpy(b.data() + off, &v, 4);
}

// A compact str of `kind` (1, 2, 4) holding `chars`, as 3.11 (PyASCIIObject 48 bytes,
// PyCompactUnicodeObject 72) lays it out.
Bytes str_object(const std::vector<uint32_t>& chars, uint32_t kind, bool ascii) {
  size_t header = ascii ? 48 : 72;
  Bytes b(header + chars.size() * kind + kind, 0);
  put_u64(b, 16, chars.size());
  put_u32(b, 32, kind << 2 | 1 << 5 | (ascii ? 1 : 0) << 6 | 1 << 7);
  for (size_t i = 0; i < chars.size(); ++i)
    std::memcpy(b.data() + header + i * kind, &chars[i], kind);
  return b;
}

Bytes ascii(const std::string& s) {
  return str_object({s.begin(), s.end()}, 1, true);
}

TEST(python_code, reads_a_code_object_and_its_strings) {
  auto layout = python_layout_for({3, 11, 2});
  ASSERT_TRUE(layout);
  test::FakePythonTarget t;
  Bytes code(200, 0);
  put_u32(code, 72, 40);        // co_firstlineno
  put_u64(code, 112, 0x10000);  // co_filename
  put_u64(code, 120, 0x20000);  // co_name
  put_u64(code, 128, 0x30000);  // co_qualname
  put_u64(code, 136, 0x40000);  // co_linetable
  t.put(0x1000, code);
  t.put(0x10000, ascii("/srv/app.py"));
  t.put(0x20000, ascii("handle"));
  // "Caf\u00e9.h\u00e4ndle\u2603" in UCS-2 (kind 2), not ASCII.
  t.put(0x30000,
        str_object({'C', 'a', 'f', 0xe9, '.', 'h', 0xe4, 'n', 'd', 'l', 'e', 0x2603}, 2, false));
  Bytes table = {0x80 | (10 << 3) | 3, 1, 5, 0x80 | (13 << 3) | 0, 0x06};  // line +0, then +3
  Bytes bytes(32 + table.size() + 1, 0);
  put_u64(bytes, 16, table.size());
  std::memcpy(bytes.data() + 32, table.data(), table.size());
  t.put(0x40000, bytes);

  auto c = read_python_code(*layout, {3, 11, 2}, t.memory(), 0x1000);
  ASSERT_TRUE(c) << c.error().message;
  EXPECT_EQ(c->qualname, "Caf\xc3\xa9.h\xc3\xa4ndle\xe2\x98\x83");
  EXPECT_EQ(c->filename, "/srv/app.py");
  EXPECT_EQ(c->first_line, 40);
  EXPECT_EQ(c->line_table, table);
  EXPECT_EQ(c->line_of(0), 40);
  EXPECT_EQ(c->line_of(3), 40);
  EXPECT_EQ(c->line_of(4), 43);
  EXPECT_EQ(c->line_of(5), -1);

  // The cache reads it once per (pid, address), and forgets a process.
  PythonRuntime rt;
  rt.pid = 77;
  rt.object.version = {3, 11, 2};
  rt.layout = *layout;
  PythonCodeCache cache;
  auto mem = t.memory();
  auto first = cache.get(rt, mem, 0x1000);
  ASSERT_TRUE(first) << first.error().message;
  size_t reads = t.reads;
  auto again = cache.get(rt, mem, 0x1000);
  ASSERT_TRUE(again);
  EXPECT_EQ(*again, *first);
  EXPECT_EQ(t.reads, reads);
  EXPECT_EQ(cache.size(), 1u);
  cache.forget(78);
  EXPECT_EQ(cache.size(), 1u);
  cache.forget(77);
  EXPECT_EQ(cache.size(), 0u);

  // Unreadable or nonsensical parts are refused, naming them.
  t.blocks.erase(0x10000);
  auto no_file = read_python_code(*layout, {3, 11, 2}, t.memory(), 0x1000);
  ASSERT_FALSE(no_file);
  EXPECT_NE(no_file.error().message.find("its file"), std::string::npos) << no_file.error().message;
  t.put(0x10000, ascii("/srv/app.py"));
  put_u64(bytes, 16, uint64_t{1} << 40);
  t.put(0x40000, bytes);
  auto huge = read_python_code(*layout, {3, 11, 2}, t.memory(), 0x1000);
  ASSERT_FALSE(huge);
  EXPECT_NE(huge.error().message.find("its line table"), std::string::npos) << huge.error().message;
  EXPECT_FALSE(read_python_code(*layout, {3, 11, 2}, t.memory(), 0x9999999));
}

}  // namespace
}  // namespace uscope
