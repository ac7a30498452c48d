// `uscope top` on a fixture whose shares of CPU time are fixed by its own design
// (profile_shares: work() calls hot() with three times warm()'s iterations of the same loop):
// on a pipe, one plain table per refresh whose rows hold those shares; in a pseudo-terminal, a
// live table that quits on q or Ctrl-C with the terminal restored and no BPF link left behind.
#include <gtest/gtest.h>
#include <poll.h>
#include <pty.h>
#include <signal.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <optional>
#include <regex>
#include <string>
#include <vector>

#include "e2e_support.h"

namespace uscope::e2e {
namespace {

std::string shares(int ms) {
  return fixture("profile/profile_shares") + " " + std::to_string(ms);
}

struct TopRow {
  double self = 0, total = 0;          // in the last refresh
  double self_all = 0, total_all = 0;  // since the start
  std::string function, module;
};

// The rows of the last table in `out`, by function.
std::vector<TopRow> last_table(const std::string& out) {
  auto at = out.rfind("uscope top ");
  std::vector<TopRow> rows;
  if (at == std::string::npos) return rows;
  static const std::regex kRow(
      R"(^ *([0-9.]+)% +([0-9.]+)% +([0-9.]+)% +([0-9.]+)% +(\S+) +(\S+)\s*$)");
  for (size_t nl; (nl = out.find('\n', at)) != std::string::npos; at = nl + 1) {
    std::string line = out.substr(at, nl - at);
    std::smatch m;
    if (!std::regex_match(line, m, kRow)) continue;
    rows.push_back(
        {std::stod(m[1]), std::stod(m[2]), std::stod(m[3]), std::stod(m[4]), m[5], m[6]});
  }
  return rows;
}

std::optional<TopRow> row_of(const std::vector<TopRow>& rows, const std::string& function) {
  for (const auto& r : rows)
    if (r.function == function) return r;
  return std::nullopt;
}

TEST(top, pipe_prints_tables_whose_rows_hold_the_fixtures_shares) {
  USCOPE_REQUIRE_ROOT();
  auto r = uscope({"top", "-F", "199", "-d", "0.5", "-c", shares(1500)});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("target exited"), std::string::npos) << r.err;
  EXPECT_EQ(r.out.find('\x1b'), std::string::npos) << "escapes on a pipe:\n" << r.out;
  auto rows = last_table(r.out);
  ASSERT_FALSE(rows.empty()) << r.out;
  // hot() runs 3 of every 4 iterations, each its own leaf; work() is on every stack of both.
  EXPECT_EQ(rows[0].function, "hot") << r.out;  // sorted by self
  auto hot = row_of(rows, "hot"), warm = row_of(rows, "warm"), work = row_of(rows, "work");
  ASSERT_TRUE(hot && warm && work) << r.out;
  EXPECT_EQ(hot->module, "profile_shares");
  EXPECT_GE(hot->self_all, 55.0) << r.out;
  EXPECT_LE(hot->self_all, 90.0) << r.out;
  EXPECT_GE(warm->self_all, 12.0) << r.out;
  EXPECT_LE(warm->self_all, 40.0) << r.out;
  EXPECT_GE(hot->total_all, hot->self_all);
  EXPECT_GE(work->total_all, 90.0) << r.out;
  EXPECT_GE(work->total_all, hot->total_all + warm->total_all - 0.2) << r.out;  // rounding
  // The summary line of every profile, with the losses.
  EXPECT_NE(r.out.find("since start: "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("; lost: "), std::string::npos) << r.out;
  EXPECT_TRUE(links_released("profile_sample"));
}

TEST(top, sort_total_puts_the_caller_first) {
  USCOPE_REQUIRE_ROOT();
  auto r = uscope(
      {"top", "-U", "-F", "199", "-d", "0.5", "--sort", "total", "-n", "3", "-c", shares(500)});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto rows = last_table(r.out);
  ASSERT_EQ(rows.size(), 3u) << r.out;
  // Every user stack holds main and work (and libc's start): their totals come first.
  for (const auto& row : rows) EXPECT_GE(row.total_all, 90.0) << r.out;
  EXPECT_EQ(r.out.find("_[k]"), std::string::npos) << r.out;  // -U
  EXPECT_NE(r.out.find("more functions)"), std::string::npos) << r.out;
}

TEST(top, bad_input_fails_with_its_reason) {
  auto r = uscope({"top", "--sort", "name", "-p", "1"});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("--sort"), std::string::npos) << r.err;
  r = uscope({"top"});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("-p PID, -c CMD or -a"), std::string::npos) << r.err;
  r = uscope({"top", "-d", "0", "-p", "1"});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("--delay"), std::string::npos) << r.err;
  // No process has PID 2^22: pid_max is at most that (PID_MAX_LIMIT), and PIDs stay below it.
  pid_t unused = 1 << 22;
  r = uscope({"top", "-p", std::to_string(unused)});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("no process with PID"), std::string::npos) << r.err;
}

