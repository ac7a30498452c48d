// The user-space walk of a thread's frame chain in the versions no installed interpreter runs
// here: 3.12's (a _PyCFrame, shim frames owned by the C stack marking where an eval call began,
// frames not yet started left out) and 3.9's (PyFrameObject, f_lasti in bytes), and 3.13's GIL
// holder, on fake memory laid out by the table rows; a chain that loops is refused.
#include <gtest/gtest.h>

#include <cstdint>

#include "discover/python_runtime.h"
#include "python_fake_target.h"

namespace uscope {
namespace {

using test::FakePythonTarget;

PythonRuntime runtime_for(PythonVersion v) {
  PythonRuntime rt;
  rt.pid = 1;
  rt.object.version = v;
  auto layout = python_layout_for(v);
  EXPECT_TRUE(layout);
  if (layout) rt.layout = *layout;
  rt.proc.off = rt.layout.bpf;
  return rt;
}

// A 3.12 _PyInterpreterFrame: f_code 0, previous 8, prev_instr 56, owner 70.
void frame_3_12(FakePythonTarget& t, uint64_t at, uint64_t code, uint64_t previous, int64_t instr,
                uint8_t owner) {
  t.zeros(at, 72);
  t.word(at + 0, code);
  t.word(at + 8, previous);
  t.word(at + 56, code + 192 + 2 * instr);  // co_code_adaptive at 192
  t.word(at + 70, owner, 1);
}

TEST(python_frame_walk, frames_of_3_12_end_at_shims_and_skip_what_has_not_started) {
  PythonRuntime rt = runtime_for({3, 12, 1});
  FakePythonTarget t;
  t.zeros(0x1000, 256);  // PyThreadState: cframe at 56
  t.word(0x1000 + 56, 0x2000);
  t.zeros(0x2000, 16);  // _PyCFrame: current_frame at 0
  t.word(0x2000, 0x3000);
  for (uint64_t code : {0x10000, 0x10200, 0x10300, 0x10400}) {
    t.zeros(code, 256);        // _co_firsttraceable at 176
    t.word(code + 176, 2, 4);  // two RESUME-like units first
  }
  frame_3_12(t, 0x3000, 0x10000, 0x3100, 5, 0);  // innermost, running
  frame_3_12(t, 0x3100, 0x10400, 0x3200, 0, 3);  // shim: the eval call of 0x3000 began here
  frame_3_12(t, 0x3200, 0x10200, 0x3300, 3, 0);  // its caller
  frame_3_12(t, 0x3300, 0x10300, 0x3400, 1, 0);  // pushed, not started (before unit 2)
  frame_3_12(t, 0x3400, 0x10400, 0, 0, 3);       // the outermost eval call's shim
  auto frames = python_thread_frames(rt, t.memory(), 0x1000);
  ASSERT_TRUE(frames) << frames.error().message;
  ASSERT_EQ(frames->size(), 2u);
  EXPECT_EQ((*frames)[0].code, 0x10000u);
  EXPECT_EQ((*frames)[0].instr, 5u);
  EXPECT_TRUE((*frames)[0].entry);
  EXPECT_EQ((*frames)[1].code, 0x10200u);
  EXPECT_EQ((*frames)[1].instr, 3u);
  EXPECT_TRUE((*frames)[1].entry);

  // No frame: a thread between calls.
  t.word(0x2000, 0);
  auto none = python_thread_frames(rt, t.memory(), 0x1000);
  ASSERT_TRUE(none) << none.error().message;
  EXPECT_TRUE(none->empty());

  // A chain that comes back to itself is refused, not walked forever.
  t.word(0x2000, 0x3000);
  t.word(0x3200 + 8, 0x3000);
  auto loop = python_thread_frames(rt, t.memory(), 0x1000);
  ASSERT_FALSE(loop);
  EXPECT_NE(loop.error().message.find("loops"), std::string::npos) << loop.error().message;
}

TEST(python_frame_walk, frames_of_3_9_count_f_lasti_in_bytes) {
  PythonRuntime rt = runtime_for({3, 9, 18});
  FakePythonTarget t;
  t.zeros(0x1000, 256);  // PyThreadState: frame at 24
  t.word(0x1000 + 24, 0x5000);
  // PyFrameObject: f_back 24, f_code 32, f_lasti 104 (bytes).
  t.zeros(0x5000, 120);
  t.word(0x5000 + 24, 0x5200);
  t.word(0x5000 + 32, 0x20000);
  t.word(0x5000 + 104, 20, 4);
  t.zeros(0x5200, 120);
  t.word(0x5200 + 32, 0x20100);
  t.word(0x5200 + 104, static_cast<uint32_t>(-1), 4);  // not started
  auto frames = python_thread_frames(rt, t.memory(), 0x1000);
  ASSERT_TRUE(frames) << frames.error().message;
  ASSERT_EQ(frames->size(), 2u);
  EXPECT_EQ((*frames)[0].code, 0x20000u);
  EXPECT_EQ((*frames)[0].instr, 10u);
  EXPECT_EQ((*frames)[1].code, 0x20100u);
  EXPECT_EQ((*frames)[1].instr, PY_INSTR_UNKNOWN);
  EXPECT_TRUE((*frames)[0].entry && (*frames)[1].entry);  // an eval call per frame

  // An unreadable frame is an error naming it.
  t.word(0x5000 + 24, 0x7777000);
  auto lost = python_thread_frames(rt, t.memory(), 0x1000);
  ASSERT_FALSE(lost);
  EXPECT_NE(lost.error().message.find("0x7777000"), std::string::npos) << lost.error().message;
}

TEST(python_frame_walk, gil_holder_of_3_11_3_12_and_3_13) {
  PythonRuntime rt = runtime_for({3, 11, 2});
  rt.proc.runtime = 0x100000;
  FakePythonTarget t;
  t.zeros(0x100000, 1024);
  t.word(0x100000 + 576, 0x1000);  // gilstate.tstate_current
  auto holder = python_gil_holder(rt, t.memory());
  ASSERT_TRUE(holder) << holder.error().message;
  EXPECT_EQ(holder->value_or(0), 0x1000u);

  // A _gil_runtime_state at `state` whose last_holder (at 8) is `holder`: unlocked, nobody holds
  // the GIL, whoever held it last; locked (at 16), `holder` does.
  auto expect_gil_states = [&t](const PythonRuntime& r, uint64_t state, uint64_t holder) {
    SCOPED_TRACE("Python " + std::to_string(r.object.version.major) + "." +
                 std::to_string(r.object.version.minor));
    t.zeros(state, 64);
    t.word(state + 8, holder);
    auto idle = python_gil_holder(r, t.memory());
    ASSERT_TRUE(idle) << idle.error().message;
    EXPECT_EQ(idle->value_or(1), 0u);
    t.word(state + 16, 1, 4);
    auto held = python_gil_holder(r, t.memory());
    ASSERT_TRUE(held) << held.error().message;
    EXPECT_EQ(held->value_or(0), holder);
  };

  // 3.12: the interpreter's ceval.gil at 384, locked at 16 and last_holder at 8 in the
  // _gil_runtime_state it points at: worked out by hand from v3.12.1's pycore_interp.h,
  // pycore_gc.h, pycore_ceval_state.h and pycore_gil.h (the row's comment), not from the table.
  PythonRuntime r12 = runtime_for({3, 12, 1});
  r12.proc.runtime = 0x100000;
  t.word(0x100000 + 40, 0x400000);  // interpreters.head
  t.zeros(0x400000, 512);
  t.word(0x400000 + 384, 0x500000);
  expect_gil_states(r12, 0x500000, 0x2000);
  t.word(0x100000 + 40, 0);

  // 3.13: the interpreter's ceval.gil points at a _gil_runtime_state (locked, last_holder).
  PythonRuntime r13 = runtime_for({3, 12, 1});
  r13.object.version = {3, 13, 1};
  r13.proc.runtime = 0x100000;
  r13.layout.bpf.runtime_interp_head = 40;
  r13.layout.interp_ceval_gil = 100;
  r13.layout.gil_locked = 16;
  r13.layout.gil_last_holder = 8;
  t.word(0x100000 + 40, 0x200000);
  t.zeros(0x200000, 256);
  t.word(0x200000 + 100, 0x300000);
  expect_gil_states(r13, 0x300000, 0x1000);
}

}  // namespace
}  // namespace uscope
