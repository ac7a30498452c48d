// Every command's --help ends with its examples; docs/COMMAND.md shows the same lines, and the man
// page made from the help (build/man/uscope-COMMAND.1, installed by cmake --install) shows them
// when man renders it.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "e2e_support.h"

namespace uscope::e2e {
namespace {

const std::vector<std::string> kCommands = {
    "trace", "count", "latency", "hist",  "list", "profile", "top",   "http", "tls",
    "stat",  "check", "dump",    "agent", "gc",   "threads", "calls", "flow", "objnew",
    "memleak"};

// docs/COMMAND.md; the agent's page is docs/AGENT.md, as the issue and deploy/ name it.
std::string doc_of(const std::string& command) {
  return "docs/" + (command == "agent" ? std::string("AGENT") : command) + ".md";
}

std::vector<std::string> split_lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

// The lines between "Examples:" and the blank line that ends them.
std::vector<std::string> examples_of(const std::string& help) {
  std::vector<std::string> examples;
  bool in = false;
  for (const auto& line : split_lines(help)) {
    if (line == "Examples:") {
      in = true;
    } else if (in && line.empty()) {
      break;
    } else if (in) {
      examples.push_back(line);
    }
  }
  return examples;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(help, every_command_ends_with_examples_of_itself) {
  for (const auto& command : kCommands) {
    SCOPED_TRACE(command);
    auto r = uscope({command, "--help"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    auto examples = examples_of(r.out);
    ASSERT_GE(examples.size(), 2u) << r.out;
    // An example is a command line, then what it does, indented further.
    for (size_t i = 0; i < examples.size(); i += 2) {
      EXPECT_EQ(examples[i].rfind("  uscope " + command, 0), 0u) << examples[i];
      ASSERT_LT(i + 1, examples.size());
      EXPECT_EQ(examples[i + 1].rfind("      ", 0), 0u) << examples[i + 1];
    }
    EXPECT_NE(r.out.find("Reference: " + doc_of(command)), std::string::npos);
  }
}

TEST(help, docs_show_the_examples_help_shows) {
  for (const auto& command : kCommands) {
    SCOPED_TRACE(command);
    auto path = std::string(USCOPE_SOURCE_DIR) + "/" + doc_of(command);
    auto page = split_lines(read_file(path));
    ASSERT_FALSE(page.empty()) << path;
    for (const auto& line : examples_of(uscope({command, "--help"}).out))
      EXPECT_NE(std::find(page.begin(), page.end(), line), page.end())
          << path << " lacks the example line of --help:\n"
          << line;
  }
}

TEST(help, man_pages_show_the_examples) {
  for (const auto& command : kCommands) {
    SCOPED_TRACE(command);
    auto page = std::string(USCOPE_MAN_DIR) + "/uscope-" + command + ".1";
    // man renders the page as a reader sees it: an EXAMPLES section, each command line whole.
    auto shown = shell("MANWIDTH=100 man -l " + page + "");
    EXPECT_NE(shown.find("\nEXAMPLES\n"), std::string::npos) << shown;
    EXPECT_NE(shown.find("uscope-" + command), std::string::npos) << shown;
    for (const auto& line : examples_of(uscope({command, "--help"}).out)) {
      if (line.rfind("  uscope ", 0) != 0) continue;
      EXPECT_NE(shown.find(line.substr(2)), std::string::npos)
          << page << " does not show the example\n"
          << line << "\nman shows:\n"
          << shown;
    }
  }
  auto root = shell("MANWIDTH=100 man -l " + std::string(USCOPE_MAN_DIR) + "/uscope.1");
  EXPECT_NE(root.find("uscope-trace(1)"), std::string::npos) << root;
}

}  // namespace
}  // namespace uscope::e2e
