// Java frames named from a hand-built JVM image (hotspot_fake_image.h): methods, code blobs, the
// inlined chain at a pc, the cache, and the Symbolizer's frames and profile labels.
#include "symbolize/hotspot_code.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include "bpf/hotspot.h"
#include "hotspot_fake_image.h"
#include "sink/profile_stacks.h"
#include "symbolize/profile_builder.h"
#include "symbolize/symbol_text.h"
#include "symbolize/symbolizer.h"

namespace uscope {
namespace {

using test::fake_vmstructs;
using test::FakeJvm;

HotspotCodeLayout layout() {
  auto l = hotspot_code_layout(fake_vmstructs());
  EXPECT_TRUE(l) << l.error().message;
  return l ? *l : HotspotCodeLayout{};
}

TEST(hotspot_code, layout_comes_from_vmstructs_and_a_missing_field_is_named) {
  HotspotCodeLayout l = layout();
  EXPECT_EQ(l.nm_method, test::fake_jvm::kNmMethod);  // CompiledMethod's, as JDK 17 lists it
  EXPECT_EQ(l.nm_comp_level, test::fake_jvm::kNmCompLevel);
  EXPECT_FALSE(l.immutable_data);
  EXPECT_FALSE(l.mutable_data);
  EXPECT_EQ(l.comp_level_size, 4u);
  EXPECT_FALSE(l.source_file_index_in_klass);
  EXPECT_EQ(l.has_line_table_flag, 1u);
  EXPECT_EQ(l.unsigned5_excluded, 0);
  auto missing = hotspot_code_layout(fake_vmstructs(false));
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.error().message.find("PcDesc::_scope_decode_offset"), std::string::npos)
      << missing.error().message;
}

TEST(hotspot_code, method_names_class_signature_file_and_lines) {
  FakeJvm jvm;
  auto m = read_hotspot_method(layout(), jvm.memory(), jvm.at(jvm.hot_method));
  ASSERT_TRUE(m) << m.error().message;
  EXPECT_EQ(m->klass, "com.example.HotLoop");
  EXPECT_EQ(m->name, "hotMethod");
  EXPECT_EQ(m->qualified(), "com.example.HotLoop.hotMethod");
  EXPECT_EQ(m->signature, "(I)J");
  EXPECT_EQ(m->source_file, "HotLoop.java");
  EXPECT_EQ(m->code_size, 20);
  EXPECT_EQ(m->line_table.size(), 6u);  // up to and with its terminator
  EXPECT_EQ(m->line_of(0), 10);
  EXPECT_EQ(m->line_of(7), 11);
  EXPECT_EQ(m->line_of(12), 13);
  EXPECT_EQ(m->line_of(-1), 10);  // the method's entry
  // A pool slot's low bit (a tag) is ignored: inner's name slot has it set.
  auto inner = read_hotspot_method(layout(), jvm.memory(), jvm.at(jvm.inner_method));
  ASSERT_TRUE(inner) << inner.error().message;
  EXPECT_EQ(inner->name, "inner");
  EXPECT_EQ(inner->line_of(4), 21);
  auto native = read_hotspot_method(layout(), jvm.memory(), jvm.at(jvm.native_method));
  ASSERT_TRUE(native) << native.error().message;
  EXPECT_TRUE(native->line_table.empty());
  EXPECT_EQ(native->line_of(0), -1);
}

TEST(hotspot_code, unreadable_method_fails_naming_what) {
  FakeJvm jvm;
  auto m = read_hotspot_method(layout(), jvm.memory(), 0x10);
  ASSERT_FALSE(m);
  EXPECT_NE(m.error().message.find("the Method at 0x10"), std::string::npos) << m.error().message;
  // A ConstMethod pointer into nowhere.
  jvm.put_value<uint64_t>(jvm.hot_method + test::fake_jvm::kMethodConst, 0x1234);
  auto cm = read_hotspot_method(layout(), jvm.memory(), jvm.at(jvm.hot_method));
  ASSERT_FALSE(cm);
  EXPECT_NE(cm.error().message.find("ConstMethod at 0x1234"), std::string::npos)
      << cm.error().message;
}

TEST(hotspot_code, blobs_by_name_and_kind) {
  FakeJvm jvm;
  HotspotCodeLayout l = layout();
  auto nm = read_hotspot_blob(l, jvm.memory(), jvm.at(jvm.nmethod));
  ASSERT_TRUE(nm) << nm.error().message;
  EXPECT_EQ(nm->name, "nmethod");
  EXPECT_EQ(nm->kind, HotspotBlobKind::Nmethod);
  EXPECT_EQ(nm->comp_level, 4);
  EXPECT_EQ(nm->compile_id, 77);
  EXPECT_EQ(nm->method, jvm.at(jvm.hot_method));
  EXPECT_EQ(nm->code_begin, jvm.at(jvm.nmethod + test::fake_jvm::kCodeOffset));
  EXPECT_EQ(nm->metadata.size(), 2u);
  EXPECT_EQ(nm->pcs.size(), 4u);
  auto native = read_hotspot_blob(l, jvm.memory(), jvm.at(jvm.native_nmethod));
  ASSERT_TRUE(native) << native.error().message;
  EXPECT_EQ(native->kind, HotspotBlobKind::Native);
  EXPECT_EQ(native->method, jvm.at(jvm.native_method));
  auto stub = read_hotspot_blob(l, jvm.memory(), jvm.at(jvm.stub));
  ASSERT_TRUE(stub) << stub.error().message;
  EXPECT_EQ(stub->kind, HotspotBlobKind::Stub);
  EXPECT_EQ(stub->name, "StubRoutines (1)");
  // Sections out of order are refused, not read.
  jvm.put_value<int32_t>(jvm.nmethod + test::fake_jvm::kNmScopesPcs, 0x100);
  auto bad = read_hotspot_blob(l, jvm.memory(), jvm.at(jvm.nmethod));
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("make no sense"), std::string::npos) << bad.error().message;
}

