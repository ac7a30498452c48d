// The HotSpot runtime read from a synthetic JVM image: code heaps, the interpreter, the walker's
// offsets, blobs found through the segment map, threads, and the checks that refuse a JVM whose
// structures do not read as expected.
#include "discover/hotspot_runtime.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>

#include "hotspot_fake_jvm.h"

namespace uscope {
namespace {

constexpr uint64_t kHeapLow = 0x7f0010000000, kHeapHigh = kHeapLow + 0x100000;
constexpr uint64_t kHeap2Low = 0x7f0020000000, kHeap2High = kHeap2Low + 0x40000;
constexpr uint64_t kSegmap = 0x7f0030000000, kSegmap2 = 0x7f0031000000;
constexpr uint64_t kInterp = kHeapLow + 0x100;  // inside the first block (40 segments of 128)
constexpr uint64_t kData = 0x7f0040000000;      // the JVM's C heap: its objects
constexpr uint64_t kVtableJavaThread = 0x7f0050000010;
constexpr uint64_t kJavaHeap = 0x7f0060000000;

struct Image {
  test::FakeJvm jvm;
  std::string interpreter_name = "Interpreter";
  int shift = 7;
  bool code_offset = false;        // JDK 23+: CodeBlob::_code_offset, not _code_begin
  std::string java_name = "main";  // of the java.lang.Thread, Latin-1 (or UTF-16)
  bool java_name_utf16 = false;

