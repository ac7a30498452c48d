// The one histogram renderer: bcc's look (latency) and bpftrace's (hist, --by), byte for byte as
// those tools print them, from the first to the last bucket that is not zero.
#include "sink/histogram_bars.h"
#include "mem_file.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

namespace uscope {
namespace {

using test::MemFile;

TEST(histogram_bars, bpftrace_look_pads_labels_to_the_longest_and_bars_to_52) {
  std::vector<uint64_t> b = {0, 2, 0, 4, 1, 0};
  const char* labels[] = {"[0]", "[1]", "[2, 4)", "[4, 8)", "[8, 16)", "[16, 32)"};
  MemFile out;
  print_histogram_bars(
      b, [&](size_t i) { return std::string(labels[i]); }, BarStyle::Bpftrace, out.get());
  EXPECT_EQ(out.str(), "[1]            2 |" + std::string(26, '@') + std::string(26, ' ') + "|\n" +
                           "[2, 4)         0 |" + std::string(52, ' ') + "|\n" +
                           "[4, 8)         4 |" + std::string(52, '@') + "|\n" +
                           "[8, 16)        1 |" + std::string(13, '@') + std::string(39, ' ') +
                           "|\n");
}

TEST(histogram_bars, bcc_look_has_its_header_and_bars_of_40) {
  std::vector<uint64_t> b = {0, 0, 3, 1};
  MemFile out;
  print_histogram_bars(
      b, [](size_t i) { return std::to_string(i) + " -> " + std::to_string(i); }, BarStyle::Bcc,
      out.get(), "nsecs");
  EXPECT_EQ(out.str(),
            "                   nsecs : count      distribution\n"
            "2 -> 2 : 3          |" +
                std::string(40, '*') + "|\n" + "3 -> 3 : 1          |" + std::string(13, '*') +
                std::string(27, ' ') + "|\n");
}

TEST(histogram_bars, nothing_when_every_bucket_is_zero) {
  std::vector<uint64_t> b(8, 0);
  MemFile out;
  print_histogram_bars(
      b, [](size_t) { return std::string("x"); }, BarStyle::Bcc, out.get(), "nsecs");
  EXPECT_EQ(out.str(), "");
}

}  // namespace
}  // namespace uscope
