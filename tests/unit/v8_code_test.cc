// V8's postmortem constants and the JavaScript functions read with them: the constants of the
// installed node checked against V8's own frame layout (x64 frame-constants.h), the layout's
// refusals, and functions, strings and lines read from a fake heap laid out as node 18's V8.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>

#include "discover/v8_runtime.h"
#include "python_fake_target.h"
#include "symbolize/v8_code.h"

namespace uscope {
namespace {

// node 18's (V8 10.2) values, as libnode.so.108 holds them.
V8Constants node18_constants() {
  return {{"off_fp_context_or_frame_type", -8},
          {"off_fp_function", -16},
          {"off_fp_bytecode_offset", -40},
          {"off_fp_bytecode_array", -32},
          {"type_BytecodeArray__BYTECODE_ARRAY_TYPE", 195},
          {"class_HeapObject__map__Map", 0},
          {"class_Map__instance_type__uint16_t", 12},
          {"class_JSFunction__shared__SharedFunctionInfo", 24},
          {"class_BytecodeArray__data__uintptr_t", 56},
          {"type_SharedFunctionInfo__SHARED_FUNCTION_INFO_TYPE", 257},
          {"class_SharedFunctionInfo__name_or_scope_info__Object", 16},
          {"class_SharedFunctionInfo__script_or_debug_info__HeapObject", 32},
          {"class_Script__name__Object", 16},
          {"class_Script__source__Object", 8},
          {"class_Script__line_ends__Object", 56},
          {"class_FixedArrayBase__length__SMI", 8},
          {"class_FixedArray__data__uintptr_t", 16},
          {"scopeinfo_idx_first_vars", 3},
          {"scopeinfo_idx_ncontextlocals", 2},
          {"type_Script__SCRIPT_TYPE", 170},
          {"type_ScopeInfo__SCOPE_INFO_TYPE", 256},
          {"type_FixedArray__FIXED_ARRAY_TYPE", 179},
          {"FirstNonstringType", 128},
          {"class_String__length__int32_t", 12},
          {"class_SeqOneByteString__chars__char", 16},
          {"class_SeqTwoByteString__chars__char", 16},
          {"class_ConsString__first__String", 16},
          {"class_ConsString__second__String", 24},
          {"class_ThinString__actual__String", 16},
          {"class_SlicedString__parent__String", 16},
          {"class_SlicedString__offset__SMI", 24},
          {"StringRepresentationMask", 7},
          {"StringEncodingMask", 8},
          {"OneByteStringTag", 8},
          {"SeqStringTag", 0},
          {"ConsStringTag", 1},
          {"ExternalStringTag", 2},
          {"SlicedStringTag", 3},
          {"ThinStringTag", 5},
          {"HeapObjectTag", 1},
          {"HeapObjectTagMask", 3},
          {"SmiTagMask", 1},
          {"SmiShiftSize", 31}};
}

// The object of the installed node that holds V8's constants: /usr/bin/node (a static build) or
// Debian's libnode.so.
std::optional<V8Constants> installed_constants(std::string& where) {
  std::vector<std::string> candidates = {"/usr/bin/node"};
  for (const auto& e : std::filesystem::directory_iterator("/usr/lib/x86_64-linux-gnu"))
    if (e.path().filename().string().starts_with("libnode.so.")) candidates.push_back(e.path());
  for (const auto& path : candidates) {
    auto elf = ElfFile::open(path);
    if (!elf) continue;
    auto c = read_v8_constants(*elf);
    if (c && !c->empty()) {
      where = path;
      return *c;
    }
  }
  return std::nullopt;
}

TEST(v8_constants, installed_node_holds_v8s_x64_frame_layout) {
  std::string where;
  auto c = installed_constants(where);
  ASSERT_TRUE(c) << "no object of the installed node holds v8dbg_* constants";
  // V8's x64 StandardFrameConstants: the context (or a typed frame's marker) one word below the
  // saved rbp, the function two; interpreted frames' bytecode array and offset below them.
  EXPECT_EQ(c->at("off_fp_function"), -16) << where;
  EXPECT_EQ(c->count("off_fp_context_or_frame_type") ? c->at("off_fp_context_or_frame_type")
                                                     : c->at("off_fp_context"),
            -8)
      << where;
  EXPECT_EQ(c->at("off_fp_bytecode_array"), -32) << where;
  EXPECT_EQ(c->at("off_fp_bytecode_offset"), -40) << where;
  // A zero-initialized constant (in .bss) reads 0.
  EXPECT_EQ(c->at("SeqStringTag"), 0) << where;
  EXPECT_EQ(c->at("HeapObjectTag"), 1) << where;
  auto l = v8_layout(*c);
  ASSERT_TRUE(l) << l.error().message;
  EXPECT_EQ(l->bpf.fp_function, -16);
  EXPECT_EQ(l->bpf.heap_object_map, 0u);
}

TEST(v8_constants, layout_names_what_is_missing_or_unsupported) {
  auto c = node18_constants();
  ASSERT_TRUE(v8_layout(c));
  // Before off_fp_context_or_frame_type, off_fp_context.
  auto old = c;
  old.erase("off_fp_context_or_frame_type");
  old["off_fp_context"] = -8;
  EXPECT_TRUE(v8_layout(old));
  auto missing = c;
  missing.erase("class_JSFunction__shared__SharedFunctionInfo");
  auto e = v8_layout(missing);
  ASSERT_FALSE(e);
  EXPECT_NE(e.error().message.find("v8dbg_class_JSFunction__shared__SharedFunctionInfo"),
            std::string::npos)
      << e.error().message;
  auto compressed = c;
  compressed["SmiShiftSize"] = 0;
  e = v8_layout(compressed);
  ASSERT_FALSE(e);
  EXPECT_NE(e.error().message.find("pointer compression"), std::string::npos);
  auto slot = c;
  slot["off_fp_function"] = 16;
  e = v8_layout(slot);
  ASSERT_FALSE(e);
  EXPECT_NE(e.error().message.find("off_fp_function is 16"), std::string::npos);
}

TEST(v8_code, line_of_a_position_counts_line_ends) {
  const std::vector<uint32_t> ends = {3, 10};  // "abc\n", "123456\n", "tail"
  EXPECT_EQ(v8_line_of(ends, 0), 1);
  EXPECT_EQ(v8_line_of(ends, 3), 1);  // the newline is its line's
  EXPECT_EQ(v8_line_of(ends, 4), 2);
  EXPECT_EQ(v8_line_of(ends, 11), 3);
  EXPECT_EQ(v8_line_of({}, 5), 1);
}

// A heap laid out as node 18's: maps of each type, then objects pointing at them.
struct FakeHeap {
  test::FakePythonTarget t;
  V8Layout l = *v8_layout(node18_constants());
  uint64_t next = 0x10000;
  std::map<uint16_t, uint64_t> maps;

