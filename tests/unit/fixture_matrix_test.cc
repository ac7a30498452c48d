// The planner and the symbolizer over tests/fixtures/matrix: one program built 24 ways (-O0/-O2/
// -O3, frame pointers or not, -fcf-protection or not, PIE or not). Every function's entry probe is
// placed inside the function on an instruction the kernel can probe, never dearer than the first
// one, moved only where the mover says why; and every function's start, middle and last byte, in a
// live process of every build, symbolize to its name.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "../fixtures/matrix/matrix_variants.h"
#include "discover/elf_file.h"
#include "plan/planner.h"
#include "symbolize/symbolizer.h"

namespace uscope {
namespace {

std::string variant_path(const std::string& v) {
  return std::string(USCOPE_FIXTURE_DIR) + "/matrix/" + v;
}

// Each function and the probe that reads all of its arguments.
const std::map<std::string, std::string> kProbes = {
    {"mx_args1", R"(p::mx_args1 "%ld", arg1)"},
    {"mx_args2", R"(p::mx_args2 "%ld %ld", arg1, arg2)"},
    {"mx_args3", R"(p::mx_args3 "%ld %ld %ld", arg1, arg2, arg3)"},
    {"mx_args4", R"(p::mx_args4 "%ld %ld %ld %ld", arg1, arg2, arg3, arg4)"},
    {"mx_args5", R"(p::mx_args5 "%ld %ld %ld %ld %ld", arg1, arg2, arg3, arg4, arg5)"},
    {"mx_args6", R"(p::mx_args6 "%ld %ld %ld %ld %ld %ld", arg1, arg2, arg3, arg4, arg5, arg6)"},
    {"mx_pointer", R"(p::mx_pointer "%ld", *(s64*)arg1)"},
    {"mx_string", R"(p::mx_string "%s", arg1)"},
    {"mx_recurse", R"(p::mx_recurse "%ld", arg1)"},
    {"mx_leaf", R"(p::mx_leaf "%ld", arg1)"},
    {"mx_caller", R"(p::mx_caller "%ld", arg1)"},
};

struct Symbol {
  uint64_t addr = 0;
  uint64_t offset = 0;
  uint64_t size = 0;
};

std::map<std::string, Symbol> function_symbols(const std::string& path) {
  std::map<std::string, Symbol> out;
  auto elf = ElfFile::open(path);
  EXPECT_TRUE(elf.has_value()) << path;
  if (!elf) return out;
  auto syms = elf->symbols();
  EXPECT_TRUE(syms.has_value()) << path;
  if (!syms) return out;
  for (const auto& s : *syms)
    if (s.defined && s.size && (kProbes.count(s.name) || s.name == "main"))
      out[s.name] = {s.addr, elf->vaddr_to_offset(s.addr).value_or(0), s.size};
  return out;
}

bool starts_with_endbr64(const ElfFile& elf, uint64_t addr) {
  auto code = elf.code_bytes(addr, 4);
  static const uint8_t kEndbr64[] = {0xf3, 0x0f, 0x1e, 0xfa};
  return code.size() >= 4 && std::equal(code.begin(), code.begin() + 4, kEndbr64);
}

TEST(fixture_matrix, every_entry_probe_is_placed_inside_its_function) {
  for (const auto& v : matrix_variants()) {
    SCOPED_TRACE(v);
    const std::string path = variant_path(v);
    const bool cet = v.find("-cet-") != std::string::npos;
    auto symbols = function_symbols(path);
    ASSERT_EQ(symbols.size(), kProbes.size() + 1);
    auto elf = ElfFile::open(path);
    ASSERT_TRUE(elf.has_value());
    for (bool move : {true, false}) {
      TargetContext ctx{nullptr, path, 0};
      ObjectCache cache(ctx);
      for (const auto& [name, text] : kProbes) {
        SCOPED_TRACE(name + (move ? "" : " --no-move"));
        const Symbol& fn = symbols.at(name);
        // The build flags took: -fcf-protection is endbr64 first.
        EXPECT_EQ(starts_with_endbr64(*elf, fn.addr), cet);
        auto spec = parse_probe_spec(text);
        ASSERT_TRUE(spec.has_value()) << spec.error().message;
        TraceOptions opts;
        opts.move_sites = move;
        auto plan = plan_trace(cache, std::span(&*spec, 1), opts);
        ASSERT_TRUE(plan.has_value()) << plan.error().message;
        ASSERT_EQ(plan->sites.size(), 1u);
        const PlannedSite& site = plan->sites[0];
        const SitePlacement& p = site.placement;
        EXPECT_EQ(site.attach.path, path);
        EXPECT_EQ(site.label, name);
        EXPECT_GE(p.address, fn.addr);
        EXPECT_LT(p.address, fn.addr + fn.size);
        EXPECT_EQ(p.offset - fn.offset, p.address - fn.addr);
        EXPECT_NE(p.cost.cost, SiteCost::Unprobeable) << p.cost.why;
        if (!move) {
          EXPECT_EQ(p.address, fn.addr);
          EXPECT_EQ(p.sp_delta, 0);
          continue;
        }
        auto first = classify_site(elf->code_bytes(fn.addr, 16), fn.addr);
        ASSERT_TRUE(first.has_value());
        if (p.address != fn.addr) {
          // Moved only to something cheaper, with a reason, rsp at most a few pushes down.
          EXPECT_EQ(first->cost, SiteCost::SingleStepped) << first->insn;
          EXPECT_EQ(p.cost.cost, SiteCost::Emulated) << p.cost.insn;
          EXPECT_FALSE(p.note.empty());
          EXPECT_LE(p.sp_delta, 0);
          EXPECT_GE(p.sp_delta, -64);
          EXPECT_EQ(p.sp_delta % 8, 0);
        } else {
          EXPECT_EQ(p.sp_delta, 0);
        }
        // endbr64 then push rbp, the prologue the mover exists for: the probe sits on the push.
        if (cet) {
          auto second = classify_site(elf->code_bytes(fn.addr + 4, 16), fn.addr + 4);
          ASSERT_TRUE(second.has_value());
          if (second->insn == "push rbp") {
            EXPECT_EQ(p.address, fn.addr + 4) << p.note;
            EXPECT_EQ(p.sp_delta, 0);
          }
        }
      }
    }
  }
}

// A started variant in hold mode: it has run its loop and printed each function's runtime
// address; it waits for a signal.
class HeldVariant {
 public:
  explicit HeldVariant(const std::string& path) {
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0) return;
    pid_ = fork();
    if (pid_ == 0) {
      dup2(fds[1], 1);
      execl(path.c_str(), path.c_str(), "1", "hold", static_cast<char*>(nullptr));
      _exit(127);
    }
    close(fds[1]);
    // Reading the addresses also waits until the program is exec'd, mapped and past its loop.
    FILE* in = fdopen(fds[0], "r");
    char name[64];
    unsigned long long addr = 0;
    while (in && std::fscanf(in, "%63s %llx", name, &addr) == 2) {
      addresses_[name] = addr;
      if (std::string(name) == "main") break;
    }
    if (in) std::fclose(in);
  }
  ~HeldVariant() {
    if (pid_ <= 0) return;
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
  }
  pid_t pid() const { return pid_; }
  const std::map<std::string, uint64_t>& addresses() const { return addresses_; }