TEST(hotspot_code, code_frame_expands_the_inlined_chain_at_a_return_address) {
  FakeJvm jvm;
  HotspotCodeLayout l = layout();
  HotspotCodeCache cache;
  const uint32_t code = test::fake_jvm::kCodeOffset;
  auto f = cache.code_frame(1, l, jvm.memory(), jvm.at(jvm.nmethod), code + jvm.pc_inner, true);
  ASSERT_TRUE(f) << f.error().message;
  EXPECT_EQ(f->kind, HotspotCodeKind::C2);
  EXPECT_EQ(f->comp_level, 4);
  ASSERT_EQ(f->methods.size(), 2u);
  EXPECT_EQ(f->methods[0].name, "com.example.HotLoop.inner");
  EXPECT_EQ(f->methods[0].bci, 4);
  EXPECT_EQ(f->methods[0].line, 21);
  EXPECT_EQ(f->methods[1].name, "com.example.HotLoop.hotMethod");
  EXPECT_EQ(f->methods[1].bci, 12);  // where it calls inner
  EXPECT_EQ(f->methods[1].line, 13);
  EXPECT_EQ(f->methods[1].file, "HotLoop.java");

  // A return address between PcDescs has none: the nmethod's method alone, line unknown.
  auto between = cache.code_frame(1, l, jvm.memory(), jvm.at(jvm.nmethod), code + 0x18, true);
  ASSERT_TRUE(between) << between.error().message;
  ASSERT_EQ(between->methods.size(), 1u);
  EXPECT_EQ(between->methods[0].name, "com.example.HotLoop.hotMethod");
  // The thread's own pc there takes the next PcDesc (hotMethod at bci 5, line 11).
  auto pc = cache.code_frame(1, l, jvm.memory(), jvm.at(jvm.nmethod), code + 0x18, false);
  ASSERT_TRUE(pc) << pc.error().message;
  ASSERT_EQ(pc->methods.size(), 1u);
  EXPECT_EQ(pc->methods[0].bci, 5);
  EXPECT_EQ(pc->methods[0].line, 11);
  // An unknown offset names the method.
  auto unknown = cache.code_frame(1, l, jvm.memory(), jvm.at(jvm.nmethod), HS_OFFSET_UNKNOWN, true);
  ASSERT_TRUE(unknown) << unknown.error().message;
  EXPECT_EQ(unknown->methods.size(), 1u);
}

TEST(hotspot_code, jdk25_layout_names_the_same_frames) {
  FakeJvm jvm(test::FakeJdk::Jdk25);
  const TargetMemory mem = jvm.memory();
  auto l = hotspot_code_layout(test::fake_vmstructs_25(jvm.base), &mem);
  ASSERT_TRUE(l) << l.error().message;
  EXPECT_TRUE(l->immutable_data);
  EXPECT_TRUE(l->mutable_data);
  EXPECT_TRUE(l->code_begin_is_offset);
  EXPECT_EQ(l->comp_level_size, 1u);
  EXPECT_EQ(l->unsigned5_excluded, 1);  // from the version the image holds
  HotspotCodeCache cache;
  const uint32_t code = test::fake_jvm::kCodeOffset;
  auto f = cache.code_frame(1, *l, mem, jvm.at(jvm.nmethod), code + jvm.pc_inner, true);
  ASSERT_TRUE(f) << f.error().message;
  EXPECT_EQ(f->kind, HotspotCodeKind::C2);
  EXPECT_EQ(f->comp_level, 4);
  ASSERT_EQ(f->methods.size(), 2u);
  EXPECT_EQ(f->methods[0].name, "com.example.HotLoop.inner");
  EXPECT_EQ(f->methods[0].line, 21);
  EXPECT_EQ(f->methods[1].name, "com.example.HotLoop.hotMethod");
  EXPECT_EQ(f->methods[1].line, 13);
  const HotspotBlob* b = cache.find_blob(1, jvm.at(jvm.nmethod));
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(b->metadata.size(), 3u);  // a bound: JVMCI's word follows the metadata
  EXPECT_EQ(b->pcs.size(), 4u);
  // The same JDK 25 tables without the version: ConstMethodFlags tells UNSIGNED5's flavour.
  auto no_version = hotspot_code_layout(test::fake_vmstructs(true, test::FakeJdk::Jdk25));
  ASSERT_TRUE(no_version) << no_version.error().message;
  EXPECT_EQ(no_version->unsigned5_excluded, 1);
}

