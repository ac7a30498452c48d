// What a user sees: probe specs compiled by the planner (compile_probe) and run by the reference
// recipe machine (plan/recipe_interpreter.h, the user-space twin of trace.bpf.c) on synthetic
// registers and memory, the payload decoded by the probe's fields. Plus the machine's own limits
// and drop rules on hand-written recipes.
#include "plan/recipe_interpreter.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "discover/usdt.h"
#include "plan/probe_spec.h"
#include "plan/recipe.h"

namespace uscope {
namespace {

// Target memory: a few byte ranges at fixed addresses; everything else is unreadable.
class Memory {
 public:
  void put(uint64_t addr, std::string_view bytes) { regions_[addr] = std::string(bytes); }
  void put_u64(uint64_t addr, uint64_t v) { put(addr, std::string_view(bytes_of(v), 8)); }
  MemoryReader reader() const {
    return [this](uint64_t addr, void* dst, size_t len) {
      auto it = regions_.upper_bound(addr);
      if (it == regions_.begin()) return false;
      --it;
      uint64_t off = addr - it->first;
      if (off > it->second.size() || len > it->second.size() - off) return false;
      std::memcpy(dst, it->second.data() + off, len);
      return true;
    };
  }

 private:
  static const char* bytes_of(const uint64_t& v) { return reinterpret_cast<const char*>(&v); }
  std::map<uint64_t, std::string> regions_;
};

struct Event {
  RecipeRun run;
  std::vector<PayloadValue> values;
};

CompiledProbe compile(std::string_view text, SiteContext site = {}) {
  auto spec = parse_probe_spec(text);
  EXPECT_TRUE(spec.has_value()) << text << ": " << (spec ? "" : spec.error().message);
  if (!spec) return {};
  site.kind = spec->kind;
  auto c = compile_probe(*spec, site, 0);
  EXPECT_TRUE(c.has_value()) << text << ": " << (c ? "" : c.error().message);
  return c ? *c : CompiledProbe{};
}

// Compiles `text`, runs its main recipe on `in`, decodes an emitted payload by its fields.
Event run(std::string_view text, const RecipeInput& in, SiteContext site = {}) {
  CompiledProbe c = compile(text, site);
  Event e{interpret_recipe(c.main, in), {}};
  if (e.run.outcome == RecipeOutcome::Emitted) {
    auto values = decode_payload(c.fields, e.run.payload);
    EXPECT_TRUE(values.has_value()) << text << ": " << (values ? "" : values.error().message);
    if (values) e.values = *values;
  }
  return e;
}

std::vector<uint64_t> numbers(const Event& e) {
  std::vector<uint64_t> out;
  for (const auto& v : e.values) out.push_back(v.number);
  return out;
}

RecipeInput input_with_args(std::vector<uint64_t> args) {
  static constexpr uscope_reg kSysv[] = {UREG_RDI, UREG_RSI, UREG_RDX, UREG_RCX, UREG_R8, UREG_R9};
  RecipeInput in;
  for (size_t i = 0; i < args.size() && i < 6; ++i) in.regs[kSysv[i]] = args[i];
  return in;
}

TEST(recipe_interpreter, prints_the_six_register_arguments) {
  auto e = run(R"(p::f "%d %u %ld %x %p %c", arg1, arg2, arg3, arg4, arg5, arg6)",
               input_with_args({1, 2, static_cast<uint64_t>(-3), 0xabc, 0x7fff0000, 'A'}));
  ASSERT_EQ(e.run.outcome, RecipeOutcome::Emitted);
  EXPECT_EQ(numbers(e),
            (std::vector<uint64_t>{1, 2, static_cast<uint64_t>(-3), 0xabc, 0x7fff0000, 'A'}));
  EXPECT_EQ(e.run.read_errors, 0u);
}

TEST(recipe_interpreter, go_register_abi_reads_rax_rbx_rcx_rdi_rsi_r8) {
  RecipeInput in;
  in.regs[UREG_RAX] = 10;
  in.regs[UREG_RBX] = 20;
  in.regs[UREG_RCX] = 30;
  in.regs[UREG_RDI] = 40;
  in.regs[UREG_RSI] = 50;
  in.regs[UREG_R8] = 60;
  SiteContext go;
  go.cc = &go_register_convention();
  auto e = run(R"(p::f "%d %d %d %d %d %d", arg1, arg2, arg3, arg4, arg5, arg6)", in, go);
  EXPECT_EQ(numbers(e), (std::vector<uint64_t>{10, 20, 30, 40, 50, 60}));
}

TEST(recipe_interpreter, builtins_are_the_current_task) {
  RecipeInput in;
  in.pid = 4242;
  in.tid = 4243;
  in.cpu = 1;
  in.uid = 1000;
  in.comm = "worker";
  auto e = run(R"(p::f "%d %d %d %d %s", $pid, $tid, $cpu, $uid, $comm)", in);
  ASSERT_EQ(e.values.size(), 5u);
  EXPECT_EQ(numbers(e)[0], 4242u);
  EXPECT_EQ(numbers(e)[1], 4243u);
  EXPECT_EQ(numbers(e)[2], 1u);
  EXPECT_EQ(numbers(e)[3], 1000u);
  EXPECT_EQ(e.values[4].text, "worker");
}

TEST(recipe_interpreter, typed_dereferences_read_width_and_sign) {
  Memory mem;
  mem.put(0x1000, std::string("\xfe\xff\xff\xff", 4));  // s32 -2
  mem.put(0x2008, std::string("\x34\x12", 2));          // u16 0x1234
  mem.put_u64(0x3000, 0x1122334455667788);
  RecipeInput in = input_with_args({0x1000, 0x2000, 0x3000});
  in.read = mem.reader();
  auto e =
      run(R"(p::f "%d %u %lx %d", *(s32*)arg1, *(u16*)(arg2 + 8), *(u64*)arg3, *(u8*)arg3)", in);
  EXPECT_EQ(numbers(e),
            (std::vector<uint64_t>{static_cast<uint64_t>(-2), 0x1234, 0x1122334455667788, 0x88}));
}

// Constants folded into the ops around them (plan/recipe.cc) compute what C does.
TEST(recipe_interpreter, folded_constant_offsets_read_and_add_like_c) {
  Memory mem;
  mem.put_u64(0x1010, 0x5000);  // *(arg1 + 16)
  mem.put_u64(0x5038, 77);      // *(0x5000 + 56)
  mem.put_u64(0x2ff8, 99);      // *(arg2 - 8)
  RecipeInput in = input_with_args({0x1000, 0x3000, 40});
  in.read = mem.reader();
  auto e = run(
      R"(p::f "%d %d %d %d %d", *(u64*)(*(u64*)(arg1 + 16) + 56), *(u64*)(arg2 - 8), arg3 - 50 + 5, (arg3 * 2) + 7, 2 + 3)",
      in);
  EXPECT_EQ(numbers(e), (std::vector<uint64_t>{77, 99, static_cast<uint64_t>(-5), 87, 5}));
  EXPECT_EQ(e.run.read_errors, 0u);
}

TEST(recipe_interpreter, unreadable_dereference_is_zero_and_counted_not_dropped) {
  RecipeInput in = input_with_args({0xdead0000});
  auto e = run(R"(p::f "%d %d", *(s32*)arg1, arg1)", in);
  ASSERT_EQ(e.run.outcome, RecipeOutcome::Emitted);
  EXPECT_EQ(numbers(e), (std::vector<uint64_t>{0, 0xdead0000}));
  EXPECT_EQ(e.run.read_errors, 1u);
}

TEST(recipe_interpreter, nul_terminated_string_within_its_size_is_whole) {
  Memory mem;
  mem.put(0x1000, std::string("GET /index.html\0junk", 20));
  RecipeInput in = input_with_args({0x1000});
  in.read = mem.reader();
  auto e = run(R"(p::f "%s", arg1)", in);
  ASSERT_EQ(e.values.size(), 1u);
  EXPECT_EQ(e.values[0].text, "GET /index.html");
  EXPECT_FALSE(e.values[0].truncated);
  EXPECT_FALSE(e.values[0].deferred);
}

TEST(recipe_interpreter, string_longer_than_its_size_is_cut_and_marked_truncated) {
  Memory mem;
  std::string exact(kDefaultStringBytes, 'a');
  std::string longer(kDefaultStringBytes + 1, 'b');
  mem.put(0x1000, exact + '\0');
  mem.put(0x2000, longer + '\0');
  mem.put(0x3000, std::string("0123456789") + '\0');
  RecipeInput in = input_with_args({0x1000, 0x2000, 0x3000});
  in.read = mem.reader();
  auto e = run(R"(p::f "%s %s %s %s", arg1, arg2, str(arg3, 4), str(arg3, 10))", in);
  ASSERT_EQ(e.values.size(), 4u);
  EXPECT_EQ(e.values[0].text, exact);
  EXPECT_FALSE(e.values[0].truncated);
  EXPECT_EQ(e.values[1].text, longer.substr(0, kDefaultStringBytes));
  EXPECT_TRUE(e.values[1].truncated);
  EXPECT_EQ(e.values[2].text, "0123");
  EXPECT_TRUE(e.values[2].truncated);
  EXPECT_EQ(e.values[3].text, "0123456789");
  EXPECT_FALSE(e.values[3].truncated);
}

TEST(recipe_interpreter, pointer_and_length_string_reads_exactly_length_bytes) {
  Memory mem;
  mem.put(0x1000, "hello, world");  // no NUL: a Go string or a (ptr, len) buffer
  RecipeInput in = input_with_args({0x1000, 5});
  in.read = mem.reader();
  auto e = run(R"(p::f "%s", str(arg1, arg2))", in);
  ASSERT_EQ(e.values.size(), 1u);
  EXPECT_EQ(e.values[0].text, "hello");
  EXPECT_FALSE(e.values[0].truncated);
  // A length past the cap reads the cap and says so.
  mem.put(0x8000, std::string(kMaxStringBytes + 100, 'x'));
  in = input_with_args({0x8000, kMaxStringBytes + 50});
  in.read = mem.reader();
  e = run(R"(p::f "%s", str(arg1, arg2))", in);
  ASSERT_EQ(e.values.size(), 1u);
  EXPECT_EQ(e.values[0].text, std::string(kMaxStringBytes, 'x'));
  EXPECT_TRUE(e.values[0].truncated);
}

TEST(recipe_interpreter, unreadable_string_is_deferred_to_user_space_with_its_address) {
  RecipeInput in = input_with_args({0x7000, 50000});
  auto e = run(R"(p::f "%s %s %d", arg1, str(arg1, arg2), arg2)", in);
  ASSERT_EQ(e.run.outcome, RecipeOutcome::Emitted);
  ASSERT_EQ(e.values.size(), 3u);
  EXPECT_TRUE(e.values[0].deferred);
  EXPECT_FALSE(e.values[0].exact);
  EXPECT_FALSE(e.values[0].truncated);
  EXPECT_EQ(e.values[0].address, 0x7000u);
  EXPECT_EQ(e.values[0].length, static_cast<uint32_t>(kDefaultStringBytes));
  EXPECT_TRUE(e.values[1].deferred);
  EXPECT_TRUE(e.values[1].exact);
  EXPECT_TRUE(e.values[1].truncated);  // 50000 bytes asked, the cap read
  EXPECT_EQ(e.values[1].length, static_cast<uint32_t>(kMaxStringBytes));
  EXPECT_EQ(numbers(e)[2], 50000u);
  EXPECT_EQ(e.run.read_errors, 0u);  // a deferred string is not a lost value
}

TEST(recipe_interpreter, predicate_filters_with_signed_comparisons) {
  const char* spec = R"(p::f (arg1 > -5 && arg2 != 0) "%d", arg1)";
  EXPECT_EQ(run(spec, input_with_args({static_cast<uint64_t>(-4), 1})).run.outcome,
            RecipeOutcome::Emitted);
  EXPECT_EQ(run(spec, input_with_args({static_cast<uint64_t>(-6), 1})).run.outcome,
            RecipeOutcome::Filtered);
  EXPECT_EQ(run(spec, input_with_args({3, 0})).run.outcome, RecipeOutcome::Filtered);
}

TEST(recipe_interpreter, casts_truncate_and_extend_like_c) {
  // An int function returning -1 leaves rax = 0xffffffff: only (int)retval is negative.
  RecipeInput ret;
  ret.regs[UREG_RAX] = 0xffffffffu;
  ret.entry = EntrySlots{};
  SiteContext at_return;
  at_return.kind = ProbeKind::Return;
  EXPECT_EQ(run(R"(r::f ((int)retval < 0) "%d", (int)retval)", ret, at_return).run.outcome,
            RecipeOutcome::Emitted);
  EXPECT_EQ(run(R"(r::f (retval < 0))", ret, at_return).run.outcome, RecipeOutcome::Filtered);
  auto e = run(R"(r::f "%ld %lu %ld %lu %ld", (int)retval, (u8)retval, (short)retval, )"
               R"((unsigned short)retval, (long)retval)",
               ret, at_return);
  EXPECT_EQ(numbers(e), (std::vector<uint64_t>{static_cast<uint64_t>(-1), 0xff,
                                               static_cast<uint64_t>(-1), 0xffff, 0xffffffffu}));
  // A cast to an unsigned 64-bit type compares unsigned, as in C; argN alone compares signed.
  auto minus_one = input_with_args({static_cast<uint64_t>(-1)});
  EXPECT_EQ(run("p::f (arg1 < 0)", minus_one).run.outcome, RecipeOutcome::Emitted);
  EXPECT_EQ(run("p::f ((u64)arg1 < 0)", minus_one).run.outcome, RecipeOutcome::Filtered);
  EXPECT_EQ(run("p::f ((unsigned long)arg1 > 5)", minus_one).run.outcome, RecipeOutcome::Emitted);
  EXPECT_EQ(run("p::f ((char *)arg1 > 5)", minus_one).run.outcome, RecipeOutcome::Emitted);
  EXPECT_EQ(run("p::f ((s64)arg1 < 0)", minus_one).run.outcome, RecipeOutcome::Emitted);
}

TEST(recipe_interpreter, strcmp_and_registers_read_like_bcc) {
  Memory mem;
  mem.put(0x1000, std::string("test.txt\0", 9));
  mem.put(0x2000, std::string("other.txt\0", 10));
  auto in = input_with_args({0x1000});
  in.read = mem.reader();
  in.regs[UREG_RIP] = 0x401234;
  const char* spec = R"(p::f (STRCMP("test.txt", arg1)) "%s %x %x", arg1, ctx->ip, ctx->di)";
  auto e = run(spec, in);
  ASSERT_EQ(e.run.outcome, RecipeOutcome::Emitted);
  EXPECT_EQ(e.values[0].text, "test.txt");
  EXPECT_EQ(e.values[1].number, 0x401234u);
  EXPECT_EQ(e.values[2].number, 0x1000u);
  in.regs[UREG_RDI] = 0x2000;
  EXPECT_EQ(run(spec, in).run.outcome, RecipeOutcome::Filtered);
}

TEST(recipe_interpreter, arithmetic_matches_c_on_64_bit_values) {
  auto e = run(
      R"(p::f "%ld %ld %ld %ld %lx %lx", arg1 / arg2, arg1 % arg2, arg1 / arg3, -arg1, ~arg1, arg1 << 60)",
      input_with_args({100, 7, 0}));
  EXPECT_EQ(numbers(e), (std::vector<uint64_t>{14, 2, 0, static_cast<uint64_t>(-100),
                                               ~uint64_t{100}, uint64_t{100} << 60}));
}

TEST(recipe_interpreter, comm_compare_matches_the_whole_name_only) {
  RecipeInput in;
  const char* spec = R"(p::f ($comm == "redis") "%s", $comm)";
  in.comm = "redis";
  EXPECT_EQ(run(spec, in).run.outcome, RecipeOutcome::Emitted);
  in.comm = "redis-server";
  EXPECT_EQ(run(spec, in).run.outcome, RecipeOutcome::Filtered);
  in.comm = "redi";
  EXPECT_EQ(run(spec, in).run.outcome, RecipeOutcome::Filtered);
}

// One byte past the literal is read: "GETX" is not "GET" (trace.bpf.c read len + 1 bytes and
// took any string starting with the literal for equal).
TEST(recipe_interpreter, string_compare_matches_the_whole_string_only) {
  Memory mem;
  mem.put(0x1000, std::string("GET\0", 4));
  mem.put(0x2000, std::string("GETX\0", 5));
  mem.put(0x3000, std::string("GE\0", 3));
  const char* spec = R"(p::f (str(arg1) == "GET"))";
  RecipeInput in;
  in.read = mem.reader();
  const std::vector<std::pair<uint64_t, RecipeOutcome>> cases = {{0x1000, RecipeOutcome::Emitted},
                                                                 {0x2000, RecipeOutcome::Filtered},
                                                                 {0x3000, RecipeOutcome::Filtered}};
  for (auto [addr, outcome] : cases) {
    in.regs[UREG_RDI] = addr;
    EXPECT_EQ(run(spec, in).run.outcome, outcome) << std::hex << addr;
  }
  // Unreadable: not equal, and counted.
  in.regs[UREG_RDI] = 0x9000;
  auto e = run(R"(p::f (str(arg1) != "GET"))", in);
  EXPECT_EQ(e.run.outcome, RecipeOutcome::Emitted);
  EXPECT_EQ(e.run.read_errors, 1u);
}

TEST(recipe_interpreter, entry_values_reach_the_return_probe) {
  CompiledProbe c =
      compile(R"(r::f ($entry(arg2) > 0) "%d %d %ld", $entry(arg1), $entry(arg2), retval)");
  ASSERT_TRUE(c.entry.has_value());
  RecipeRun saved = interpret_recipe(*c.entry, input_with_args({11, 22, 33}));
  ASSERT_EQ(saved.outcome, RecipeOutcome::SavedEntry);
  RecipeInput at_return;
  at_return.regs[UREG_RAX] = static_cast<uint64_t>(-1);
  at_return.regs[UREG_RDI] = 999;  // clobbered by the callee: must not be read
  at_return.entry = saved.slots;
  RecipeRun ret = interpret_recipe(c.main, at_return);
  ASSERT_EQ(ret.outcome, RecipeOutcome::Emitted);
  auto values = decode_payload(c.fields, ret.payload);
  ASSERT_TRUE(values.has_value()) << values.error().message;
  ASSERT_EQ(values->size(), 3u);
  EXPECT_EQ((*values)[0].number, 11u);
  EXPECT_EQ((*values)[1].number, 22u);
  EXPECT_EQ((*values)[2].number, static_cast<uint64_t>(-1));
  // A return whose entry was not seen (attached mid-call) is dropped and counted.
  at_return.entry.reset();
  EXPECT_EQ(interpret_recipe(c.main, at_return).outcome, RecipeOutcome::NoEntry);
}

TEST(recipe_interpreter, go_entry_values_are_saved_from_go_registers) {
  SiteContext go;
  go.cc = &go_register_convention();
  CompiledProbe c = compile(R"(r::f "%d", $entry(arg2))", go);
  ASSERT_TRUE(c.entry.has_value());
  RecipeInput in;
  in.regs[UREG_RBX] = 77;  // Go's arg2
  in.regs[UREG_RSI] = 5;   // SysV's arg2
  RecipeRun saved = interpret_recipe(*c.entry, in);
  EXPECT_EQ(saved.slots[0], 77u);
}

TEST(recipe_interpreter, latency_recipes_save_then_count_without_emitting) {
  EXPECT_EQ(interpret_recipe(latency_entry_recipe(0, 0), {}).outcome, RecipeOutcome::SavedEntry);
  RecipeInput ret;
  EXPECT_EQ(interpret_recipe(latency_return_recipe(0), ret).outcome, RecipeOutcome::NoEntry);
  ret.entry = EntrySlots{};
  EXPECT_EQ(interpret_recipe(latency_return_recipe(0), ret).outcome, RecipeOutcome::Histogrammed);
}

UsdtLocation usdt_location(std::string_view args, uint64_t addr) {
  UsdtLocation loc;
  loc.addr = addr;
  loc.offset = addr;
  loc.args_text = std::string(args);
  auto parsed = parse_usdt_args(args);
  EXPECT_TRUE(parsed.has_value()) << args;
  if (parsed) loc.args = *parsed;
  return loc;
}

TEST(recipe_interpreter, usdt_operands_read_registers_memory_and_symbols) {
  // Link-time: probe at 0x1130, `table` at 0x4010. Run-time: loaded 0x555500000000 higher.
  const uint64_t bias = 0x555500000000;
  UsdtLocation loc =
      usdt_location("-4@%eax 8@-16(%rbp) -2@2(%rbx,%rcx,4) 8@table+8(%rip) 4@$7 -8@%rdx", 0x1130);
  SiteContext site;
  site.kind = ProbeKind::Usdt;
  site.usdt = &loc;
  site.site_addr = loc.addr;
  site.symbol_address = [](const std::string& name) -> std::optional<uint64_t> {
    if (name == "table") return 0x4010;
    return std::nullopt;
  };
  Memory mem;
  mem.put_u64(0x7ff0 - 16, 123456789);
  mem.put(0x9000 + 2 + 3 * 4, std::string("\xf6\xff", 2));  // s16 -10
  mem.put_u64(bias + 0x4018, 0xfeedface);
  RecipeInput in;
  in.regs[UREG_RAX] = 0xdeadbeefffffffff;  // %eax = -1
  in.regs[UREG_RBP] = 0x7ff0;
  in.regs[UREG_RBX] = 0x9000;
  in.regs[UREG_RCX] = 3;
  in.regs[UREG_RIP] = bias + 0x1130;
  in.regs[UREG_RDX] = static_cast<uint64_t>(-42);
  in.read = mem.reader();
  auto e = run(R"(u::p:n "%d %ld %d %lx %d %ld", arg1, arg2, arg3, arg4, arg5, arg6)", in, site);
  ASSERT_EQ(e.run.outcome, RecipeOutcome::Emitted);
  EXPECT_EQ(numbers(e),
            (std::vector<uint64_t>{static_cast<uint64_t>(-1), 123456789, static_cast<uint64_t>(-10),
                                   0xfeedface, 7, static_cast<uint64_t>(-42)}));
  EXPECT_EQ(e.run.read_errors, 0u);
}

TEST(recipe_interpreter, long_strings_shrink_to_fit_the_event_instead_of_dropping_it) {
  // Three 4000-byte strings and a value: 3 x 4004 + 8 bytes do not fit TRACE_MAX_DATA.
  static_assert(3 * 4004 + 8 > TRACE_MAX_DATA);
  Memory mem;
  std::string text(6000, 's');
  mem.put(0x1000, text + '\0');
  RecipeInput in = input_with_args({0x1000, 0x1000, 0x1000, 99});
  in.read = mem.reader();
  auto e =
      run(R"(p::f "%s %s %s %d", str(arg1, 4000), str(arg2, 4000), str(arg3, 4000), arg4)", in);
  ASSERT_EQ(e.run.outcome, RecipeOutcome::Emitted) << recipe_outcome_name(e.run.outcome);
  ASSERT_EQ(e.values.size(), 4u);
  for (int i = 0; i < 3; ++i) {
    EXPECT_TRUE(e.values[i].truncated) << i;
    EXPECT_EQ(e.values[i].text, text.substr(0, e.values[i].text.size())) << i;
    EXPECT_GE(e.values[i].text.size(), 2000u) << i;
  }
  EXPECT_EQ(e.values[3].number, 99u);
  EXPECT_LE(e.run.payload.size(), static_cast<size_t>(TRACE_MAX_DATA));
}

// Hand-written recipes: the limits and drop rules of the BPF machine itself.
uscope_recipe recipe(std::vector<uscope_op> ops) {
  uscope_recipe r{};
  for (const auto& o : ops) r.ops[r.n_ops++] = o;
  return r;
}

TEST(recipe_interpreter, stack_overflow_and_underflow_drop_as_malformed) {
  std::vector<uscope_op> nine(TRACE_STACK + 1, uscope_op{TOP_CONST, 0, 0, 0, 1});
  EXPECT_EQ(interpret_recipe(recipe(nine), {}).outcome, RecipeOutcome::Malformed);
  EXPECT_EQ(interpret_recipe(recipe({{TOP_ADD, 0, 0, 0, 0}}), {}).outcome,
            RecipeOutcome::Malformed);
  EXPECT_EQ(interpret_recipe(recipe({{TOP_NUM_OPS, 0, 0, 0, 0}}), {}).outcome,
            RecipeOutcome::Malformed);
  // An empty stack at FILTER reads as false: trace.bpf.c counts it as filtered.
  EXPECT_EQ(interpret_recipe(recipe({{TOP_FILTER, 0, 0, 0, 0}}), {}).outcome,
            RecipeOutcome::Filtered);
}

TEST(recipe_interpreter, field_without_room_left_drops_as_malformed) {
  Memory mem;
  mem.put(0x1000, std::string(TRACE_MAX_DATA, 'z'));
  RecipeInput in;
  in.read = mem.reader();
  std::vector<uscope_op> ops;
  for (int i = 0; i < 2; ++i) {
    ops.push_back({TOP_CONST, 0, 0, 0, 0x1000});
    ops.push_back({TOP_EMIT_STR, 0, 0, 0, kMaxStringBytes});
  }
  // The second string is cut to the room left: the payload is full.
  RecipeRun two = interpret_recipe(recipe(ops), in);
  ASSERT_EQ(two.outcome, RecipeOutcome::Emitted);
  EXPECT_EQ(two.payload.size(), static_cast<size_t>(TRACE_MAX_DATA));
  ops.push_back({TOP_CONST, 0, 0, 0, 1});
  ops.push_back({TOP_EMIT, 0, 0, 0, 0});
  EXPECT_EQ(interpret_recipe(recipe(ops), in).outcome, RecipeOutcome::Malformed);
}

TEST(recipe_interpreter, runs_at_most_max_ops_and_stops_at_end) {
  uscope_recipe r = recipe({{TOP_CONST, 0, 0, 0, 5},
                            {TOP_EMIT, 0, 0, 0, 0},
                            {TOP_END, 0, 0, 0, 0},
                            {TOP_CONST, 0, 0, 0, 6},
                            {TOP_EMIT, 0, 0, 0, 0}});
  RecipeRun out = interpret_recipe(r, {});
  EXPECT_EQ(out.ops_run, 2u);
  EXPECT_EQ(out.payload.size(), 8u);
  r.n_ops = 1000;  // larger than the ops array: bpf_loop stops at TRACE_MAX_OPS steps
  EXPECT_LE(interpret_recipe(r, {}).ops_run, static_cast<uint32_t>(TRACE_MAX_OPS));
}

TEST(recipe_interpreter, decode_payload_refuses_what_does_not_match_the_fields) {
  std::vector<OutputField> one_value{{OutputField::Kind::Value, {}}};
  std::vector<uint8_t> short_payload(4, 0);
  EXPECT_FALSE(decode_payload(one_value, short_payload).has_value());
  std::vector<uint8_t> long_payload(12, 0);
  EXPECT_FALSE(decode_payload(one_value, long_payload).has_value());
  std::vector<OutputField> one_string{{OutputField::Kind::String, {}}};
  std::vector<uint8_t> overlong = {200, 0, 0, 0, 'a'};
  EXPECT_FALSE(decode_payload(one_string, overlong).has_value());
}

}  // namespace
}  // namespace uscope