 private:
  pid_t pid_ = -1;
  std::map<std::string, uint64_t> addresses_;
};

TEST(fixture_matrix, every_function_symbolizes_at_start_middle_and_last_byte) {
  for (const auto& v : matrix_variants()) {
    SCOPED_TRACE(v);
    auto symbols = function_symbols(variant_path(v));
    ASSERT_EQ(symbols.size(), kProbes.size() + 1);
    HeldVariant proc(variant_path(v));
    ASSERT_GT(proc.pid(), 0);
    ASSERT_EQ(proc.addresses().size(), symbols.size());
    Symbolizer symbolizer;
    for (const auto& [name, sym] : symbols) {
      SCOPED_TRACE(name);
      uint64_t start = proc.addresses().at(name);
      if (v.ends_with("-nopie")) {
        EXPECT_EQ(start, sym.addr);  // loaded where linked
      }
      for (uint64_t off : {uint64_t{0}, sym.size / 2, sym.size - 1}) {
        Frame f = symbolizer.symbolize(proc.pid(), start + off);
        EXPECT_EQ(f.function, name) << f.describe();
        EXPECT_EQ(f.function_offset, off) << f.describe();
        EXPECT_EQ(f.object, variant_path(v));
      }
    }
  }
}

}  // namespace
}  // namespace uscope
