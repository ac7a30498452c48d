#pragma once
// A runtime fixture (tests/fixtures/runtime) under a uscope runtime tool: the program started and
// ready, the tool attached to it (`tool_args` then `-p PID`), commands asked and answered, then
// the program ended at once and the tool's JSON lines read.
#include <gtest/gtest.h>

#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "e2e_support.h"

namespace uscope::e2e {

struct RuntimeFixture {
  RuntimeFixture(std::vector<std::string> program, std::vector<std::string> tool_args) {
    this->program = std::make_unique<GatedProcess>(std::move(program));
    if (!this->program->wait_for_line("ready")) return;
    tool_args.insert(tool_args.begin(), USCOPE_BIN);
    tool_args.insert(tool_args.end(), {"-p", std::to_string(this->program->pid())});
    tool = std::make_unique<RunningCommand>(tool_args);
    attached = tool->wait_for_stderr("Ctrl-C to stop");
  }
  // Sends `command`; the numbers of the program's answer after its first word.
  std::vector<int64_t> ask(const std::string& command) {
    program->send(command + "\n");
    std::vector<int64_t> numbers;
    const std::string word = command.substr(0, command.find(' '));
    if (!program->wait_for_line(word)) return numbers;
    std::istringstream in(program->last_line().substr(word.size()));
    for (int64_t n; in >> n;) numbers.push_back(n);
    return numbers;
  }
  // Ends the program (at once, without an orderly exit's own collections) and then the tool:
  // its JSON lines; `result` holds all it printed.
  std::vector<nlohmann::json> finish() {
    program->send("exit\n");
    program->wait();
    result = tool->finish();
    EXPECT_EQ(result.exit_code, 0) << result.err;
    return json_lines(result.out);
  }
  // The last JSON line's "summary" and the others, apart.
  static nlohmann::json split_summary(std::vector<nlohmann::json>& lines) {
    nlohmann::json summary;
    std::erase_if(lines, [&](const nlohmann::json& j) {
      if (!j.contains("summary")) return false;
      summary = j["summary"];
      return true;
    });
    return summary;
  }

  std::unique_ptr<GatedProcess> program;
  std::unique_ptr<RunningCommand> tool;
  testing::AssertionResult attached = testing::AssertionFailure();
  CommandResult result;
};

}  // namespace uscope::e2e
