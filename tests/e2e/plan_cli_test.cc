// The planner seen through the CLI: trace globs attach a probe per function through uprobe_multi
// links, and `list` shows the entry site `trace -v` reports for a probe reading every argument.
#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>
#include <vector>

#include "e2e_support.h"

namespace uscope::e2e {
namespace {

const std::string kGlobTargets = fixture("native/glob_targets");

TEST(plan_cli, trace_glob_prints_each_function_as_its_own_probe) {
  USCOPE_REQUIRE_ROOT();
  auto r = uscope({"trace", "--json", "-v", "-c", kGlobTargets + " 3", R"(p::glob_* "%d", arg1)"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::map<std::string, std::vector<std::string>> messages;
  for (const auto& j : json_lines(r.out))
    if (j["kind"] == "event") messages[j["function"]].push_back(j["message"]);
  const std::vector<std::string> calls = {"0", "1", "2"};
  EXPECT_EQ(messages, (std::map<std::string, std::vector<std::string>>{
                          {"glob_alpha", calls}, {"glob_beta", calls}, {"glob_gamma", calls}}))
      << r.out;
  EXPECT_EQ(summary_count(r.err, " sites attached through 1 uprobe_multi links"), 3) << r.err;
  // The function the kernel cannot probe is named and counted, not silently dropped.
  EXPECT_NE(r.err.find("glob_unprobeable"), std::string::npos) << r.err;
  EXPECT_EQ(summary_count(r.err, " function(s) matched by a glob not probed"), 1) << r.err;
  EXPECT_TRUE(links_released("trace_"));
}

struct VerboseSite {
  uint64_t offset = 0;
  std::string cost;
  std::string insn;  // the instruction at the site, as trace -v names it
};

// "site NAME entry OBJECT @ 0xOFFSET  COST (insn)..." lines of trace -v, by NAME.
std::map<std::string, VerboseSite> verbose_sites(const std::string& err) {
  std::map<std::string, VerboseSite> out;
  static const std::regex line(R"(^site (\S+) +entry .* @ (0x[0-9a-f]+)  (\S+) \(([^)]*)\))");
  std::istringstream in(err);
  for (std::string l; std::getline(in, l);) {
    std::smatch m;
    if (std::regex_search(l, m, line))
      out[m[1]] = {std::stoull(m[2], nullptr, 16), m[3].str(), m[4].str()};
  }
  return out;
}

// `function`'s instructions as objdump disassembles them (Intel syntax, as trace -v prints):
// file offset -> mnemonic, in address order.
std::vector<std::pair<uint64_t, std::string>> objdump_instructions(const std::string& path,
                                                                   const std::string& function) {
  std::vector<std::pair<uint64_t, std::string>> out;
  std::istringstream in(
      shell("objdump -d -F -M intel --no-show-raw-insn --disassemble='" + function + "' " + path));
  static const std::regex label(R"(^([0-9a-f]+) <.*> \(File Offset: (0x[0-9a-f]+)\):)");
  static const std::regex insn(R"(^ *([0-9a-f]+):\s+(\S+))");
  uint64_t start = 0, start_offset = 0;
  bool in_function = false;
  for (std::string l; std::getline(in, l);) {
    std::smatch m;
    if (std::regex_search(l, m, label)) {
      in_function = true;
      start = std::stoull(m[1], nullptr, 16);
      start_offset = std::stoull(m[2], nullptr, 16);
    } else if (l.empty()) {
      in_function = false;
    } else if (in_function && std::regex_search(l, m, insn)) {
      out.emplace_back(start_offset + std::stoull(m[1], nullptr, 16) - start, m[2].str());
    }
  }
  return out;
}

// The position of the instruction at `offset` in `insns`; -1 when no instruction starts there.
int instruction_at(const std::vector<std::pair<uint64_t, std::string>>& insns, uint64_t offset) {
  for (size_t i = 0; i < insns.size(); ++i)
    if (insns[i].first == offset) return static_cast<int>(i);
  return -1;
}

TEST(plan_cli, list_entry_site_is_where_trace_attaches) {
  USCOPE_REQUIRE_ROOT();
  // reads_decide_site's site depends on the reads (arg2 is clobbered before the emulated push);
  // Go functions are never moved by trace, and list used to move them.
  for (const auto& [cmd, function] : std::vector<std::pair<std::string, std::string>>{
           {kGlobTargets + " 1", "reads_decide_site"},
           {kGlobTargets + " 1", "glob_alpha"},
           {fixture("go/gowork") + " 1", "main.main"}}) {
    std::string path = cmd.substr(0, cmd.find(' '));
    auto list = uscope({"list", "--json", path, function});
    ASSERT_EQ(list.exit_code, 0) << list.err;
    auto rows = json_lines(list.out);
    ASSERT_EQ(rows.size(), 1u) << list.out;
    const auto& listed = rows[0]["entry_site"];

    // On Go code with DWARF argN is the Nth parameter (main.main has none): its registers are
    // read as ctx->REG.
    const std::string args = function == "main.main"
                                 ? "ctx->ax, ctx->bx, ctx->cx, ctx->di, ctx->si, ctx->r8"
                                 : "arg1, arg2, arg3, arg4, arg5, arg6";
    auto trace =
        uscope({"trace", "-v", "-c", cmd, "p::" + function + R"( "%d %d %d %d %d %s", )" + args});
    ASSERT_EQ(trace.exit_code, 0) << trace.err;
    auto sites = verbose_sites(trace.err);
    ASSERT_TRUE(sites.contains(function)) << trace.err;
    const VerboseSite& traced = sites[function];
    EXPECT_EQ(listed["file_offset"].get<uint64_t>(), traced.offset) << function;
    EXPECT_EQ(listed["cost"].get<std::string>(), traced.cost) << function;

    // Both against objdump: the site is an instruction of the function, the one trace names.
    const auto insns = objdump_instructions(path, function);
    ASSERT_GE(insns.size(), 2u) << function;
    const int at = instruction_at(insns, traced.offset);
    ASSERT_GE(at, 0) << function << ": no instruction starts at " << traced.offset;
    EXPECT_EQ(traced.insn.substr(0, traced.insn.find(' ')), insns[at].second) << function;
    // Never past reads_decide_site's `xor esi, esi` (objdump's third instruction): arg2 is read.
    if (function == "reads_decide_site") {
      EXPECT_LE(at, 2) << "past the xor that clobbers arg2";
    }
  }
  // And a probe that reads only arg1 goes further than list shows, as list's help says: up to
  // the emulated push, past the xor (objdump's third and fourth instructions).
  auto one =
      uscope({"trace", "-v", "-c", kGlobTargets + " 1", R"(p::reads_decide_site "%d", arg1)"});
  ASSERT_EQ(one.exit_code, 0) << one.err;
  auto list = uscope({"list", "--json", kGlobTargets, "reads_decide_site"});
  auto rows = json_lines(list.out);
  ASSERT_EQ(rows.size(), 1u);
  const uint64_t further = verbose_sites(one.err)["reads_decide_site"].offset;
  EXPECT_GT(further, rows[0]["entry_site"]["file_offset"].get<uint64_t>());
  const auto insns = objdump_instructions(kGlobTargets, "reads_decide_site");
  EXPECT_GE(instruction_at(insns, further), 3) << "not past the xor";
}

}  // namespace
}  // namespace uscope::e2e