  void build() {
    auto& j = jvm;
    j.static_field("CodeCache", "_heaps", kData);
    j.field("GrowableArrayBase", "_len", 0, "int");
    j.field("GrowableArray<int>", "_data", 8, "int*");
    j.field("CodeHeap", "_memory", 8, "VirtualSpace");
    j.field("CodeHeap", "_segmap", 120, "VirtualSpace");
    j.field("CodeHeap", "_log2_segment_size", 256, "int");
    j.field("VirtualSpace", "_low_boundary", 0);
    j.field("VirtualSpace", "_high_boundary", 8);
    j.field("VirtualSpace", "_low", 16);
    j.field("HeapBlock", "_header", 0);
    j.field("HeapBlock::Header", "_length", 0);
    j.field("HeapBlock::Header", "_used", 8);
    j.field("CodeBlob", "_name", 96);
    j.field("CodeBlob", "_frame_complete_offset", 20, code_offset ? "int16_t" : "int");
    j.field("CodeBlob", "_frame_size", 28);
    j.field("CodeBlob", code_offset ? "_code_offset" : "_code_begin", 32);
    j.field("nmethod", "_compile_id", 304, "int");
    j.field("Method", "_constMethod", 8);
    j.static_field("AbstractInterpreter", "_code", kData + 0x100);
    j.field("StubQueue", "_stub_buffer", 8);
    j.field("StubQueue", "_buffer_limit", 20);
    j.static_field("ThreadsSMRSupport", "_java_thread_list", kData + 0x200);
    j.field("ThreadsList", "_length", 4);
    j.field("ThreadsList", "_threads", 16);
    j.field("Thread", "_osthread", 560);
    j.field("OSThread", "_thread_id", 208);
    j.static_field("Abstract_VM_Version", "_s_vm_release", kData + 0x300);
    j.field("JavaThread", "_threadObj", 648, "OopHandle");
    j.field("OopHandle", "_obj", 0, "oop*");
    j.static_field("CompressedOops", "_narrow_oop._base", kData + 0x820);
    j.static_field("CompressedOops", "_narrow_oop._shift", kData + 0x828);
    j.type("HeapBlock", 16);
    j.type("ConstMethod", 48);
    j.type("Thread", 1024);
    j.type("JavaThread", 2048, "Thread");
    j.ints = {{"frame::interpreter_frame_sender_sp_offset", -1}};
    j.write();

    auto& m = j.mem;
    m.zeros(kData, 0x10000);
    // CodeCache::_heaps -> GrowableArray {len 2, data} -> two CodeHeaps.
    uint64_t array = kData + 0x1000, data = kData + 0x1100;
    uint64_t heaps[] = {kData + 0x2000, kData + 0x3000};
    m.word(kData, array);
    m.word(array, 2, 4);
    m.word(array + 8, data);
    m.word(data, heaps[0]);
    m.word(data + 8, heaps[1]);
    auto heap = [&](uint64_t h, uint64_t low, uint64_t high, uint64_t segmap) {
      m.word(h + 8, low);
      m.word(h + 16, high);
      m.word(h + 120 + 16, segmap);
      m.word(h + 256, shift, 4);
    };
    heap(heaps[0], kHeapLow, kHeapHigh, kSegmap);
    heap(heaps[1], kHeap2Low, kHeap2High, kSegmap2);
    // Heap 1: a block of 40 segments (the interpreter), then free segments.
    std::vector<uint8_t> map((kHeapHigh - kHeapLow) >> 7, HS_SEGMAP_FREE);
    for (int i = 0; i < 40; ++i) map[i] = static_cast<uint8_t>(i);
    m.put(kSegmap, map);
    m.put(kSegmap2, std::vector<uint8_t>((kHeap2High - kHeap2Low) >> 7, HS_SEGMAP_FREE));
    m.zeros(kHeapLow, 0x2000);
    m.word(kHeapLow, 40);        // HeapBlock::Header::_length
    m.word(kHeapLow + 8, 1, 1);  // _used
    uint64_t blob = kHeapLow + 16;
    m.word(blob + 96, kData + 0x400);
    m.word(blob + 32, code_offset ? kInterp - blob : kInterp, code_offset ? 4 : 8);
    text(kData + 0x400, interpreter_name);
    // AbstractInterpreter::_code -> StubQueue {_stub_buffer, _buffer_limit}.
    uint64_t queue = kData + 0x4000;
    m.word(kData + 0x100, queue);
    m.word(queue + 8, kInterp);
    m.word(queue + 20, 0x1000, 4);
    // ThreadsSMRSupport::_java_thread_list -> ThreadsList {1, threads} -> this thread.
    uint64_t list = kData + 0x5000, threads = kData + 0x5100, jt = kData + 0x6000,
             os = kData + 0x7000;
    m.word(kData + 0x200, list);
    m.word(list + 4, 1, 4);
    m.word(list + 16, threads);
    m.word(threads, jt);
    m.word(jt, kVtableJavaThread);
    m.word(jt + 560, os);
    m.word(os + 208, static_cast<uint64_t>(gettid()), 4);
    // The java.lang.Thread: JavaThread::_threadObj -> its OopHandle's slot -> the Thread, whose
    // name (a narrow oop: compressed oops, base kJavaHeap, shift 3) is a String of bytes.
    m.word(kData + 0x800, 20, 4);  // java_lang_Thread::_name_offset
    m.word(kData + 0x804, 12, 4);  // java_lang_String::_value_offset
    m.word(kData + 0x808, 16, 4);  // java_lang_String::_coder_offset
    m.word(kData + 0x810, 1, 1);   // UseCompressedOops
    m.word(kData + 0x811, 1, 1);   // UseCompressedClassPointers
    m.word(kData + 0x820, kJavaHeap);
    m.word(kData + 0x828, 3, 4);
    m.word(jt + 648, kData + 0x900);
    m.word(kData + 0x900, kJavaHeap + 0x100);
    m.zeros(kJavaHeap, 0x1000);
    m.word(kJavaHeap + 0x100 + 20, 0x200 >> 3, 4);
    m.word(kJavaHeap + 0x200 + 12, 0x300 >> 3, 4);
    m.word(kJavaHeap + 0x200 + 16, java_name_utf16 ? 1 : 0, 1);
    std::vector<uint8_t> bytes;
    for (unsigned char c : java_name) {
      bytes.push_back(c);
      if (java_name_utf16) bytes.push_back(0);
    }
    if (java_name_utf16) bytes.insert(bytes.end(), {0x3b, 0x04});  // U+043B, CYRILLIC SMALL EL
    m.word(kJavaHeap + 0x300 + 12, bytes.size(), 4);
    for (size_t i = 0; i < bytes.size(); ++i) m.word(kJavaHeap + 0x300 + 16 + i, bytes[i], 1);
    // Abstract_VM_Version::_s_vm_release
    m.word(kData + 0x300, kData + 0x500);
    text(kData + 0x500, "17.0.15+6-test");
  }

  // A C string inside a block already there.
  void text(uint64_t at, const std::string& s) {
    for (size_t i = 0; i <= s.size(); ++i) jvm.mem.word(at + i, i < s.size() ? s[i] : 0, 1);
  }

