// threading's thread names read from a 3.11 process's memory (and a 3.10 one's), laid out here by
// the 3.11 row (its offsets checked against the installed headers by python_offsets_test):
// sys.modules -> threading -> _active -> each Thread's _name, from inline values (the usual
// instance) or from a dict the instance was given; dict entries deleted or out of bounds.
#include "symbolize/python_thread_names.h"

#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <string>

#include "python_fake_target.h"

namespace uscope {
namespace {

using test::FakePythonTarget;

constexpr uint64_t kRuntime = 0x1000, kInterp = 0x2000;

PythonRuntime runtime_3_11() {
  PythonRuntime rt;
  rt.pid = 1;
  rt.object.version = {3, 11, 2};
  auto layout = python_layout_for(rt.object.version);
  EXPECT_TRUE(layout);
  if (layout) rt.layout = *layout;
  rt.proc.off = rt.layout.bpf;
  rt.proc.runtime = kRuntime;
  return rt;
}

// A compact ASCII str: length 16, state 32 (kind 1, compact, ascii), characters from 48.
void str(FakePythonTarget& t, uint64_t at, const std::string& s) {
  t.zeros(at, 48 + s.size() + 1);
  t.word(at + 16, s.size());
  t.word(at + 32, 1 << 2 | 1 << 5 | 1 << 6, 4);
  for (size_t i = 0; i < s.size(); ++i) t.word(at + 48 + i, static_cast<uint8_t>(s[i]), 1);
}

// The names a thread-names walk looks up, and two threads' names, at the addresses the tests'
// dicts point at: "sys" 0x10000, "threading" 0x10100, "_active" 0x10200, "_target" 0x10300,
// "_name" 0x10400, "MainThread" 0x10500, `second` 0x10600.
void threading_strings(FakePythonTarget& t, const std::string& second) {
  str(t, 0x10000, "sys");
  str(t, 0x10100, "threading");
  str(t, 0x10200, "_active");
  str(t, 0x10300, "_target");
  str(t, 0x10400, "_name");
  str(t, 0x10500, "MainThread");
  str(t, 0x10600, second);
}

// A dict keys object of `kind` (0 general, 1 str keys) with 8 bytes of indices and `entries`
// {key, value} (a general entry's hash is left 0).
void keys(FakePythonTarget& t, uint64_t at, int kind,
          const std::vector<std::pair<uint64_t, uint64_t>>& entries) {
  const size_t width = kind == 0 ? 24 : 16;
  t.zeros(at, 40 + width * entries.size());
  t.word(at + 9, 3, 1);  // dk_log2_index_bytes: 8 bytes of indices
  t.word(at + 10, kind, 1);
  t.word(at + 24, entries.size());
  for (size_t i = 0; i < entries.size(); ++i) {
    uint64_t e = at + 40 + i * width + (kind == 0 ? 8 : 0);
    t.word(e, entries[i].first);
    t.word(e + 8, entries[i].second);
  }
}

void dict(FakePythonTarget& t, uint64_t at, uint64_t keys_at, uint64_t values_at = 0) {
  t.zeros(at, 48);
  t.word(at + 32, keys_at);
  t.word(at + 40, values_at);
}

// An int of three 30-bit digits.
void long3(FakePythonTarget& t, uint64_t at, uint64_t v) {
  t.zeros(at, 36);
  t.word(at + 16, 3);
  for (int i = 0; i < 3; ++i) t.word(at + 24 + 4 * i, v >> (30 * i) & 0x3fffffff, 4);
}

// An instance of a class with a managed dict: `dict_at` and `values_at` before its header.
void instance(FakePythonTarget& t, uint64_t at, uint64_t type, uint64_t dict_at,
              uint64_t values_at) {
  t.zeros(at - 32, 64);
  t.word(at - 32, values_at);
  t.word(at - 24, dict_at);
  t.word(at + 8, type);
}

TEST(python_thread_names, from_threading_active_by_thread_ident) {
  FakePythonTarget t;
  t.zeros(kRuntime, 64);
  t.word(kRuntime + 40, kInterp);
  t.zeros(kInterp, 1024);
  t.word(kInterp + 888, 0x3000);  // sys.modules
  threading_strings(t, "py-named-waiter");
  str(t, 0x10700, "gone");
  dict(t, 0x3000, 0x3100);
  keys(t, 0x3100, 1, {{0x10000, 0x9000}, {0x10100, 0x4000}});
  t.zeros(0x4000, 32);  // the threading module: md_dict at 16
  t.word(0x4000 + 16, 0x4100);
  dict(t, 0x4100, 0x4200);
  keys(t, 0x4200, 1, {{0x10200, 0x5000}});
  // _active: {ident: Thread}, int keys (general entries); a deleted entry keeps no value.
  dict(t, 0x5000, 0x5100);
  keys(t, 0x5100, 0, {{0x11000, 0x6040}, {0x11100, 0}, {0x11200, 0x7040}});
  long3(t, 0x11000, 0x7f0012345678);
  long3(t, 0x11100, 0x7f00aaaaaaaa);
  long3(t, 0x11200, 0x7f0087654321);
  // The Thread class: managed dict (tp_flags at 168), its cached keys at 872.
  t.zeros(0x8000, 1024);
  t.word(0x8000 + 168, 1 << 4);
  t.word(0x8000 + 872, 0x8800);
  keys(t, 0x8800, 1, {{0x10300, 0}, {0x10400, 0}});
  // The usual instance: inline values, in the order of the class's keys.
  instance(t, 0x6040, 0x8000, 0, 0x6800);
  t.zeros(0x6800, 16);
  t.word(0x6800 + 8, 0x10500);
  // One given a dict of its own (its __dict__ was asked for).
  instance(t, 0x7040, 0x8000, 0x7800, 0);
  dict(t, 0x7800, 0x7900);
  keys(t, 0x7900, 1, {{0x10400, 0x10600}});

  auto names = python_thread_names(runtime_3_11(), t.memory());
  ASSERT_TRUE(names) << names.error().message;
  ASSERT_EQ(names->size(), 2u);
  EXPECT_EQ(names->at(0x7f0012345678), "MainThread");
  EXPECT_EQ(names->at(0x7f0087654321), "py-named-waiter");
}

// A 3.8-3.10 dict keys object (Objects/dict-common.h): dk_size 8, dk_nentries 32, dk_indices 40;
// `size` indices of 1 byte (2 from 256), then general entries {hash, key, value}.
void keys_3_10(FakePythonTarget& t, uint64_t at, uint64_t size,
               const std::vector<std::pair<uint64_t, uint64_t>>& entries) {
  const uint64_t first = at + 40 + size * (size <= 0xff ? 1 : 2);
  t.zeros(at, first - at + 24 * entries.size());
  t.word(at + 8, size);
  t.word(at + 32, entries.size());
  for (size_t i = 0; i < entries.size(); ++i) {
    t.word(first + 24 * i + 8, entries[i].first);
    t.word(first + 24 * i + 16, entries[i].second);
  }
}

// 3.10 (3.8 and 3.9 alike but for sys.modules' offset): dicts without dk_kind, their indices
// sized by dk_size, and an instance's dict at its type's tp_dictoffset (a split dict: values in
// ma_values, keys the class's), laid out by hand, not by the table: sys.modules at 856,
// tp_dictoffset at 288 (the 3.10 row's comment says whence).
TEST(python_thread_names, from_the_dicts_of_3_10) {
  PythonRuntime rt = runtime_3_11();
  rt.object.version = {3, 10, 13};
  auto row = python_layout_for(rt.object.version);
  ASSERT_TRUE(row);
  rt.layout = *row;
  rt.proc.off = rt.layout.bpf;
  FakePythonTarget t;
  t.zeros(kRuntime, 64);
  t.word(kRuntime + 32, kInterp);  // interpreters.head
  t.zeros(kInterp, 1024);
  t.word(kInterp + 856, 0x3000);  // sys.modules
  threading_strings(t, "worker-7");
  dict(t, 0x3000, 0x3100);
  keys_3_10(t, 0x3100, 512, {{0x10000, 0x9000}, {0x10100, 0x4000}});  // 2-byte indices
  t.zeros(0x4000, 32);
  t.word(0x4000 + 16, 0x4100);
  dict(t, 0x4100, 0x4200);
  keys_3_10(t, 0x4200, 8, {{0x10200, 0x5000}});
  dict(t, 0x5000, 0x5100);
  keys_3_10(t, 0x5100, 8, {{0x11000, 0x6000}, {0x11100, 0}, {0x11200, 0x7000}});
  long3(t, 0x11000, 0x7f0012345678);
  long3(t, 0x11100, 0x7f00aaaaaaaa);
  long3(t, 0x11200, 0x7f0087654321);
  // The Thread class: tp_dictoffset 16 (the dict pointer right after the object's header).
  t.zeros(0x8000, 1024);
  t.word(0x8000 + 288, 16);
  keys_3_10(t, 0x8800, 8, {{0x10300, 0}, {0x10400, 0}});
  // Instances with split dicts: the class's keys, their own values.
  t.zeros(0x6000, 32);
  t.word(0x6000 + 8, 0x8000);
  t.word(0x6000 + 16, 0x6100);
  dict(t, 0x6100, 0x8800, 0x6200);
  t.zeros(0x6200, 16);
  t.word(0x6200 + 8, 0x10500);
  // And one with a dict of its own (combined).
  t.zeros(0x7000, 32);
  t.word(0x7000 + 8, 0x8000);
  t.word(0x7000 + 16, 0x7100);
  dict(t, 0x7100, 0x7200);
  keys_3_10(t, 0x7200, 8, {{0x10400, 0x10600}});

  auto names = python_thread_names(rt, t.memory());
  ASSERT_TRUE(names) << names.error().message;
  ASSERT_EQ(names->size(), 2u);
  EXPECT_EQ(names->at(0x7f0012345678), "MainThread");
  EXPECT_EQ(names->at(0x7f0087654321), "worker-7");

  // A dk_size that is not a power of 2 is refused, not read.
  t.word(0x3100 + 8, 500);
  auto bad = python_thread_names(rt, t.memory());
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("size of 500"), std::string::npos) << bad.error().message;
}

TEST(python_thread_names, none_without_threading_and_an_error_for_a_dict_out_of_bounds) {
  FakePythonTarget t;
  t.zeros(kRuntime, 64);
  t.word(kRuntime + 40, kInterp);
  t.zeros(kInterp, 1024);
  t.word(kInterp + 888, 0x3000);
  str(t, 0x10000, "sys");
  dict(t, 0x3000, 0x3100);
  keys(t, 0x3100, 1, {{0x10000, 0x9000}});
  auto none = python_thread_names(runtime_3_11(), t.memory());
  ASSERT_TRUE(none) << none.error().message;
  EXPECT_TRUE(none->empty());
  t.word(0x3100 + 24, uint64_t{1} << 40);  // dk_nentries
  auto bad = python_thread_names(runtime_3_11(), t.memory());
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("entries"), std::string::npos) << bad.error().message;
}

