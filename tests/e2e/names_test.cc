// Names a user reads for addresses, checked against the binaries themselves (nm, the vdso's own
// symbols, the path the test started): a process that exits before uscope reads its events, a
// program started through a symlink, the vdso, a frame without a name in a profile; and how many
// samples a profile takes of a busy thread at the default rate.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>

#include "e2e_support.h"
#include "folded.h"

namespace uscope::e2e {
namespace {

std::string temp_path(const std::string& name) {
  return testing::TempDir() + "uscope_names_" + std::to_string(getpid()) + "_" + name;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// The function nm names at link-time address `address` of `binary` ("" when none).
std::string nm_name_at(const std::string& binary, const std::string& address) {
  unsigned long want = std::stoul(address, nullptr, 16);
  std::istringstream in(shell("nm --defined-only " + binary));
  for (std::string line; std::getline(in, line);) {
    std::istringstream f(line);
    std::string value, type, name;
    if (f >> value >> type >> name && (type == "T" || type == "t") &&
        std::stoul(value, nullptr, 16) == want)
      return name;
  }
  return "";
}

// What start_and_exit printed: its thread's start routine at a link-time address.
std::string start_routine_address(const std::string& out) {
  std::smatch m;
  EXPECT_TRUE(
      std::regex_search(out, m, std::regex(R"(started_thread at link address (0x[0-9a-f]+))")))
      << out;
  return m.size() > 1 ? m[1].str() : "0";
}

// The message of the one pthread_create event in bcc's trace output ("PID TID COMM FUNC msg").
std::string pthread_create_message(const std::string& out) {
  auto lines = lines_with(out, " pthread_create ");
  EXPECT_EQ(lines.size(), 1u) << out;
  if (lines.empty()) return "";
  const std::string& l = lines[0];
  std::string message =
      l.substr(l.find(" pthread_create ") + std::string(" pthread_create ").size());
  return message.substr(std::min(message.find_first_not_of(' '), message.size()));
}

TEST(names, start_routine_of_a_command_that_exits_at_once_is_named) {
  USCOPE_REQUIRE_ROOT();
  const std::string prog = fixture("native/start_and_exit");
  // Every run: the process is gone before its event is read, each time.
  for (int run = 0; run < 5; ++run) {
    auto r = uscope({"trace", "-c", prog, R"(p:c:pthread_create "%U", arg3)"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const std::string name = nm_name_at(prog, start_routine_address(r.out));
    ASSERT_EQ(name, "started_thread");
    EXPECT_EQ(pthread_create_message(r.out), name + "+0x0 [start_and_exit]") << r.out;
  }
}

TEST(names, user_stack_of_a_command_that_exits_at_once_is_named) {
  USCOPE_REQUIRE_ROOT();
  const std::string prog = fixture("native/start_and_exit");
  // main called pthread_create: nm knows main, and the stack names it in the program.
  ASSERT_NE(shell("nm --defined-only " + prog).find(" T main\n"), std::string::npos);
  for (int run = 0; run < 5; ++run) {
    auto r = uscope({"trace", "-U", "-c", prog, "p:c:pthread_create"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.out.find("[unknown"), std::string::npos) << r.out;
    auto main_frames = lines_with(r.out, " main+0x");
    ASSERT_EQ(main_frames.size(), 1u) << r.out;
    EXPECT_NE(main_frames[0].find(" [start_and_exit]"), std::string::npos) << r.out;
  }
}

// count, latency and hist --by ustack share trace's way of naming a process that is gone: its
// maps as it exited. The stack starts in the program's started_thread, which nm names.
// `command`: the fixture's path, then any arguments.
void expect_exited_command_named(const std::string& prog, const std::string& command, int runs) {
  for (int run = 0; run < runs; ++run) {
    auto r = uscope(
        {"count", "--json", "-c", command, "p:" + prog + ":started_thread", "--by", "ustack"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const std::string name = nm_name_at(prog, start_routine_address(r.out));
    ASSERT_EQ(name, "started_thread");
    nlohmann::json row;
    for (const auto& j : json_lines(r.out))
      if (j.value("kind", "") == "count") row = j;
    ASSERT_FALSE(row.is_null()) << r.out;
    EXPECT_EQ(row["count"], 1) << row.dump();
    const auto& stack = row["key"]["ustack"];
    ASSERT_FALSE(stack.empty()) << row.dump();
    EXPECT_EQ(stack[0], name + "+0x0 [start_and_exit]") << "run " << run << ": " << row.dump();
    EXPECT_EQ(row.dump().find("[unknown"), std::string::npos) << row.dump();
  }
}

TEST(names, ustack_key_of_a_command_that_exits_at_once_is_named) {
  USCOPE_REQUIRE_ROOT();
  const std::string prog = fixture("native/start_and_exit");
  expect_exited_command_named(prog, prog, 5);
}

// The kernel reads an exiting process's maps under a lock it may only try to take (a tracepoint
// cannot sleep); here another thread of the process holds it for writing (mmap, munmap) over and
// over as the process exits. uscope tries again rather than keeping maps it could not read.
TEST(names, ustack_key_of_a_command_that_exits_while_it_maps_memory_is_named) {
  USCOPE_REQUIRE_ROOT();
  const std::string prog = fixture("native/start_and_exit");
  expect_exited_command_named(prog, prog + " mapping", 5);
}

TEST(names, a_program_started_through_a_symlink_is_named_as_started) {
  USCOPE_REQUIRE_ROOT();
  const std::string prog = fixture("native/start_and_exit");
  const std::string link = temp_path("started_link");
  unlink(link.c_str());
  ASSERT_EQ(symlink(prog.c_str(), link.c_str()), 0);
  auto r = uscope({"trace", "-c", link, R"(p:c:pthread_create "%U", arg3)"});
  unlink(link.c_str());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string link_name = link.substr(link.rfind('/') + 1);
  EXPECT_EQ(pthread_create_message(r.out),
            "started_thread+0x0 [" + link_name + " (start_and_exit)]")
      << r.out;
}

TEST(names, vdso_frames_are_named_from_the_vdso_image) {
  USCOPE_REQUIRE_ROOT();
  const std::string image = temp_path("vdso.so");
  const std::string folded = temp_path("vdso.folded");
  auto r = uscope({"profile", "-F", "199", "-o", folded, "-c",
                   fixture("profile/profile_busy_for") + " 1500 vdso " + image});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // The process's own vdso exports clock_gettime's code as __vdso_clock_gettime (nm -D), the name
  // perf shows; libc's wrapper that calls it is clock_gettime.
  std::istringstream syms(shell("nm -D --defined-only " + image));
  std::map<std::string, std::string> address_of;
  for (std::string line; std::getline(syms, line);) {
    std::istringstream f(line);
    std::string value, type, name;
    if (f >> value >> type >> name) address_of[name.substr(0, name.find('@'))] = value;
  }
  ASSERT_TRUE(address_of.contains("__vdso_clock_gettime")) << shell("nm -D " + image);
  ASSERT_EQ(address_of["__vdso_clock_gettime"], address_of["clock_gettime"]);
  auto lines = parse_folded(read_file(folded));
  ASSERT_GT(total(lines), 0u);
  EXPECT_GT(share_with(lines, ";spin_in_vdso;clock_gettime;__vdso_clock_gettime;"), 0.5)
      << read_file(folded);
  unlink(image.c_str());
  unlink(folded.c_str());
}

TEST(names, a_profile_frame_without_a_name_says_why) {
  USCOPE_REQUIRE_ROOT();
  // The busy function's symbol removed: its code lies between other functions' symbols.
  const std::string copy = temp_path("busy_nospin");
  ASSERT_EQ(
      shell("objcopy -N spin " + fixture("profile/profile_busy_for") + " " + copy + " && echo ok"),
      "ok\n");
  ASSERT_EQ(shell("nm " + copy).find(" spin\n"), std::string::npos);
  const std::string folded = temp_path("nospin.folded");
  auto r = uscope({"profile", "-F", "199", "-o", folded, "-c", copy + " 1000"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string name = copy.substr(copy.rfind('/') + 1);
  auto lines = parse_folded(read_file(folded));
  EXPECT_GT(share_with(lines, ";main;[unknown: no symbol covers the address in " + name + "];"),
            0.5)
      << read_file(folded);
  unlink(copy.c_str());
  unlink(folded.c_str());
}

TEST(names, default_rate_samples_a_busy_thread_99_times_a_cpu_second) {
  USCOPE_REQUIRE_ROOT();
  const std::string folded = temp_path("busy.folded");
  auto r = uscope({"profile", "-o", folded, "-c", fixture("profile/profile_busy_for") + " 3000"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(r.out, m, std::regex(R"(process cpu ns (\d+))"))) << r.out;
  // The per-CPU timer takes a sample when it fires while the thread runs: 99 per CPU second it
  // ran, give or take a sample per slice of CPU it got (a few hundred under a CPU hog).
  const double expected = 99.0 * std::stod(m[1].str()) / 1e9;
  const double samples = static_cast<double>(total(parse_folded(read_file(folded))));
  EXPECT_LE(std::abs(samples - expected), 5 * std::sqrt(expected) + 3)
      << samples << " samples, expected " << expected << "\n"
      << r.err;
  unlink(folded.c_str());
}

}  // namespace
}  // namespace uscope::e2e