  static uint64_t tagged(uint64_t a) { return a + 1; }
  static uint64_t smi(int64_t v) { return static_cast<uint64_t>(v) << 32; }
  uint64_t map_of(uint16_t type) {
    if (auto it = maps.find(type); it != maps.end()) return it->second;
    uint64_t m = object(0, 16);
    t.word(m + 12, type, 2);
    return maps[type] = m;
  }
  // A zeroed object of `size` bytes whose map says `type` (no map for type 0: a map itself).
  uint64_t object(uint16_t type, size_t size) {
    uint64_t a = next;
    next += (size + 0xff) & ~0xffull;
    t.zeros(a, size);
    if (type != 0) t.word(a, tagged(map_of(type)));
    return a;
  }
  uint64_t one_byte(const std::string& s) {
    uint64_t a = object(8, 16 + s.size());
    t.word(a + 12, s.size(), 4);
    std::memcpy(t.blocks[a].data() + 16, s.data(), s.size());
    return tagged(a);
  }
  uint64_t two_byte(const std::string& s) {
    uint64_t a = object(0x20 /* any non-string-tagged type below 128 with encoding bit 0 */,
                        16 + 2 * s.size());
    t.word(a + 12, s.size(), 4);
    for (size_t i = 0; i < s.size(); ++i) t.word(a + 16 + 2 * i, static_cast<uint8_t>(s[i]), 2);
    return tagged(a);
  }
  uint64_t cons(uint64_t first, uint64_t second) {
    uint64_t a = object(9, 32);  // ConsStringTag | OneByteStringTag
    t.word(a + 16, first);
    t.word(a + 24, second);
    return tagged(a);
  }
};

TEST(v8_code, function_name_script_and_start_line_from_its_scope_info) {
  FakeHeap h;
  // The source, a cons of a one-byte and a two-byte part: leaf starts on line 3.
  const uint64_t source =
      h.cons(h.one_byte("'use strict';\n\n"), h.two_byte("function leaf(n) {\n}\n"));
  const uint64_t undefined = FakeHeap::tagged(h.object(131, 16));  // an oddball
  const uint64_t script = h.object(170, 64);
  h.t.word(script + 8, source);
  h.t.word(script + 16, h.one_byte("/srv/app.js"));
  h.t.word(script + 56, undefined);  // line ends not computed
  // ScopeInfo: flags, parameters, one context local (name, info), then the function's name, its
  // inferred name (undefined) and its [start, end) positions.
  const uint64_t scope = h.object(256, 8 + 10 * 8);
  const uint64_t slots[] = {
      FakeHeap::smi(0x1234), FakeHeap::smi(1),   FakeHeap::smi(1), h.one_byte("local"),
      FakeHeap::smi(7),      h.one_byte("leaf"), undefined,        FakeHeap::smi(28),
      FakeHeap::smi(40),     undefined};
  for (size_t i = 0; i < std::size(slots); ++i) h.t.word(scope + 8 + 8 * i, slots[i]);
  const uint64_t sfi = h.object(257, 64);
  h.t.word(sfi + 16, FakeHeap::tagged(scope));
  h.t.word(sfi + 32, FakeHeap::tagged(script));
  auto f = read_v8_function(h.l, h.t.memory(), sfi);
  ASSERT_TRUE(f) << f.error().message;
  EXPECT_EQ(f->name, "leaf");
  EXPECT_EQ(f->script, "/srv/app.js");
  EXPECT_EQ(f->line, 3);

  // Line ends computed by V8 are used as they are.
  const uint64_t ends = h.object(179, 16 + 3 * 8);
  h.t.word(ends + 8, FakeHeap::smi(3));
  for (int i = 0; i < 3; ++i) h.t.word(ends + 16 + 8 * i, FakeHeap::smi(10 * (i + 1)));
  h.t.word(script + 56, FakeHeap::tagged(ends));
  f = read_v8_function(h.l, h.t.memory(), sfi);
  ASSERT_TRUE(f);
  EXPECT_EQ(f->line, 3);  // 28: after ends 10 and 20

  // An anonymous function assigned to a property: its own name is empty, V8's inferred one
  // follows.
  h.t.word(scope + 8 + 8 * 5, h.one_byte(""));
  h.t.word(scope + 8 + 8 * 6, h.one_byte("Module._compile"));
  f = read_v8_function(h.l, h.t.memory(), sfi);
  ASSERT_TRUE(f);
  EXPECT_EQ(f->name, "Module._compile");
  EXPECT_EQ(f->line, 3);

  // A name kept as a string (no ScopeInfo): named, no line.
  h.t.word(sfi + 16, h.one_byte("named"));
  f = read_v8_function(h.l, h.t.memory(), sfi);
  ASSERT_TRUE(f);
  EXPECT_EQ(f->name, "named");
  EXPECT_EQ(f->line, 0);

  // A SharedFunctionInfo that moved: its address holds another object now.
  h.t.word(sfi, FakeHeap::tagged(h.map_of(170)));
  auto moved = read_v8_function(h.l, h.t.memory(), sfi);
  ASSERT_FALSE(moved);
  EXPECT_NE(moved.error().message.find("no longer"), std::string::npos);
  EXPECT_FALSE(read_v8_function(h.l, h.t.memory(), 0x9999990));
}

TEST(v8_code, strings_of_every_representation_but_external) {
  FakeHeap h;
  const uint64_t hello = h.one_byte("hello world");
  EXPECT_EQ(*read_v8_string(h.l, h.t.memory(), hello), "hello world");
  EXPECT_EQ(*read_v8_string(h.l, h.t.memory(), hello, 5), "hello");
  // Sliced: "world" of "hello world".
  uint64_t sliced = h.object(8 | 3, 32);
  h.t.word(sliced + 12, 5, 4);
  h.t.word(sliced + 16, hello);
  h.t.word(sliced + 24, FakeHeap::smi(6));
  EXPECT_EQ(*read_v8_string(h.l, h.t.memory(), FakeHeap::tagged(sliced)), "world");
  // A slice of a slice, or one starting 1 GiB into its parent, is no string V8 makes: refused
  // (the fuzzer's slice at 2^30 had us allocate 2 GiB for its parent).
  uint64_t nested = h.object(8 | 3, 32);
  h.t.word(nested + 12, 2, 4);
  h.t.word(nested + 16, FakeHeap::tagged(sliced));
  h.t.word(nested + 24, FakeHeap::smi(1));
  auto n = read_v8_string(h.l, h.t.memory(), FakeHeap::tagged(nested));
  ASSERT_FALSE(n);
  EXPECT_NE(n.error().message.find("no flat parent"), std::string::npos) << n.error().message;
  h.t.word(sliced + 24, FakeHeap::smi(1 << 30));
  auto far = read_v8_string(h.l, h.t.memory(), FakeHeap::tagged(sliced));
  ASSERT_FALSE(far);
  EXPECT_NE(far.error().message.find("starts at 1073741824"), std::string::npos)
      << far.error().message;
  // Thin: the string it forwards to.
  uint64_t thin = h.object(8 | 5, 24);
  h.t.word(thin + 16, hello);
  EXPECT_EQ(*read_v8_string(h.l, h.t.memory(), FakeHeap::tagged(thin)), "hello world");
  // External: its characters are outside V8's heap.
  uint64_t external = h.object(8 | 2, 32);
  auto e = read_v8_string(h.l, h.t.memory(), FakeHeap::tagged(external));
  ASSERT_FALSE(e);
  EXPECT_NE(e.error().message.find("external"), std::string::npos);
  // Not a string, or a cons string that refers to itself.
  EXPECT_FALSE(read_v8_string(h.l, h.t.memory(), FakeHeap::tagged(h.object(170, 16))));
  uint64_t loop = h.object(9, 32);
  h.t.word(loop + 16, FakeHeap::tagged(loop));
  h.t.word(loop + 24, FakeHeap::tagged(loop));
  EXPECT_FALSE(read_v8_string(h.l, h.t.memory(), FakeHeap::tagged(loop)));
}

}  // namespace
}  // namespace uscope
