// The BPF pipeline end to end: skeleton load, uprobe attach (single links and uprobe_multi),
// in-kernel counting, and detach leaving no link behind.
#include <gtest/gtest.h>

#include "collect/hit_counts.h"
#include "discover/elf_file.h"
#include "discover/symbol_table.h"
#include "e2e_support.h"

namespace uscope::e2e {
namespace {

uint64_t offset_of_work(const std::string& path) {
  auto elf = ElfFile::open(path);
  EXPECT_TRUE(elf) << elf.error().message;
  auto syms = SymbolTable::load(*elf);
  EXPECT_TRUE(syms);
  auto found = syms->find("work");
  EXPECT_EQ(found.size(), 1u);
  return found.empty() ? 0 : found[0]->offset;
}

void count_work_calls(bool multi) {
  USCOPE_REQUIRE_ROOT();
  const std::string path = fixture("native/target_loop");
  const uint64_t off = offset_of_work(path);
  constexpr int kCalls = 5000;
  GatedProcess target({path, std::to_string(kCalls)});
  {
    auto hc = HitCounts::attach({{path, off, 0, 0, false}}, {target.pid()}, multi);
    ASSERT_TRUE(hc) << hc.error().message;
    EXPECT_EQ(hc->used_multi(), multi);
    EXPECT_FALSE(bpf_links_of_programs("count_hit").empty());
    target.start();
    ASSERT_EQ(target.wait(), 0);
    auto counts = hc->read();
    ASSERT_TRUE(counts) << counts.error().message;
    EXPECT_EQ((*counts)[0], static_cast<uint64_t>(kCalls));
  }
  EXPECT_TRUE(links_released("count_hit")) << "links left after detach";
}

TEST(bpf_pipeline, counts_every_call_with_single_links) {
  count_work_calls(false);
}

TEST(bpf_pipeline, counts_every_call_with_uprobe_multi) {
  count_work_calls(true);
}

TEST(bpf_pipeline, ignores_other_processes) {
  USCOPE_REQUIRE_ROOT();
  const std::string path = fixture("native/target_loop");
  GatedProcess watched({path, "10"});
  GatedProcess other({path, "777"});
  auto hc = HitCounts::attach({{path, offset_of_work(path), 0, 0, false}}, {watched.pid()}, true);
  ASSERT_TRUE(hc) << hc.error().message;
  other.start();
  ASSERT_EQ(other.wait(), 0);
  watched.start();
  ASSERT_EQ(watched.wait(), 0);
  EXPECT_EQ((*hc->read())[0], 10u);
}

TEST(check_command, proves_a_real_attach) {
  USCOPE_REQUIRE_ROOT();
  auto r = uscope({"check"});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("attach (single)    ok"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("attach (multi )    ok"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("sleepable       yes"), std::string::npos) << r.out;
  EXPECT_TRUE(links_released("count_hit"));
}

}  // namespace
}  // namespace uscope::e2e
