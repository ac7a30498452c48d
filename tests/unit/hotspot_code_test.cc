// Java frames named from a hand-built JVM image (hotspot_fake_image.h): methods, code blobs, the
// inlined chain at a pc, the cache, and the Symbolizer's frames and profile labels.
#include "symbolize/hotspot_code.h"

#include <errno.h>
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

constexpr uint32_t kGen = HS_GEN(77);  // the fake nmethod's compile id

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
  auto f =
      cache.code_frame(1, l, jvm.memory(), jvm.at(jvm.nmethod), kGen, code + jvm.pc_inner, true);
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
  auto between = cache.code_frame(1, l, jvm.memory(), jvm.at(jvm.nmethod), kGen, code + 0x18, true);
  ASSERT_TRUE(between) << between.error().message;
  ASSERT_EQ(between->methods.size(), 1u);
  EXPECT_EQ(between->methods[0].name, "com.example.HotLoop.hotMethod");
  // The thread's own pc there takes the next PcDesc (hotMethod at bci 5, line 11).
  auto pc = cache.code_frame(1, l, jvm.memory(), jvm.at(jvm.nmethod), kGen, code + 0x18, false);
  ASSERT_TRUE(pc) << pc.error().message;
  ASSERT_EQ(pc->methods.size(), 1u);
  EXPECT_EQ(pc->methods[0].bci, 5);
  EXPECT_EQ(pc->methods[0].line, 11);
  // An unknown offset names the method.
  auto unknown =
      cache.code_frame(1, l, jvm.memory(), jvm.at(jvm.nmethod), kGen, HS_OFFSET_UNKNOWN, true);
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
  auto f = cache.code_frame(1, *l, mem, jvm.at(jvm.nmethod), kGen, code + jvm.pc_inner, true);
  ASSERT_TRUE(f) << f.error().message;
  EXPECT_EQ(f->kind, HotspotCodeKind::C2);
  EXPECT_EQ(f->comp_level, 4);
  ASSERT_EQ(f->methods.size(), 2u);
  EXPECT_EQ(f->methods[0].name, "com.example.HotLoop.inner");
  EXPECT_EQ(f->methods[0].line, 21);
  EXPECT_EQ(f->methods[1].name, "com.example.HotLoop.hotMethod");
  EXPECT_EQ(f->methods[1].line, 13);
  const HotspotBlob* b = cache.find_blob(1, jvm.at(jvm.nmethod), kGen);
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
  auto stub = cache.code_frame(1, l, jvm.memory(), jvm.at(jvm.stub), 0, 0x120, true);
  ASSERT_TRUE(stub) << stub.error().message;
  EXPECT_EQ(stub->kind, HotspotCodeKind::Stub);
  EXPECT_EQ(stub->blob_name, "StubRoutines (1)");
  EXPECT_TRUE(stub->methods.empty());
  auto native = cache.code_frame(1, l, jvm.memory(), jvm.at(jvm.native_nmethod), 0, 0x120, true);
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
  ASSERT_TRUE(cache.code_frame(1, l, jvm.memory(), jvm.at(jvm.nmethod), kGen, ret, true));
  const size_t reads = jvm.reads;
  EXPECT_EQ(cache.blobs(), 1u);
  EXPECT_EQ(cache.methods(), 2u);
  ASSERT_TRUE(cache.code_frame(1, l, jvm.memory(), jvm.at(jvm.nmethod), kGen, ret, true));
  EXPECT_EQ(jvm.reads, reads);
  // Another process at the same address is read for itself.
  ASSERT_TRUE(cache.code_frame(2, l, jvm.memory(), jvm.at(jvm.nmethod), kGen, ret, true));
  EXPECT_GT(jvm.reads, reads);
  EXPECT_EQ(cache.blobs(), 2u);
  cache.forget_blob(2, jvm.at(jvm.nmethod));
  EXPECT_EQ(cache.find_blob(2, jvm.at(jvm.nmethod), kGen), nullptr);
  EXPECT_NE(cache.find_method(2, jvm.at(jvm.hot_method)), nullptr);
  cache.forget(2);
  EXPECT_EQ(cache.find_method(2, jvm.at(jvm.hot_method)), nullptr);
  EXPECT_NE(cache.find_blob(1, jvm.at(jvm.nmethod), kGen), nullptr);
}

