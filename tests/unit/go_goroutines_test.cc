// The goroutine readers on a runtime.allgs laid out in this process's own memory (read back
// through process_vm_readv, as from a Go program): which g's are parked, with the fields each
// keeps where the layout says, and whether one read before is still parked where it was.
#include "collect/go_goroutines.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <array>
#include <cstring>
#include <vector>

namespace uscope {
namespace {

// runtime2.go's statuses: _Grunnable 1, _Grunning 2, _Gwaiting 4, _Gdead 6; _Gscan 0x1000.
constexpr uint32_t kRunning = 2, kWaiting = 4, kDead = 6, kScan = 0x1000;

struct FakeG {
  std::array<uint8_t, 256> bytes{};
  template <typename T>
  void put(uint64_t offset, T v) {
    std::memcpy(bytes.data() + offset, &v, sizeof v);
  }
};

struct FakeAllgs {
  // go1.19's offsets (discover/go_types.cc's table): sched at 56 (gobuf sp 0, pc 8, bp 48),
  // atomicstatus 144, waitreason 176.
  ParkedGoroutineLayout layout{0, 144, 176, 56, 64, 104};
  std::vector<FakeG> gs;
  std::vector<uint64_t> pointers;
  uint64_t header[2] = {0, 0};

  explicit FakeAllgs(size_t n) : gs(n) {}
  void add(size_t i, uint32_t status, uint8_t wait, uint64_t pc, uint64_t sp, uint64_t bp) {
    gs[i].put(layout.status, status);
    gs[i].put(layout.waitreason, wait);
    gs[i].put(layout.sched_pc, pc);
    gs[i].put(layout.sched_sp, sp);
    gs[i].put(layout.sched_bp, bp);
  }
  uint64_t g(size_t i) { return reinterpret_cast<uint64_t>(gs[i].bytes.data()); }
  const ParkedGoroutineLayout& finish() {
    pointers.clear();
    for (size_t i = 0; i < gs.size(); ++i) pointers.push_back(g(i));
    header[0] = reinterpret_cast<uint64_t>(pointers.data());
    header[1] = pointers.size();
    layout.allgs = reinterpret_cast<uint64_t>(header);
    return layout;
  }
};

TEST(go_goroutines, parked_ones_are_the_waiting_gs_with_their_registers) {
  FakeAllgs all(5);
  all.add(0, kRunning, 0, 0x1000, 0x2000, 0x3000);
  all.add(1, kWaiting, 14, 0x401000, 0xc000100, 0xc000180);         // chan receive, say
  all.add(2, kDead, 3, 1, 2, 3);
  all.add(3, kWaiting | kScan, 7, 0x402000, 0xc000200, 0xc000280);  // being scanned: still parked
  all.add(4, kWaiting, 20, 0x403000, 0xc000300, 0xc000380);
  const auto& layout = all.finish();
  auto parked = parked_goroutines(getpid(), layout);
  ASSERT_TRUE(parked.has_value()) << parked.error().message;
  ASSERT_EQ(parked->size(), 3u);
  const ParkedGoroutine& first = (*parked)[0];
  EXPECT_EQ(first.g, all.g(1));
  EXPECT_EQ(first.wait, 14);
  EXPECT_EQ(first.pc, 0x401000u);
  EXPECT_EQ(first.sp, 0xc000100u);
  EXPECT_EQ(first.bp, 0xc000180u);
  EXPECT_EQ((*parked)[1].g, all.g(3));
  EXPECT_EQ((*parked)[1].wait, 7);
  EXPECT_EQ((*parked)[2].pc, 0x403000u);

  // Still parked where it was read; not once it ran, nor parked elsewhere since.
  EXPECT_TRUE(still_parked(getpid(), layout, first));
  all.add(1, kRunning, 14, 0x401000, 0xc000100, 0xc000180);
  EXPECT_FALSE(still_parked(getpid(), layout, first));
  all.add(1, kWaiting, 9, 0x405000, 0xc000100, 0xc000180);
  EXPECT_FALSE(still_parked(getpid(), layout, first));
}

TEST(go_goroutines, an_allgs_too_long_is_refused) {
  FakeAllgs all(1);
  all.finish();
  all.header[1] = kMaxCensusGoroutines + 1;
  auto parked = parked_goroutines(getpid(), all.layout);
  ASSERT_FALSE(parked.has_value());
  EXPECT_NE(parked.error().message.find("more than uscope reads"), std::string::npos);
}

}  // namespace
}  // namespace uscope