TEST(hotspot_code, stubs_native_wrappers_and_interpreted_frames) {
  FakeJvm jvm;
  HotspotCodeLayout l = layout();
  HotspotCodeCache cache;
  auto stub = cache.code_frame(1, l, jvm.memory(), jvm.at(jvm.stub), 0x120, true);
  ASSERT_TRUE(stub) << stub.error().message;
  EXPECT_EQ(stub->kind, HotspotCodeKind::Stub);
  EXPECT_EQ(stub->blob_name, "StubRoutines (1)");
  EXPECT_TRUE(stub->methods.empty());
  auto native = cache.code_frame(1, l, jvm.memory(), jvm.at(jvm.native_nmethod), 0x120, true);
  ASSERT_TRUE(native) << native.error().message;
  EXPECT_EQ(native->kind, HotspotCodeKind::Native);
  ASSERT_EQ(native->methods.size(), 1u);
  EXPECT_EQ(native->methods[0].name, "com.example.HotLoop.nativeCall");
  auto interp = cache.interpreted_frame(1, l, jvm.memory(), jvm.at(jvm.hot_method), 6);
  ASSERT_TRUE(interp) << interp.error().message;
  EXPECT_EQ(interp->kind, HotspotCodeKind::Interpreted);
  ASSERT_EQ(interp->methods.size(), 1u);
  EXPECT_EQ(interp->methods[0].line, 11);
  auto no_bci = cache.interpreted_frame(1, l, jvm.memory(), jvm.at(jvm.hot_method), HS_BCI_UNKNOWN);
  ASSERT_TRUE(no_bci);
  EXPECT_EQ(no_bci->methods[0].bci, -1);
}

TEST(hotspot_code, cache_reads_once_per_process_and_address_and_forgets) {
  FakeJvm jvm;
  HotspotCodeLayout l = layout();
  HotspotCodeCache cache;
  const uint32_t ret = test::fake_jvm::kCodeOffset + jvm.pc_inner;
  ASSERT_TRUE(cache.code_frame(1, l, jvm.memory(), jvm.at(jvm.nmethod), ret, true));
  const size_t reads = jvm.reads;
  EXPECT_EQ(cache.blobs(), 1u);
  EXPECT_EQ(cache.methods(), 2u);
  ASSERT_TRUE(cache.code_frame(1, l, jvm.memory(), jvm.at(jvm.nmethod), ret, true));
  EXPECT_EQ(jvm.reads, reads);
  // Another process at the same address is read for itself.
  ASSERT_TRUE(cache.code_frame(2, l, jvm.memory(), jvm.at(jvm.nmethod), ret, true));
  EXPECT_GT(jvm.reads, reads);
  EXPECT_EQ(cache.blobs(), 2u);
  cache.forget_blob(2, jvm.at(jvm.nmethod));
  EXPECT_EQ(cache.find_blob(2, jvm.at(jvm.nmethod)), nullptr);
  EXPECT_NE(cache.find_method(2, jvm.at(jvm.hot_method)), nullptr);
  cache.forget(2);
  EXPECT_EQ(cache.find_method(2, jvm.at(jvm.hot_method)), nullptr);
  EXPECT_NE(cache.find_blob(1, jvm.at(jvm.nmethod)), nullptr);
}

// The Symbolizer reads this process, where the fake JVM's image lives.
Symbolizer java_symbolizer() {
  SymbolizerOptions o;
  o.hotspot = [](const Process&) -> std::optional<HotspotVmStructs> { return fake_vmstructs(); };
  return Symbolizer(o);
}