// The JVM flushes an nmethod and puts another at its address (compile id 78, of inner): a frame
// of each is named by its own nmethod, and one whose nmethod was gone before it was read is not
// named at all, and counted.
TEST(hotspot_code, a_blob_reused_by_another_nmethod_names_each_frame_by_its_own) {
  FakeJvm jvm;
  HotspotCodeLayout l = layout();
  HotspotCodeCache cache;
  const uint32_t ret = test::fake_jvm::kCodeOffset + jvm.pc_inner;
  auto before = cache.code_frame(1, l, jvm.memory(), jvm.at(jvm.nmethod), kGen, ret, true);
  ASSERT_TRUE(before) << before.error().message;
  EXPECT_EQ(before->methods.back().name, "com.example.HotLoop.hotMethod");
  jvm.put_value<int32_t>(jvm.nmethod + test::fake_jvm::kNmCompileId, 78);
  jvm.put_value<uint64_t>(jvm.nmethod + test::fake_jvm::kNmMethod, jvm.at(jvm.inner_method));
  // The frame recorded before keeps its name, without a read.
  const size_t reads = jvm.reads;
  auto again = cache.code_frame(1, l, jvm.memory(), jvm.at(jvm.nmethod), kGen, ret, true);
  ASSERT_TRUE(again) << again.error().message;
  EXPECT_EQ(again->methods.back().name, "com.example.HotLoop.hotMethod");
  EXPECT_EQ(again->methods.front().name, "com.example.HotLoop.inner");
  EXPECT_EQ(jvm.reads, reads);
  // A frame of the new nmethod is named by it.
  auto now = cache.code_frame(1, l, jvm.memory(), jvm.at(jvm.nmethod), HS_GEN(78),
                              HS_OFFSET_UNKNOWN, true);
  ASSERT_TRUE(now) << now.error().message;
  ASSERT_EQ(now->methods.size(), 1u);
  EXPECT_EQ(now->methods[0].name, "com.example.HotLoop.inner");
  EXPECT_EQ(cache.code_gone(), 0u);
  // A frame of compile id 76, flushed before it was read: no name, counted once.
  for (int i = 0; i < 2; ++i) {
    auto gone = cache.code_frame(1, l, jvm.memory(), jvm.at(jvm.nmethod), HS_GEN(76),
                                 HS_OFFSET_UNKNOWN, true);
    ASSERT_FALSE(gone);
    EXPECT_EQ(gone.error().errnum, ESTALE) << gone.error().message;
    EXPECT_NE(gone.error().message.find("was flushed"), std::string::npos) << gone.error().message;
  }
  EXPECT_EQ(cache.code_gone(), 1u);
  // A generation is the low 16 bits of the compile id.
  EXPECT_EQ(HS_GEN(65536 + 78), HS_GEN(78));
}

