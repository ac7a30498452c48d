// /proc/kallsyms parsing and lookup, and the bcc form of kernel and user frames.
#include "symbolize/kernel_symbols.h"

#include <gtest/gtest.h>

#include "symbolize/symbol_text.h"

namespace uscope {
namespace {

TEST(kernel_symbols, finds_the_symbol_at_or_below_an_address) {
  auto k = KernelSymbols::parse(
      "ffffffff81000000 T _stext\n"
      "ffffffff81001000 T asm_exc_int3\n"
      "ffffffffc0a01000 t kvm_vcpu_ioctl\t[kvm]\n"
      "ffffffff81002000 t do_int3\n");  // out of order: sorted on load
  ASSERT_EQ(k.size(), 4u);
  auto s = k.find(0xffffffff81001039ull);
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(s->name, "asm_exc_int3");
  EXPECT_EQ(s->offset, 0x39u);
  EXPECT_EQ(s->module, "");
  EXPECT_EQ(k.find(0xffffffff81002000ull)->name, "do_int3");
  EXPECT_EQ(k.find(0xffffffffc0a01010ull)->module, "kvm");
  EXPECT_FALSE(k.find(0x1000).has_value());
  EXPECT_EQ(symbol_text(k.frame(0xffffffff81001039ull)), "asm_exc_int3+0x39 [kernel]");
  EXPECT_EQ(symbol_text(k.frame(0xffffffffc0a01010ull)), "kvm_vcpu_ioctl+0x10 [kvm]");
  EXPECT_EQ(symbol_text(k.frame(0x1000)), "[unknown: no symbol covers the address] [kernel]");
}

TEST(kernel_symbols, hidden_addresses_give_no_symbols_rather_than_wrong_ones) {
  // kptr_restrict: readers without CAP_SYSLOG see zeros.
  auto k = KernelSymbols::parse("0000000000000000 T _stext\n0000000000000000 T do_int3\n");
  EXPECT_EQ(k.size(), 0u);
  EXPECT_FALSE(k.find(0xffffffff81001000ull).has_value());
  EXPECT_EQ(symbol_text(k.frame(0xffffffff81001000ull)), "[unknown: no symbols] [kernel]");
}

TEST(kernel_symbols, malformed_lines_are_skipped) {
  auto k = KernelSymbols::parse("garbage\nzzzz T x\nffffffff81000000 T\n\nffffffff81000010 T ok");
  ASSERT_EQ(k.size(), 1u);
  EXPECT_EQ(k.find(0xffffffff81000011ull)->name, "ok");
}

TEST(kernel_symbols, reads_proc_kallsyms) {
  auto k = KernelSymbols::load();
  ASSERT_TRUE(k.has_value()) << k.error().message;
}

TEST(symbol_text, user_frames_as_bcc_prints_them) {
  Frame f;
  f.object = "/usr/lib/x86_64-linux-gnu/libc.so.6";
  f.function = "start_thread";
  f.function_offset = 0x202;
  EXPECT_EQ(symbol_text(f), "start_thread+0x202 [libc.so.6]");
  f.function_offset = 0;
  EXPECT_EQ(symbol_text(f), "start_thread+0x0 [libc.so.6]");
  f.miss = FrameMiss::UnknownAddress;
  EXPECT_EQ(symbol_text(f), "[unknown: no symbol covers the address] [libc.so.6]");
  f.miss = FrameMiss::NoSymbols;
  EXPECT_EQ(symbol_text(f), "[unknown: no symbols] [libc.so.6]");
  f.object = "[vdso]";
  EXPECT_EQ(symbol_text(f), "[unknown: no symbols] [vdso]");
  f.object = "";
  f.miss = FrameMiss::Unmapped;
  EXPECT_EQ(symbol_text(f), "[unknown: unmapped]");
}

}  // namespace
}  // namespace uscope