TEST(hotspot_code, symbolizer_names_java_frames_with_tier_inlined_calls_and_lines) {
  FakeJvm jvm;
  Symbolizer s = java_symbolizer();
  const uint32_t code = test::fake_jvm::kCodeOffset;
  const uint64_t values[] = {
      HS_FRAME_CODE(UNWIND_FRAME_TAG_HS_PC, jvm.at(jvm.stub), code + 4),
      HS_FRAME_CODE(UNWIND_FRAME_TAG_HS_RETURN, jvm.at(jvm.nmethod), code + jvm.pc_inner),
      HS_FRAME_INTERP(jvm.at(jvm.hot_method), 12),
      HS_FRAME_CODE(UNWIND_FRAME_TAG_HS_RETURN, jvm.at(jvm.native_nmethod), code + 8),
  };
  auto frames = s.symbolize(getpid(), values, true);
  ASSERT_EQ(frames.size(), 4u);
  for (const Frame& f : frames) {
    EXPECT_EQ(f.miss, FrameMiss::None) << f.describe();
    EXPECT_EQ(f.origin, SymbolOrigin::Java);
    EXPECT_EQ(f.object, "[java]");
  }
  EXPECT_EQ(frames[0].function, "[jvm stub: StubRoutines (1)]");
  EXPECT_EQ(frames[0].java_kind, HotspotCodeKind::Stub);

  EXPECT_EQ(frames[1].function, "com.example.HotLoop.hotMethod");
  EXPECT_EQ(frames[1].mangled, "com.example.HotLoop.hotMethod(I)J");
  EXPECT_EQ(frames[1].java_kind, HotspotCodeKind::C2);
  EXPECT_EQ(frames[1].comp_level, 4);
  EXPECT_EQ(frames[1].file, "HotLoop.java");
  EXPECT_EQ(frames[1].line, 13);
  ASSERT_EQ(frames[1].inlined.size(), 1u);
  EXPECT_EQ(frames[1].inlined[0].function, "com.example.HotLoop.inner");
  EXPECT_EQ(frames[1].inlined[0].line, 21);
  EXPECT_EQ(symbol_text(frames[1]),
            "com.example.HotLoop.inner (HotLoop.java:21) inlined in "
            "com.example.HotLoop.hotMethod (HotLoop.java:13) [java C2 level 4]");

  EXPECT_EQ(frames[2].function, "com.example.HotLoop.hotMethod");
  EXPECT_EQ(frames[2].java_kind, HotspotCodeKind::Interpreted);
  EXPECT_EQ(frames[2].line, 13);
  EXPECT_EQ(symbol_text(frames[2]),
            "com.example.HotLoop.hotMethod (HotLoop.java:13) [java interpreted]");

  EXPECT_EQ(frames[3].function, "com.example.HotLoop.nativeCall");
  EXPECT_EQ(frames[3].java_kind, HotspotCodeKind::Native);

  // Cached: named again after forget_java_code() only by reading the blob anew.
  s.forget_java_code(getpid(), jvm.at(jvm.nmethod));
  EXPECT_EQ(s.symbolize(getpid(), values, true)[1].function, "com.example.HotLoop.hotMethod");
}

TEST(hotspot_code, symbolizer_without_a_jvm_says_the_frame_is_unreadable) {
  SymbolizerOptions o;
  o.hotspot = [](const Process&) -> std::optional<HotspotVmStructs> { return std::nullopt; };
  Symbolizer s(o);
  const uint64_t v = HS_FRAME_INTERP(0x1000, 1);
  Frame f = s.symbolize(getpid(), v);
  EXPECT_EQ(f.miss, FrameMiss::InterpreterUnreadable);
  EXPECT_EQ(f.object, "[java]");
}

TEST(hotspot_code, profile_labels_tell_c1_c2_inlined_and_interpreted_apart) {
  FakeJvm jvm;
  // A C1 copy of the nmethod.
  jvm.put_value<int32_t>(jvm.nmethod + test::fake_jvm::kNmCompLevel, 3);
  Symbolizer s = java_symbolizer();
  const uint32_t code = test::fake_jvm::kCodeOffset;
  StackSample sample;
  sample.pid = getpid();
  sample.count = 1;
  sample.user_status = StackStatus::Ok;
  sample.user = {HS_FRAME_CODE(UNWIND_FRAME_TAG_HS_PC, jvm.at(jvm.nmethod), code + jvm.pc_inner),
                 HS_FRAME_INTERP(jvm.at(jvm.hot_method), 5)};
  Profile p = build_profile(std::span(&sample, 1), s, nullptr);
  ASSERT_EQ(p.samples.size(), 1u);
  std::vector<std::string> labels;
  for (const StackFrame& f : root_first_frames(p, p.samples[0])) labels.push_back(f.label);
  EXPECT_EQ(labels, (std::vector<std::string>{"com.example.HotLoop.hotMethod (HotLoop.java:11)",
                                              "com.example.HotLoop.hotMethod (HotLoop.java:13)_[1]",
                                              "com.example.HotLoop.inner (HotLoop.java:21)_[i]"}));
}

}  // namespace
}  // namespace uscope