  Result<HotspotRuntime> read() {
    build();
    auto rt = read_hotspot_runtime(getpid(), "/jdk/lib/server/libjvm.so", 0x7f0000000000,
                                   jvm.symbols, jvm.mem.memory());
    if (rt) rt->vtable_java_thread = kVtableJavaThread;
    return rt;
  }
};

std::string own_comm() {
  std::ifstream in(fmt::format("/proc/self/task/{}/comm", gettid()));
  std::string s;
  std::getline(in, s);
  return s;
}

TEST(hotspot_runtime, reads_heaps_interpreter_and_offsets) {
  Image image;
  auto rt = image.read();
  ASSERT_TRUE(rt) << rt.error().message;
  EXPECT_EQ(rt->name(), fmt::format("java (pid {})", getpid()));
  EXPECT_EQ(rt->version, "17.0.15+6-test");
  EXPECT_EQ(rt->version_source, "Abstract_VM_Version::_s_vm_release");
  const auto& p = rt->proc;
  EXPECT_EQ(p.heaps[0].low, kHeapLow);
  EXPECT_EQ(p.heaps[0].high, kHeapHigh);
  EXPECT_EQ(p.heaps[0].segmap, kSegmap);
  EXPECT_EQ(p.heaps[0].shift, 7u);
  EXPECT_EQ(p.heaps[1].low, kHeap2Low);
  EXPECT_EQ(p.heaps[1].high, kHeap2High);
  EXPECT_EQ(p.heaps[2].high, 0u);
  EXPECT_EQ(p.code_start, kHeapLow);
  EXPECT_EQ(p.code_end, kHeap2High);
  EXPECT_EQ(p.interp_start, kInterp);
  EXPECT_EQ(p.interp_end, kInterp + 0x1000);
  EXPECT_EQ(p.off.heapblock_size, 16u);
  EXPECT_EQ(p.off.blob_name, 96u);
  EXPECT_EQ(p.off.blob_frame_size, 28u);
  EXPECT_EQ(p.off.blob_frame_complete, 20u);
  EXPECT_EQ(p.off.blob_code_begin, 32u);
  EXPECT_EQ(p.off.code_begin_is_offset, 0u);
  EXPECT_EQ(p.off.nm_compile_id, 304u);  // past the bytes read with the blob: read on its own
  EXPECT_EQ(rt->blob_frame_complete_bytes, 4u);
  EXPECT_EQ(p.off.method_const, 8u);
  EXPECT_EQ(p.off.constmethod_size, 48u);
  // The sender sp from the table; the method and bcp slots from frame_x86.hpp.
  EXPECT_EQ(p.off.interp_sender_sp, -1);
  EXPECT_EQ(p.off.interp_method, -3);
  EXPECT_EQ(p.off.interp_bcp, -8);
  EXPECT_EQ(p.off.interp_mirror, -4);
  auto ok = validate_hotspot_runtime(*rt, image.jvm.mem.memory());
  EXPECT_TRUE(ok) << ok.error().message;
}

TEST(hotspot_runtime, reads_a_code_offset_as_newer_jdks_keep_it) {
  Image image;
  image.code_offset = true;
  auto rt = image.read();
  ASSERT_TRUE(rt) << rt.error().message;
  EXPECT_EQ(rt->proc.off.blob_code_begin, 32u);
  EXPECT_EQ(rt->proc.off.code_begin_is_offset, 1u);
  EXPECT_EQ(rt->blob_frame_complete_bytes, 2u);
}

TEST(hotspot_runtime, finds_a_blob_through_the_segment_map) {
  Image image;
  auto rt = image.read();
  ASSERT_TRUE(rt) << rt.error().message;
  auto mem = image.jvm.mem.memory();
  for (uint64_t pc : {kHeapLow + 16, kInterp, kHeapLow + 39 * 128 + 5}) {
    auto blob = hotspot_blob_at(*rt, mem, pc);
    ASSERT_TRUE(blob) << blob.error().message;
    EXPECT_EQ(blob->value_or(0), kHeapLow + 16) << std::hex << pc;
  }
  EXPECT_EQ(hotspot_blob_name(*rt, mem, kHeapLow + 16).value(), "Interpreter");
  // A free segment, and a pc in no heap.
  EXPECT_EQ(hotspot_blob_at(*rt, mem, kHeapLow + 40 * 128).value(), std::nullopt);
  EXPECT_EQ(hotspot_blob_at(*rt, mem, kHeap2Low + 8).value(), std::nullopt);
  EXPECT_EQ(hotspot_blob_at(*rt, mem, kHeapHigh).value(), std::nullopt);
}

TEST(hotspot_runtime, lists_java_threads_with_their_task_names) {
  Image image;
  auto rt = image.read();
  ASSERT_TRUE(rt) << rt.error().message;
  auto threads = hotspot_threads(*rt, image.jvm.mem.memory());
  ASSERT_TRUE(threads) << threads.error().message;
  ASSERT_EQ(threads->size(), 1u);
  EXPECT_EQ((*threads)[0].java_thread, kData + 0x6000);
  EXPECT_EQ((*threads)[0].tid, gettid());
  // No symbols to read its java.lang.Thread with: the task's name.
  EXPECT_EQ((*threads)[0].name, own_comm());
  EXPECT_FALSE((*threads)[0].java_name);
  EXPECT_EQ((*threads)[0].kind, HotspotThreadKind::Java);
  EXPECT_STREQ(hotspot_thread_kind_name((*threads)[0].kind), "java");
}

HotspotRuntime::JavaNameSymbols java_name_symbols() {
  return {kData + 0x800, kData + 0x804, kData + 0x808, kData + 0x810, kData + 0x811, 0};
}

TEST(hotspot_runtime, names_a_thread_by_its_java_thread) {
  Image image;
  image.java_name = "Reference Handler";
  auto rt = image.read();
  ASSERT_TRUE(rt) << rt.error().message;
  rt->java_names = java_name_symbols();
  auto threads = hotspot_threads(*rt, image.jvm.mem.memory());
  ASSERT_TRUE(threads) << threads.error().message;
  ASSERT_EQ(threads->size(), 1u);
  EXPECT_EQ((*threads)[0].name, "Reference Handler");
  EXPECT_TRUE((*threads)[0].java_name);
}

TEST(hotspot_runtime, names_a_thread_whose_name_is_utf16) {
  Image image;
  image.java_name = "worker-";
  image.java_name_utf16 = true;
  auto rt = image.read();
  ASSERT_TRUE(rt) << rt.error().message;
  rt->java_names = java_name_symbols();
  auto threads = hotspot_threads(*rt, image.jvm.mem.memory());
  ASSERT_TRUE(threads) << threads.error().message;
  ASSERT_EQ(threads->size(), 1u);
  EXPECT_EQ((*threads)[0].name, "worker-\u043b");
}

TEST(hotspot_runtime, names_a_thread_by_its_task_when_its_java_name_is_unreadable) {
  Image image;
  auto rt = image.read();
  ASSERT_TRUE(rt) << rt.error().message;
  rt->java_names = java_name_symbols();
  // The Thread's name field reads as a reference to nowhere.
  image.jvm.mem.word(kJavaHeap + 0x100 + 20, 0x10000000, 4);
  auto threads = hotspot_threads(*rt, image.jvm.mem.memory());
  ASSERT_TRUE(threads) << threads.error().message;
  ASSERT_EQ(threads->size(), 1u);
  EXPECT_EQ((*threads)[0].name, own_comm());
  EXPECT_FALSE((*threads)[0].java_name);
}

TEST(hotspot_runtime, a_jvm_still_starting_is_asked_again) {
  // No interpreter generated yet: EAGAIN, as the caller retries.
  Image image;
  image.build();
  image.jvm.mem.word(kData + 0x100, 0);
  auto rt = read_hotspot_runtime(getpid(), "/jdk/lib/server/libjvm.so", 0, image.jvm.symbols,
                                 image.jvm.mem.memory());
  ASSERT_FALSE(rt);
  EXPECT_EQ(rt.error().errnum, EAGAIN);
  EXPECT_EQ(rt.error().message,
            fmt::format("java (pid {}): AbstractInterpreter::_code reads 0: the JVM has not "
                        "generated its interpreter yet",
                        getpid()));
}

TEST(hotspot_runtime, refuses_a_segment_size_out_of_range) {
  Image image;
  image.shift = 13;
  auto rt = image.read();
  ASSERT_TRUE(rt) << rt.error().message;
  auto ok = validate_hotspot_runtime(*rt, image.jvm.mem.memory());
  ASSERT_FALSE(ok);
  EXPECT_EQ(ok.error().message,
            fmt::format("java (pid {}): CodeHeap::_log2_segment_size reads 13, not a segment of 32 "
                        "to 4096 bytes: the JVM's structures (17.0.15+6-test) do not read as "
                        "uscope expects",
                        getpid()));
}

TEST(hotspot_runtime, refuses_an_interpreter_whose_blob_is_another) {
  Image image;
  image.interpreter_name = "StubRoutines (1)";
  auto rt = image.read();
  ASSERT_TRUE(rt) << rt.error().message;
  auto ok = validate_hotspot_runtime(*rt, image.jvm.mem.memory());
  ASSERT_FALSE(ok);
  EXPECT_EQ(
      ok.error().message,
      fmt::format("java (pid {}): the blob at the interpreter's {:#x} is named \"StubRoutines "
                  "(1)\", not Interpreter: the JVM's structures (17.0.15+6-test) do not read "
                  "as uscope expects",
                  getpid(), kInterp));
}

TEST(hotspot_runtime, a_field_the_walker_needs_is_named) {
  Image image;
  image.build();
  // The same image without CodeBlob::_frame_size.
  std::erase_if(image.jvm.fields, [](const auto& f) { return f.field == "_frame_size"; });
  image.jvm.write();
  auto rt = read_hotspot_runtime(getpid(), "/jdk/lib/server/libjvm.so", 0, image.jvm.symbols,
                                 image.jvm.mem.memory());
  ASSERT_FALSE(rt);
  EXPECT_EQ(rt.error().message,
            fmt::format("java (pid {}): libjvm.so lists no CodeBlob::_frame_size", getpid()));
}

}  // namespace
}  // namespace uscope