// A class unloaded, and another Method in its Method's memory: an interpreted frame records the
// Method* alone, which named two methods, so neither is named (counted); an nmethod read before
// keeps the Method it was read with.
TEST(hotspot_code, a_method_whose_memory_holds_another_is_not_named_by_either) {
  FakeJvm jvm;
  HotspotCodeLayout l = layout();
  HotspotCodeCache cache;
  auto interp = cache.interpreted_frame(1, l, jvm.memory(), jvm.at(jvm.hot_method), 6);
  ASSERT_TRUE(interp) << interp.error().message;
  EXPECT_EQ(interp->methods[0].name, "com.example.HotLoop.hotMethod");
  ASSERT_TRUE(
      cache.code_frame(1, l, jvm.memory(), jvm.at(jvm.nmethod), kGen, HS_OFFSET_UNKNOWN, true));
  // The same Method, read back: kept.
  ASSERT_TRUE(cache.interpreted_frame(1, l, jvm.memory(), jvm.at(jvm.hot_method), 6));
  EXPECT_EQ(cache.methods_reused(), 0u);
  // Its ConstMethod now names nativeCall()V (pool slots 6 and 4).
  const uint64_t cm = 0x3100;
  jvm.put_value<uint16_t>(cm + test::fake_jvm::kCmName, 6);
  jvm.put_value<uint16_t>(cm + test::fake_jvm::kCmSignature, 4);
  for (int i = 0; i < 2; ++i) {
    auto after = cache.interpreted_frame(1, l, jvm.memory(), jvm.at(jvm.hot_method), 0);
    ASSERT_FALSE(after);
    EXPECT_EQ(after.error().errnum, ESTALE) << after.error().message;
  }
  EXPECT_EQ(cache.methods_reused(), 1u);
  ASSERT_NE(cache.find_method(1, jvm.at(jvm.hot_method)), nullptr);
  EXPECT_EQ(cache.find_method(1, jvm.at(jvm.hot_method))->name, "nativeCall");
  auto code =
      cache.code_frame(1, l, jvm.memory(), jvm.at(jvm.nmethod), kGen, HS_OFFSET_UNKNOWN, true);
  ASSERT_TRUE(code) << code.error().message;
  EXPECT_EQ(code->methods.back().name, "com.example.HotLoop.hotMethod");
}

// The Symbolizer reads this process, where the fake JVM's image lives (its code cache too).
Symbolizer java_symbolizer(const FakeJvm& jvm) {
  SymbolizerOptions o;
  o.hotspot = [base = jvm.base](const Process&) -> std::optional<HotspotRuntime> {
    HotspotRuntime rt;
    rt.vm = fake_vmstructs();
    rt.proc.code_start = base;
    return rt;
  };
  return Symbolizer(o);
}

// A code frame of the fake image's code cache.
uint64_t code_value(const FakeJvm& jvm, uint64_t tag, uint64_t blob, uint32_t gen,
                    uint64_t offset) {
  return HS_FRAME_CODE(tag, jvm.base, jvm.at(blob), gen, offset);
}

TEST(hotspot_code, symbolizer_names_java_frames_with_tier_inlined_calls_and_lines) {
  FakeJvm jvm;
  Symbolizer s = java_symbolizer(jvm);
  const uint32_t code = test::fake_jvm::kCodeOffset;
  const uint64_t values[] = {
      code_value(jvm, UNWIND_FRAME_TAG_HS_PC, jvm.stub, 0, code + 4),
      code_value(jvm, UNWIND_FRAME_TAG_HS_RETURN, jvm.nmethod, kGen, code + jvm.pc_inner),
      HS_FRAME_INTERP(jvm.at(jvm.hot_method), 12),
      code_value(jvm, UNWIND_FRAME_TAG_HS_RETURN, jvm.native_nmethod, 0, code + 8),
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

  EXPECT_TRUE(s.losses().empty());
  // A frame whose nmethod was flushed (compile id 76) before it was read: unnamed, a loss.
  Frame gone = s.symbolize(
      getpid(), code_value(jvm, UNWIND_FRAME_TAG_HS_RETURN, jvm.nmethod, HS_GEN(76), code + 8));
  EXPECT_EQ(gone.miss, FrameMiss::CodeGone);
  EXPECT_EQ(gone.object, "[java]");
  EXPECT_EQ(s.losses(), (std::vector<std::pair<std::string, uint64_t>>{{"java_code_gone", 1}}));
}

TEST(hotspot_code, symbolizer_without_a_jvm_says_the_frame_is_unreadable) {
  SymbolizerOptions o;
  o.hotspot = [](const Process&) -> std::optional<HotspotRuntime> { return std::nullopt; };
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
  Symbolizer s = java_symbolizer(jvm);
  const uint32_t code = test::fake_jvm::kCodeOffset;
  StackSample sample;
  sample.pid = getpid();
  sample.count = 1;
  sample.user_status = StackStatus::Ok;
  sample.user = {code_value(jvm, UNWIND_FRAME_TAG_HS_PC, jvm.nmethod, kGen, code + jvm.pc_inner),
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