TEST(python_thread_names, versions_the_layout_does_not_describe_have_none) {
  FakePythonTarget t;
  PythonRuntime rt = runtime_3_11();
  auto row = python_layout_for({3, 12, 0});
  ASSERT_TRUE(row);
  rt.layout = *row;
  auto names = python_thread_names(rt, t.memory());
  ASSERT_TRUE(names);
  EXPECT_TRUE(names->empty());
  EXPECT_EQ(t.reads, 0u);
}

// The fuzzer's seed: the same structures in one image, _PyRuntime at 0x10000.
TEST(python_thread_names, reads_the_fuzz_seed) {
  std::ifstream in(
      std::string(USCOPE_SOURCE_DIR) + "/fuzz/seeds/python_thread_names_fuzz/two_threads_3.11",
      std::ios::binary);
  std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)), {});
  ASSERT_FALSE(bytes.empty());
  FakePythonTarget t;
  t.put(0x10000, bytes);
  PythonRuntime rt = runtime_3_11();
  rt.proc.runtime = 0x10000;
  auto names = python_thread_names(rt, t.memory());
  ASSERT_TRUE(names) << names.error().message;
  ASSERT_EQ(names->size(), 2u);
  EXPECT_EQ(names->at(0x7f0012345678), "MainThread");
  EXPECT_EQ(names->at(0x7f0087654321), "worker-1");
}

}  // namespace
}  // namespace uscope
