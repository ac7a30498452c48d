// The VMStructs reader: the tables are read as the JVM's layout globals say, lookups follow
// superclasses, and a table that cannot be read is an error naming the table and entry.
#include "discover/hotspot_vmstructs.h"

#include <gtest/gtest.h>

#include "hotspot_fake_jvm.h"

namespace uscope {
namespace {

test::FakeJvm small_jvm() {
  test::FakeJvm jvm;
  jvm.field("CodeBlob", "_frame_size", 28, "int");
  jvm.field("CodeBlob", "_name", 96, "const char*");
  jvm.field("Thread", "_osthread", 560, "OSThread*");
  jvm.static_field("CodeCache", "_heaps", 0x7f0000001000);
  jvm.type("Thread", 1024);
  jvm.type("JavaThread", 2048, "Thread");
  jvm.type("HeapBlock", 16);
  jvm.ints = {{"frame::interpreter_frame_sender_sp_offset", -1}};
  jvm.longs = {{"markWord::hash_mask", 0x7fffffff}};
  return jvm;
}

TEST(hotspot_vmstructs, reads_every_table) {
  auto jvm = small_jvm();
  jvm.write();
  auto vm = read_vmstructs(jvm.symbols, jvm.mem.memory());
  ASSERT_TRUE(vm) << vm.error().message;
  ASSERT_EQ(vm->fields().size(), 4u);
  EXPECT_EQ(vm->fields()[1].type, "CodeBlob");
  EXPECT_EQ(vm->fields()[1].field, "_name");
  EXPECT_EQ(vm->fields()[1].type_string, "const char*");
  EXPECT_EQ(vm->offset("CodeBlob", "_frame_size"), 28u);
  EXPECT_EQ(vm->offset("CodeBlob", "_name"), 96u);
  EXPECT_EQ(vm->address("CodeCache", "_heaps"), 0x7f0000001000u);
  EXPECT_EQ(vm->type_size("HeapBlock"), 16u);
  ASSERT_EQ(vm->types().size(), 3u);
  EXPECT_EQ(vm->types()[1].superclass, "Thread");
  EXPECT_EQ(vm->int_constant("frame::interpreter_frame_sender_sp_offset"), -1);
  EXPECT_EQ(vm->long_constant("markWord::hash_mask"), 0x7fffffff);
}

TEST(hotspot_vmstructs, follows_the_layout_globals) {
  // Another build's layout: wider entries, members in another order.
  auto jvm = small_jvm();
  jvm.struct_layout = {{"TypeName", 40}, {"FieldName", 0}, {"TypeString", 8},
                       {"IsStatic", 56}, {"Offset", 16},   {"Address", 24}};
  jvm.struct_stride = 64;
  jvm.type_layout = {{"TypeName", 8},       {"SuperclassName", 0}, {"IsOopType", 24},
                     {"IsIntegerType", 28}, {"IsUnsigned", 32},    {"Size", 16}};
  jvm.type_stride = 48;
  jvm.write();
  auto vm = read_vmstructs(jvm.symbols, jvm.mem.memory());
  ASSERT_TRUE(vm) << vm.error().message;
  EXPECT_EQ(vm->offset("CodeBlob", "_name"), 96u);
  EXPECT_EQ(vm->address("CodeCache", "_heaps"), 0x7f0000001000u);
  EXPECT_EQ(vm->type_size("JavaThread"), 2048u);
  EXPECT_EQ(vm->types()[1].superclass, "Thread");
}

TEST(hotspot_vmstructs, finds_a_field_in_a_superclass) {
  auto jvm = small_jvm();
  jvm.write();
  auto vm = read_vmstructs(jvm.symbols, jvm.mem.memory());
  ASSERT_TRUE(vm) << vm.error().message;
  EXPECT_EQ(vm->offset("JavaThread", "_osthread"), 560u);
  EXPECT_EQ(vm->offset("Thread", "_osthread"), 560u);
  EXPECT_FALSE(vm->offset("HeapBlock", "_osthread"));
  // Static and non-static are told apart.
  EXPECT_FALSE(vm->offset("CodeCache", "_heaps"));
  EXPECT_FALSE(vm->address("CodeBlob", "_name"));
}

TEST(hotspot_vmstructs, a_missing_field_is_an_error_naming_it) {
  HotspotVmStructs vm({{"CodeBlob", "_name", "const char*", false, 96, 0}}, {}, {}, {});
  EXPECT_EQ(vm.need_offset("CodeBlob", "_name").value(), 96u);
  EXPECT_EQ(vm.need_offset("CodeBlob", "_code_offset").error().message,
            "libjvm.so lists no CodeBlob::_code_offset");
  EXPECT_EQ(vm.need_address("CodeCache", "_heaps").error().message,
            "libjvm.so lists no static CodeCache::_heaps");
  EXPECT_EQ(vm.need_type_size("HeapBlock").error().message, "libjvm.so lists no type HeapBlock");
  EXPECT_EQ(vm.need_int_constant("frame::x").error().message,
            "libjvm.so lists no constant frame::x");
}

TEST(hotspot_vmstructs, a_jvm_not_yet_initialized_is_named) {
  // The layout globals are zero until the JVM fills them early in its start.
  auto jvm = small_jvm();
  jvm.write();
  jvm.mem.word(jvm.symbols.layout["gHotSpotVMStructEntryArrayStride"], 0);
  auto vm = read_vmstructs(jvm.symbols, jvm.mem.memory());
  ASSERT_FALSE(vm);
  EXPECT_EQ(vm.error().message,
            "gHotSpotVMStructEntryArrayStride reads 0: the JVM has not initialized its VMStructs "
            "yet (it does early in its start)");
  EXPECT_EQ(vm.error().errnum, EAGAIN);  // ask again later
}

TEST(hotspot_vmstructs, a_member_past_its_entry_is_an_error) {
  auto jvm = small_jvm();
  jvm.struct_layout["Address"] = 44;
  jvm.write();
  auto vm = read_vmstructs(jvm.symbols, jvm.mem.memory());
  ASSERT_FALSE(vm);
  EXPECT_EQ(vm.error().message,
            "gHotSpotVMStructEntryAddressOffset reads 44, past its entry of 48 bytes");
}

TEST(hotspot_vmstructs, a_member_offset_that_wraps_is_an_error) {
  // Found by the fuzzer: offset + width wrapped past 2^64 and read before the entry.
  auto jvm = small_jvm();
  jvm.write();
  jvm.mem.word(jvm.symbols.layout["gHotSpotVMStructEntryTypeNameOffset"], ~0ull);
  auto vm = read_vmstructs(jvm.symbols, jvm.mem.memory());
  ASSERT_FALSE(vm);
  EXPECT_EQ(vm.error().message,
            "gHotSpotVMStructEntryTypeNameOffset reads 18446744073709551615, past its entry of 48 "
            "bytes");
}

TEST(hotspot_vmstructs, an_unreadable_string_names_the_entry) {
  auto jvm = small_jvm();
  jvm.write();
  // Entry 2's field name points nowhere.
  uint64_t table = 0;
  jvm.mem.memory()(jvm.symbols.structs, {reinterpret_cast<uint8_t*>(&table), 8});
  jvm.mem.word(table + 2 * 48 + 8, 0xdead0000);
  auto vm = read_vmstructs(jvm.symbols, jvm.mem.memory());
  ASSERT_FALSE(vm);
  EXPECT_EQ(vm.error().message,
            "gHotSpotVMStructs: entry 2's FieldName at 0xdead0000 is unreadable or longer than "
            "1024 bytes");
}

TEST(hotspot_vmstructs, a_table_with_no_end_is_an_error) {
  auto jvm = small_jvm();
  jvm.write();
  // Every entry of a long table names a type: no end entry within the bound.
  uint64_t table = 0x40000000;
  jvm.mem.zeros(table, 48 * 100'001);
  for (size_t i = 0; i <= 100'000; ++i) jvm.mem.word(table + 48 * i, 0x10800000);
  jvm.mem.word(jvm.symbols.structs, table);
  auto vm = read_vmstructs(jvm.symbols, jvm.mem.memory());
  ASSERT_FALSE(vm);
  EXPECT_EQ(vm.error().message, "gHotSpotVMStructs: no end entry in its first 100000 entries");
}

TEST(hotspot_vmstructs, a_missing_symbol_is_named) {
  auto jvm = small_jvm();
  jvm.write();
  jvm.symbols.layout.erase("gHotSpotVMTypeEntrySizeOffset");
  auto vm = read_vmstructs(jvm.symbols, jvm.mem.memory());
  ASSERT_FALSE(vm);
  EXPECT_EQ(vm.error().message, "libjvm.so exports no gHotSpotVMTypeEntrySizeOffset");
}

}  // namespace
}  // namespace uscope
