// The agent's continuous profile on a real process: a ProfileSession samples a fixture that
// works in phase_a, then in phase_b; the session's periods taken after each phase (as the agent
// takes them) each hold only their phase's samples (about 99 a CPU second of the phase,
// as the fixture's own clock counts it), pushed per process to a Pyroscope stand-in and read back
// by `go tool pprof`.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <regex>
#include <thread>

#include "../unit/pprof_decode.h"
#include "../unit/pyroscope_receiver.h"
#include "../unit/temp_dir.h"
#include "../unit/tool_output.h"
#include "agent/profile_source.h"
#include "cli/profile_session.h"
#include "e2e_support.h"
#include "export/profile_export.h"

namespace uscope::e2e {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// Samples whose stack holds `function` anywhere.
uint64_t samples_in(const Profile& p, const std::string& function) {
  uint64_t n = 0;
  for (const ProfileSample& s : p.samples) {
    bool in = false;
    for (uint32_t l : s.locations)
      for (const ProfileLine& line : p.locations[l].lines)
        in |= p.functions[line.function].name == function;
    if (in) n += s.count;
  }
  return n;
}

// "phase a cpu ns N" in the fixture's last words, in seconds.
double cpu_seconds(const std::string& out, char phase) {
  std::smatch m;
  std::regex_search(out, m, std::regex(fmt::format(R"(phase {} cpu ns (\d+))", phase)));
  return m.empty() ? 0 : std::stod(m[1].str()) / 1e9;
}

TEST(continuous_profile, periods_of_a_session_hold_only_their_own_samples) {
  USCOPE_REQUIRE_ROOT();
  GatedProcess target({fixture("profile/profile_phases")});
  cli::ProfileTarget t;
  t.pids = {target.pid()};
  t.frequency_hz = 99;
  auto session = cli::ProfileSession::open(t);
  ASSERT_TRUE(session) << session.error().message;
  ASSERT_TRUE((*session)->start());

  // The fixture is driven from a thread; the session's loop takes each period between phases
  // (periods are read on the loop's thread, as the agent does), and after the second the
  // cumulative snapshot.
  std::atomic<int> step = 0;  // 1: phase a done, 2: period 1 taken, 3: b done, 4: taken, -1: failed
  std::thread driver([&] {
    auto phase = [&](const std::string& line, const std::string& done, int next, int then) {
      target.send(line);
      if (!target.wait_for_line(done)) return false;
      step = next;
      while (step == next) std::this_thread::sleep_for(std::chrono::milliseconds(5));
      return step == then;
    };
    if (!phase("a 500\n", "phase a done", 1, 2) || !phase("b 500\n", "phase b done", 3, 4))
      step = -1;
  });
  Profile first, second, snap2;
  std::optional<Error> failed;
  EventLoop::Callbacks cb = (*session)->callbacks();
  cb.data_poll = std::chrono::milliseconds(10);
  auto session_done = cb.done;
  cb.done = [&] {
    if (step == 1 || step == 3) {
      auto p = (*session)->period();
      if (!p) failed = p.error();
      (step == 1 ? first : second) = p ? std::move(*p) : Profile{};
      if (step == 3) {
        auto s = (*session)->snapshot();
        if (!s) failed = s.error();
        snap2 = s ? std::move(*s) : Profile{};
      }
      step = step + 1;
    }
    return step == 4 || step == -1 || session_done();
  };
  auto stopped = (*session)->run(cb);
  if (step != 4) step = -1;
  driver.join();
  ASSERT_TRUE(stopped) << stopped.error().message;
  ASSERT_FALSE(failed) << failed->message;
  ASSERT_EQ(step, 4) << "the fixture did not finish its phases";
  session->reset();
  EXPECT_TRUE(links_released("profile_sample"));

  // Each period holds its phase and nothing of the other.
  const uint64_t a = samples_in(first, "phase_a"), b = samples_in(second, "phase_b");
  EXPECT_GT(a, 0u);
  EXPECT_GT(b, 0u);
  EXPECT_EQ(samples_in(first, "phase_b"), 0u);
  EXPECT_EQ(samples_in(second, "phase_a"), 0u);
  // Nothing counted twice or lost between the periods: the kernel's cumulative counts.
  EXPECT_EQ(samples_in(snap2, "phase_a"), a);
  EXPECT_EQ(samples_in(snap2, "phase_b"), b);
  EXPECT_EQ(first.total_samples() + second.total_samples(), snap2.total_samples());

  // The agent's export of the two periods: one push per period for the one process.
  test::PyroscopeReceiver rx;
  auto exporter = ProfileExport::open({rx.url(), ""}, profile_sources("node-1"));
  ASSERT_TRUE(exporter) << exporter.error().message;
  ASSERT_TRUE((*exporter)->export_period(first));
  ASSERT_TRUE((*exporter)->export_period(second));
  (*exporter)->drain();
  const std::vector<test::Ingest> pushes = rx.received();
  ASSERT_EQ(pushes.size(), 2u);
  const std::string pid = std::to_string(target.pid());
  EXPECT_EQ(pushes[1].query.at("name"),
            "profile_phases{service_name=profile_phases,process=profile_phases,executable=" +
                std::filesystem::canonical(fixture("profile/profile_phases")).string() +
                ",pid=" + pid + ",host=node-1}");
  EXPECT_EQ(pushes[1].query.at("sampleRate"), "99");
  const auto pushed = test::pprof_decoded(pushes[1].parts.at("profile"));
  int64_t pushed_b = 0, pushed_total = 0;
  for (const auto& [stack, n] : test::pprof_stacks(pushed)) {
    EXPECT_THAT(stack, Not(HasSubstr("phase_a")));
    if (stack.find("phase_b") != std::string::npos) pushed_b += n;
    pushed_total += n;
  }
  EXPECT_EQ(pushed_b, static_cast<int64_t>(b));
  EXPECT_EQ(pushed_total, static_cast<int64_t>(second.total_samples()));

  test::TempDir dir;
  const std::string home = dir.str(), saved = home + "/pushed.pb.gz";
  std::ofstream(saved, std::ios::binary) << pushes[1].parts.at("profile");
  const std::string raw =
      test::command_output("cd " + home + " && HOME=" + home + " GOCACHE=" + home +
                           "/gocache go tool pprof -raw " + saved + " 2>&1");
  EXPECT_THAT(raw, HasSubstr("phase_b")) << raw;
  EXPECT_THAT(raw, HasSubstr("main")) << raw;
  EXPECT_THAT(raw, Not(HasSubstr("phase_a"))) << raw;

  // The fixture's own count of its phases' CPU time, as it ends.
  std::string last_words;
  target.send("q\n");
  EXPECT_EQ(target.wait(&last_words), 0);
  // About 99 samples a CPU second of the phase, by the fixture's own clock (names_test's bound).
  for (auto [n, phase] : {std::pair{a, 'a'}, std::pair{b, 'b'}}) {
    const double expected = 99.0 * cpu_seconds(last_words, phase);
    EXPECT_GT(expected, 40.0) << last_words;  // 500 ms of CPU
    EXPECT_LE(std::abs(static_cast<double>(n) - expected), 5 * std::sqrt(expected) + 3)
        << n << " samples in phase " << phase << ", expected " << expected;
  }
}

}  // namespace
}  // namespace uscope::e2e
