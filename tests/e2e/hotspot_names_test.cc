// Java frames named from a live JVM's own structures, checked against the JVM's own account of
// them: `jcmd PID Compiler.codelist` lists every nmethod (compile id, comp level, method and
// signature, its address), and javap's LineNumberTable of the fixture's class gives the line of
// each bytecode index. HotLoop (tests/fixtures/java) runs with no JVM flag.
#include <gtest/gtest.h>
#include <signal.h>

#include <map>
#include <regex>
#include <set>
#include <sstream>

#include "e2e_support.h"
#include "jvm_support.h"

#include "bpf/hotspot.h"
#include "discover/hotspot_runtime.h"
#include "discover/process.h"
#include "symbolize/hotspot_code.h"
#include "symbolize/symbolizer.h"

namespace uscope::e2e {
namespace {

TEST(hotspot_names, every_nmethod_of_the_codelist_is_named_with_its_method_and_tier) {
  USCOPE_REQUIRE_ROOT();
  RunningCommand java({"/usr/bin/java", "-cp", fixture("java"), "HotLoop"}, 300);
  const pid_t pid = java.pid();
  // "ready" comes after 20,000 calls of hotMethod: C2 has compiled it by then.
  ASSERT_TRUE(java.wait_for_output("ready " + std::to_string(pid)));
  auto process = Process::open(pid);
  ASSERT_TRUE(process) << process.error().message;
  auto rt = find_hotspot_runtime(*process);
  ASSERT_TRUE(rt) << rt.error().message;
  ASSERT_TRUE(rt->has_value()) << "no JVM found in " << pid;
  const TargetMemory mem = process_target_memory(pid);
  auto layout = hotspot_code_layout((*rt)->vm, &mem);
  ASSERT_TRUE(layout) << layout.error().message;
  const auto lines = javap_lines("HotLoop");
  ASSERT_TRUE(lines.contains("HotLoop.hotMethod")) << "javap gave no line table";

  // The JVM compiles and flushes code as it runs: an nmethod listed both before and after it is
  // read lived throughout (compile ids are never reused), and every one of those is checked.
  const auto before = codelist(pid);
  HotspotCodeCache cache;
  std::map<std::pair<int, uint64_t>, Result<HotspotFrameName>> named;
  for (const CodelistEntry& e : before)
    named.emplace(
        std::pair{e.compile_id, e.blob},
        cache.code_frame(pid, *layout, mem, e.blob, HS_GEN(e.compile_id), HS_OFFSET_UNKNOWN, true));
  std::set<std::pair<int, uint64_t>> alive;
  for (const CodelistEntry& e : codelist(pid)) alive.insert({e.compile_id, e.blob});

  size_t checked = 0, scopes = 0, inlined = 0, hotloop_lines = 0;
  bool hot_c2 = false;
  for (const CodelistEntry& e : before) {
    if (!alive.contains({e.compile_id, e.blob})) continue;
    ++checked;
    const auto& n = named.at({e.compile_id, e.blob});
    ASSERT_TRUE(n) << e.method << ": " << n.error().message;
    ASSERT_EQ(n->methods.size(), 1u) << e.method;  // no pc given: the nmethod's own method
    EXPECT_EQ(n->methods[0].name, e.method) << e.compile_id;
    EXPECT_EQ(n->methods[0].signature, e.signature) << e.method;
    EXPECT_EQ(n->comp_level, e.level) << e.method;
    const HotspotCodeKind kind = e.level == 0   ? HotspotCodeKind::Native
                                 : e.level == 4 ? HotspotCodeKind::C2
                                                : HotspotCodeKind::C1;
    EXPECT_EQ(n->kind, kind) << e.method << " at level " << e.level;
    hot_c2 |= e.method == "HotLoop.hotMethod" && kind == HotspotCodeKind::C2;

    // Every PcDesc's inlined chain ends in the nmethod's own Method* (nmethod::_method), and the
    // line of each HotLoop method in it is the class file's line of its bci.
    const HotspotBlob* blob = cache.find_blob(pid, e.blob, HS_GEN(e.compile_id));
    ASSERT_NE(blob, nullptr);
    for (const HotspotPcDesc& pc : blob->pcs) {
      if (pc.pc_offset < 0 || pc.scope_decode_offset == 0) continue;
      const uint32_t offset = static_cast<uint32_t>(blob->code_begin - e.blob + pc.pc_offset);
      if (offset >= HS_OFFSET_UNKNOWN) continue;
      auto f = cache.code_frame(pid, *layout, mem, e.blob, HS_GEN(e.compile_id), offset, true);
      ASSERT_TRUE(f) << e.method << " at pc offset " << pc.pc_offset << ": " << f.error().message;
      ++scopes;
      inlined += f->methods.size() > 1;
      ASSERT_FALSE(f->methods.empty());
      EXPECT_EQ(f->methods.back().method, blob->method) << e.method;
      EXPECT_EQ(f->methods.back().name, e.method);
      for (const HotspotNamedMethod& m : f->methods) {
        auto table = lines.find(m.name);
        if (table == lines.end()) continue;
        ++hotloop_lines;
        EXPECT_EQ(m.line, line_at(table->second, m.bci)) << m.name << " bci " << m.bci;
        EXPECT_EQ(m.file, "HotLoop.java");
      }
    }
  }
  EXPECT_TRUE(hot_c2) << "no C2 nmethod of HotLoop.hotMethod was listed";
  EXPECT_GT(checked, 0u);
  EXPECT_GT(scopes, 0u);
  EXPECT_GT(inlined, 0u) << "no nmethod had a method inlined";
  EXPECT_GT(hotloop_lines, 0u);
  RecordProperty("nmethods_checked", static_cast<int>(checked));

  // The Symbolizer finds the JVM itself and names a return address in hotMethod's C2 code.
  Symbolizer symbolizer;
  for (const CodelistEntry& e : before) {
    if (e.method != "HotLoop.hotMethod" || e.level != 4 || !alive.contains({e.compile_id, e.blob}))
      continue;
    const HotspotBlob* blob = cache.find_blob(pid, e.blob, HS_GEN(e.compile_id));
    for (const HotspotPcDesc& pc : blob->pcs) {
      if (pc.pc_offset < 0) continue;
      const uint64_t value =
          HS_FRAME_CODE(UNWIND_FRAME_TAG_HS_RETURN, (*rt)->proc.code_start, e.blob,
                        HS_GEN(e.compile_id), blob->code_begin - e.blob + pc.pc_offset);
      Frame f = symbolizer.symbolize(pid, value);
      EXPECT_EQ(f.miss, FrameMiss::None) << f.describe();
      EXPECT_EQ(f.function, "HotLoop.hotMethod");
      EXPECT_EQ(f.origin, SymbolOrigin::Java);
      EXPECT_EQ(f.java_kind, HotspotCodeKind::C2);
      EXPECT_EQ(f.comp_level, 4);
      EXPECT_EQ(f.file, "HotLoop.java");
    }
    // An interpreted frame of the same Method* (nmethod::_method) at each bci the class file's
    // table starts a line at: named with that line.
    for (auto [bci, line] : lines.at("HotLoop.hotMethod")) {
      Frame f = symbolizer.symbolize(pid, HS_FRAME_INTERP(blob->method, bci));
      EXPECT_EQ(f.miss, FrameMiss::None) << f.describe();
      EXPECT_EQ(f.function, "HotLoop.hotMethod");
      EXPECT_EQ(f.java_kind, HotspotCodeKind::Interpreted);
      EXPECT_EQ(f.line, line) << "bci " << bci;
    }
  }
  java.signal(SIGKILL);
  java.finish();
}

}  // namespace
}  // namespace uscope::e2e