// build/uscope top in a pseudo-terminal: its screen read from the master side as it comes.
class TerminalTop {
 public:
  explicit TerminalTop(const std::vector<std::string>& args) {
    pid_ = forkpty(&master_, nullptr, nullptr, nullptr);
    if (pid_ == 0) {
      std::vector<std::string> argv{USCOPE_BIN, "top"};
      argv.insert(argv.end(), args.begin(), args.end());
      std::vector<char*> v;
      for (auto& a : argv) v.push_back(a.data());
      v.push_back(nullptr);
      execv(v[0], v.data());
      _exit(127);
    }
  }
  ~TerminalTop() {
    if (pid_ > 0 && !exit_code_) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
    if (master_ >= 0) close(master_);
  }
  TerminalTop(const TerminalTop&) = delete;
  TerminalTop& operator=(const TerminalTop&) = delete;

  pid_t pid() const { return pid_; }
  const std::string& screen() const { return screen_; }
  void type(const std::string& keys) {
    ASSERT_EQ(write(master_, keys.data(), keys.size()), static_cast<ssize_t>(keys.size()));
  }
  // The terminal's settings now (the master shares them with the side uscope holds).
  termios settings() const {
    termios t{};
    tcgetattr(master_, &t);
    return t;
  }

  // Until what uscope drew contains `text`.
  testing::AssertionResult wait_for(const std::string& text) {
    return wait_until("the screen shows '" + text + "'", [&] {
      read_available(100);
      return screen_.find(text) != std::string::npos;
    });
  }
  // Until uscope has exited (its screen read to the end); its exit code.
  testing::AssertionResult wait_exit(int& code) {
    auto r = wait_until("uscope exits", [&] {
      read_available(100);
      int status = 0;
      if (waitpid(pid_, &status, WNOHANG) != pid_) return false;
      exit_code_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      return true;
    });
    if (exit_code_) code = *exit_code_;
    while (read_available(0)) {
    }
    return r;
  }

 private:
  // What the master has, waiting up to `ms`; false when nothing came.
  bool read_available(int ms) {
    pollfd p{master_, POLLIN, 0};
    if (poll(&p, 1, ms) <= 0 || !(p.revents & POLLIN)) return false;
    char buf[65536];
    ssize_t n = read(master_, buf, sizeof buf);
    if (n <= 0) return false;  // EIO: the other side is closed
    screen_.append(buf, static_cast<size_t>(n));
    return true;
  }

  pid_t pid_ = -1;
  int master_ = -1;
  std::string screen_;
  std::optional<int> exit_code_;
};

// Quits on `keys` typed at its terminal: exit 0, the screen and the terminal's settings as they
// were, the last table printed plain, and no BPF link of its left.
void expect_clean_quit(const std::string& keys, const std::string& why) {
  USCOPE_REQUIRE_ROOT();
  GatedProcess target({fixture("profile/profile_shares"), "600000", "--gate"});
  target.start();
  TerminalTop top({"-F", "199", "-d", "0.2", "-p", std::to_string(target.pid())});
  ASSERT_GT(top.pid(), 0);
  ASSERT_TRUE(top.wait_for("q quits"));
  ASSERT_TRUE(top.wait_for("profile_shares"));  // a row of the live table
  const std::vector<int> held = bpf_links_held_by(top.pid(), "profile_sample");
  ASSERT_FALSE(held.empty());
  EXPECT_NE(top.screen().find("\x1b[?1049h"), std::string::npos);  // the alternate screen
  EXPECT_EQ(top.settings().c_lflag & (ICANON | ECHO), 0u) << "keys not read one at a time";
  top.type(keys);
  int code = -1;
  ASSERT_TRUE(top.wait_exit(code)) << top.screen();
  EXPECT_EQ(code, 0) << top.screen();
  const std::string& s = top.screen();
  auto left = s.rfind("\x1b[?1049l");
  ASSERT_NE(left, std::string::npos) << "the alternate screen was not left:\n" << s;
  EXPECT_NE(s.find("uscope: " + why, left), std::string::npos) << s;
  // The last table, plain, after the live screen is gone.
  auto table = s.find("uscope top ", left);
  ASSERT_NE(table, std::string::npos) << s;
  EXPECT_EQ(s.find('\x1b', table), std::string::npos) << s;
  EXPECT_NE(s.find(" hot ", table), std::string::npos) << s;
  // A new pseudo-terminal reads lines and echoes them: so again.
  EXPECT_EQ(top.settings().c_lflag & (ICANON | ECHO), static_cast<tcflag_t>(ICANON | ECHO));
  EXPECT_TRUE(wait_until("uscope's links are gone", [&] {
    auto now = bpf_links_of_programs("profile_sample");
    return std::none_of(held.begin(), held.end(),
                        [&](int id) { return std::find(now.begin(), now.end(), id) != now.end(); });
  }));
  EXPECT_EQ(kill(target.pid(), 0), 0) << "the target died";
}

TEST(top, terminal_quits_on_q) {
  expect_clean_quit("q", "quit");
}

TEST(top, terminal_quits_on_ctrl_c) {
  expect_clean_quit("\x03", "interrupted");
}

}  // namespace
}  // namespace uscope::e2e
