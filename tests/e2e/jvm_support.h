#pragma once
// What the JVM says of itself, for the e2e tests of Java frames: `jcmd PID Compiler.codelist`
// (every nmethod: compile id, comp level, method, address) and javap's LineNumberTable (the line
// of each bytecode index). Sources other than uscope.
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "e2e_support.h"

namespace uscope::e2e {

struct CodelistEntry {
  int compile_id = 0;
  int level = 0;
  std::string method;  // "java.lang.String.hashCode"
  std::string signature;
  uint64_t blob = 0;  // the nmethod's address (the first of the bracketed addresses)
};

// "7 4 0 HotLoop.hotMethod(J)J [0x00007f2e5cec7490, 0x00007f2e5cec7620 - 0x00007f2e5cec77f8]":
// compile id, comp level, state, method with signature, [blob, code begin - code end].
inline std::vector<CodelistEntry> codelist(pid_t pid) {
  auto r = run({"/usr/bin/jcmd", std::to_string(pid), "Compiler.codelist"}, 120);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  static const std::regex kLine(R"(^(\d+) (\d+) \d+ ([^ (]+)(\(\S*) \[0x([0-9a-f]+), )");
  std::vector<CodelistEntry> out;
  std::istringstream in(r.out);
  for (std::string line; std::getline(in, line);) {
    std::smatch m;
    if (!std::regex_search(line, m, kLine)) continue;
    out.push_back({std::stoi(m[1]), std::stoi(m[2]), m[3], m[4], std::stoull(m[5], nullptr, 16)});
  }
  return out;
}

// javap -l: each method's LineNumberTable, as (start bci, line) in class-file order.
inline std::map<std::string, std::vector<std::pair<int, int>>> javap_lines(const std::string& cls) {
  std::string text = shell("javap -l -cp " + fixture("java") + " " + cls);
  std::map<std::string, std::vector<std::pair<int, int>>> out;
  static const std::regex kMethod(R"(^  \S.* ([A-Za-z_$][\w$]*)\(.*\);$)");
  static const std::regex kLine(R"(^\s+line (\d+): (\d+)$)");
  std::string method;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    std::smatch m;
    if (std::regex_match(line, m, kMethod))
      method = cls + "." + m[1].str();
    else if (std::regex_match(line, m, kLine) && !method.empty())
      out[method].emplace_back(std::stoi(m[2]), std::stoi(m[1]));
  }
  return out;
}

// The line of `bci` by the class file's table, as the JVM answers (Method::line_number_from_bci).
inline int line_at(const std::vector<std::pair<int, int>>& table, int bci) {
  if (bci < 0) bci = 0;
  int best_bci = 0, best = -1;
  for (auto [b, line] : table) {
    if (b == bci) return line;
    if (b < bci && b >= best_bci) {
      best_bci = b;
      best = line;
    }
  }
  return best;
}

// Until `method` ("JavaPaths.compiledOuter") is in the codelist at comp level `level` (4: C2).
inline testing::AssertionResult wait_for_compiled(pid_t pid, const std::string& method, int level) {
  return wait_until(
      method + " compiled at level " + std::to_string(level) + " (jcmd Compiler.codelist)",
      [&] {
        for (const CodelistEntry& e : codelist(pid))
          if (e.method == method && e.level == level) return true;
        return false;
      },
      std::chrono::seconds(120));
}

}  // namespace uscope::e2e
