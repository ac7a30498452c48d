// Which kernel thread a thread state is: 3.11+ by PyThreadState.native_thread_id; 3.8-3.10, which
// have none, by PyThreadState.thread_id (pthread_self()) against the fs bases of the process's
// threads (what `uscope dump` reads through the kernel), on a thread list laid out by the table's
// 3.10 and 3.11 rows in this test's own memory (so that validation's fresh reads of the process
// read the same). Unknown fs bases leave a state unmatched; offsets that read no thread's fs base
// are refused, naming the field.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <vector>

#include "discover/python_runtime.h"

namespace uscope {
namespace {

// _PyRuntime, one interpreter and three thread states, as words of this process's memory.
struct ThreadList {
  std::vector<uint64_t> runtime = std::vector<uint64_t>(128);
  std::vector<uint64_t> interp = std::vector<uint64_t>(128);
  std::vector<std::vector<uint64_t>> tstates{3, std::vector<uint64_t>(32)};

  static uint64_t at(std::vector<uint64_t>& v) { return reinterpret_cast<uint64_t>(v.data()); }
  static void set(std::vector<uint64_t>& v, uint32_t offset, uint64_t value) {
    v.at(offset / 8) = value;
  }

  // Laid out by `rt`'s layout; thread state i's id field (thread_id, or native_thread_id where
  // the version has it) reads ids[i].
  PythonRuntime lay_out(PythonVersion version, const std::vector<uint64_t>& ids) {
    PythonRuntime rt;
    rt.pid = getpid();
    rt.object.version = version;
    auto layout = python_layout_for(version);
    EXPECT_TRUE(layout);
    if (layout) rt.layout = *layout;
    rt.proc.off = rt.layout.bpf;
    rt.proc.runtime = at(runtime);
    const auto& o = rt.layout.bpf;
    set(runtime, o.runtime_interp_head, at(interp));
    set(interp, o.interp_threads_head, at(tstates[0]));
    for (size_t i = 0; i < tstates.size(); ++i) {
      auto& t = tstates[i];
      set(t, o.tstate_next, i + 1 < tstates.size() ? at(tstates[i + 1]) : 0);
      set(t, rt.layout.tstate_interp, at(interp));
      set(t, o.tstate_thread_id, 0x7f0000000000 + 0x1000 * (i + 1));  // every version has it
      if (o.tstate_native_thread_id != PY_NO_OFFSET)
        set(t, o.tstate_native_thread_id, ids[i]);
      else
        set(t, o.tstate_thread_id, ids[i]);
    }
    return rt;
  }
};

constexpr uint64_t kFs1 = 0x7f12345a1640, kFs2 = 0x7f1234da2640, kFs3 = 0x7f1233fff640;

TEST(python_threads, a_3_10_thread_state_is_the_thread_whose_fs_base_is_its_thread_id) {
  ThreadList list;
  PythonRuntime rt = list.lay_out({3, 10, 13}, {kFs2, kFs1, kFs3});
  const ThreadsByFsBase fs_bases{{kFs1, 1001}, {kFs2, 1002}, {0x7f00000ff640, 1003}};
  TargetMemory mem = process_target_memory(getpid());
  auto threads = python_threads(rt, mem, &fs_bases);
  ASSERT_TRUE(threads) << threads.error().message;
  ASSERT_EQ(threads->size(), 3u);
  EXPECT_EQ((*threads)[0].tstate, ThreadList::at(list.tstates[0]));
  EXPECT_EQ((*threads)[0].thread_id, kFs2);
  EXPECT_EQ((*threads)[0].native_id, 1002);
  EXPECT_EQ((*threads)[1].native_id, 1001);
  EXPECT_EQ((*threads)[2].native_id, 0);  // no thread has its fs base: unmatched, not guessed

  // Without the fs bases, nothing says which thread a state is.
  auto unknown = python_threads(rt, mem);
  ASSERT_TRUE(unknown) << unknown.error().message;
  for (const auto& t : *unknown) EXPECT_EQ(t.native_id, 0);

  auto ok = validate_python_runtime(rt, mem, &fs_bases);
  EXPECT_TRUE(ok) << ok.error().message;
}

TEST(python_threads, offsets_that_read_no_threads_fs_base_are_refused) {
  ThreadList list;
  TargetMemory mem = process_target_memory(getpid());
  const ThreadsByFsBase fs_bases{{kFs1, 1001}};

  // Pointers, but none is a thread's fs base: the offsets read something else.
  PythonRuntime rt = list.lay_out({3, 10, 13}, {kFs2, kFs3, kFs2});
  auto none = validate_python_runtime(rt, mem, &fs_bases);
  ASSERT_FALSE(none);
  EXPECT_NE(none.error().message.find("no PyThreadState.thread_id (the first reads 0x7f1234da2640) "
                                      "is the fs base (pthread_self()) of a thread"),
            std::string::npos)
      << none.error().message;

  // Not a pointer at all (a count, a flag): refused without the fs bases too.
  rt = list.lay_out({3, 10, 13}, {kFs1, 0x2a, kFs1});
  for (const ThreadsByFsBase* bases : {&fs_bases, static_cast<const ThreadsByFsBase*>(nullptr)}) {
    auto small = validate_python_runtime(rt, mem, bases);
    ASSERT_FALSE(small);
    EXPECT_NE(small.error().message.find("PyThreadState.thread_id reads 0x2a, not a pointer"),
              std::string::npos)
        << small.error().message;
  }
}

TEST(python_threads, a_3_11_thread_state_says_its_tid_and_fs_bases_are_not_needed) {
  ThreadList list;
  PythonRuntime rt = list.lay_out({3, 11, 2}, {1002, 1001, 1003});
  const ThreadsByFsBase fs_bases{{0x7f0000001000, 4242}};  // thread_id of the first: ignored
  TargetMemory mem = process_target_memory(getpid());
  auto threads = python_threads(rt, mem, &fs_bases);
  ASSERT_TRUE(threads) << threads.error().message;
  ASSERT_EQ(threads->size(), 3u);
  EXPECT_EQ((*threads)[0].native_id, 1002);
  EXPECT_EQ((*threads)[1].native_id, 1001);
  EXPECT_EQ((*threads)[2].native_id, 1003);
}

}  // namespace
}  // namespace uscope
