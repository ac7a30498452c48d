// memleak's report (sink/memleak_report.h) on hand-built profiles of bytes: the totals, the order
// (growth since the last report, then bytes), a stack cut short counted in the whole stack it
// begins, and the estimates of sampled mode marked as such.
#include "sink/memleak_report.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <string>

namespace uscope {
namespace {

// leak_here;main;_start (complete), leak_here;main (cut short), other;main;_start (complete).
Profile leaks(uint64_t leak, uint64_t cut, uint64_t other) {
  Profile p;
  p.measure = ProfileMeasure::LiveBytes;
  p.mappings = {{0x1000, 0x2000, 0, "/usr/bin/leaker", "", true, false}};
  p.functions = {{"leak_here", "leak_here", ""},
                 {"main", "main", ""},
                 {"_start", "_start", ""},
                 {"other", "other", ""}};
  for (uint32_t f = 0; f < 4; ++f)
    p.locations.push_back({0x1000 + f * 0x10, 1, FrameKind::User, {{f, 0}}});
  auto sample = [&](std::vector<uint32_t> locs, uint64_t bytes, bool complete) {
    ProfileSample s;
    s.locations = std::move(locs);
    s.count = bytes;
    s.blocks = bytes / 4096;
    s.pid = 7;
    s.comm = "leaker";
    s.complete = complete;
    p.samples.push_back(s);
  };
  sample({0, 1, 2}, leak, true);
  sample({0, 1}, cut, false);
  sample({3, 1, 2}, other, true);
  return p;
}

std::string report(MemleakReport& r, const Profile& p) {
  char* buf = nullptr;
  size_t size = 0;
  std::FILE* f = open_memstream(&buf, &size);
  r.write(p, AllocCounts{}, 0, f);
  std::fclose(f);
  std::string out(buf, size);
  free(buf);
  return out;
}

TEST(memleak_report, counts_a_cut_stack_in_the_whole_stack_it_begins) {
  MemleakReport r(10);
  std::string out = report(r, leaks(4096, 8192, 40960));
  EXPECT_NE(out.find("53,248 bytes outstanding in 13 blocks from 2 stacks"), std::string::npos)
      << out;
  // Ordered by bytes at the first report: other's 40,960 first, then leak_here's 4,096 + 8,192.
  auto other = out.find("  40,960 bytes in 10 blocks from leaker (7):\n      other  (leaker)");
  auto leak = out.find(
      "  12,288 bytes in 3 blocks from leaker (7):\n      (2 of the blocks with this stack cut "
      "short");
  ASSERT_NE(other, std::string::npos) << out;
  ASSERT_NE(leak, std::string::npos) << out;
  EXPECT_LT(other, leak);
  EXPECT_NE(out.find("leak_here  (leaker)\n      main  (leaker)\n      _start  (leaker)\n"),
            std::string::npos)
      << out;
}

TEST(memleak_report, puts_the_stacks_that_grew_most_first) {
  MemleakReport r(10);
  report(r, leaks(4096, 0, 40960));
  std::string out = report(r, leaks(4096 * 5, 0, 40960));
  auto leak =
      out.find("  20,480 bytes in 5 blocks (+16,384 bytes, +4 blocks since the last report)");
  auto other = out.find("  40,960 bytes in 10 blocks (+0 bytes, +0 blocks since the last report)");
  ASSERT_NE(leak, std::string::npos) << out;
  ASSERT_NE(other, std::string::npos) << out;
  EXPECT_LT(leak, other);
}

TEST(memleak_report, says_what_it_leaves_out_and_what_is_estimated) {
  MemleakReport r(1);
  Profile sampled = leaks(4096, 0, 40960);
  sampled.sample_bytes = 512 * 1024;
  std::string out = report(r, sampled);
  EXPECT_NE(out.find("~45,056 bytes outstanding in ~11 blocks"), std::string::npos) << out;
  EXPECT_NE(out.find("one block per 512.0 KiB allocated on average"), std::string::npos) << out;
  EXPECT_NE(out.find("  ... 1 more stack hold ~4,096 bytes in ~1 blocks (--top shows more)"),
            std::string::npos)
      << out;
  MemleakReport empty(10);
  EXPECT_NE(report(empty, leaks(0, 0, 0)).find("no block outstanding"), std::string::npos);
}

}  // namespace
}  // namespace uscope
