// Aggregations as a user writes them (--by keys, hist values, --linear) compiled by the planner
// and run by the reference recipe machine (the user-space twin of trace.bpf.c): which key bytes a
// call makes and which bucket its value lands in.
#include "plan/keyed_plan.h"

#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <string>

#include "collect/aggregates.h"
#include "plan/recipe_interpreter.h"

namespace uscope {
namespace {

AggregateSpec spec_of(std::string_view by, ProbeKind kind, bool latency = false) {
  auto keys = parse_aggregate_keys(by, kind, latency);
  EXPECT_TRUE(keys.has_value()) << by << ": " << (keys ? "" : keys.error().message);
  AggregateSpec a;
  if (keys) a.keys = *keys;
  a.latency = latency;
  return a;
}

CompiledAggregate compile(const AggregateSpec& a, ProbeKind kind, std::string_view spec_text = "") {
  ProbeSpec spec;
  if (!spec_text.empty()) {
    auto s = parse_probe_spec(spec_text);
    EXPECT_TRUE(s.has_value()) << (s ? "" : s.error().message);
    if (s) spec = *s;
  }
  spec.kind = kind;
  SiteContext site;
  site.kind = kind;
  auto c = compile_aggregate(spec, a, site, 7, 3);
  EXPECT_TRUE(c.has_value()) << (c ? "" : c.error().message);
  return c ? *c : CompiledAggregate{};
}

RecipeInput call(uint64_t arg1, uint64_t arg2, std::string comm = "worker") {
  RecipeInput in;
  in.regs[UREG_RDI] = arg1;
  in.regs[UREG_RSI] = arg2;
  in.comm = std::move(comm);
  in.pid = 100;
  in.tid = 101;
  return in;
}

std::vector<PayloadValue> key_of(const CompiledAggregate& c, const RecipeRun& run) {
  AggregateRow row;
  std::memcpy(row.key.data(), run.key.data, sizeof(run.key.data));
  auto v = decode_key(c.key_fields, row);
  EXPECT_TRUE(v.has_value()) << (v ? "" : v.error().message);
  return v ? *v : std::vector<PayloadValue>{};
}

TEST(keyed_plan, count_by_comm_and_arg_makes_one_key_per_distinct_pair) {
  auto c = compile(spec_of("comm,arg1", ProbeKind::Entry), ProbeKind::Entry);
  EXPECT_TRUE(c.main.flags & TRACE_F_AGGREGATE);
  EXPECT_EQ(c.main.agg_mode, TRACE_AGG_COUNT);
  EXPECT_EQ(c.main.agg_slot, 3u);
  auto a = interpret_recipe(c.main, call(10, 0, "worker-a"));
  auto b = interpret_recipe(c.main, call(10, 99, "worker-a"));
  auto d = interpret_recipe(c.main, call(20, 0, "worker-a"));
  ASSERT_EQ(a.outcome, RecipeOutcome::Aggregated);
  EXPECT_EQ(std::memcmp(&a.key, &b.key, sizeof(a.key)), 0);  // arg2 is no key
  EXPECT_NE(std::memcmp(&a.key, &d.key, sizeof(a.key)), 0);
  EXPECT_EQ(a.key.slot, 3u);
  EXPECT_EQ(a.key.stack_id, -1);
  auto k = key_of(c, a);
  ASSERT_EQ(k.size(), 2u);
  EXPECT_EQ(k[0].text, "worker-a");
  EXPECT_EQ(k[1].number, 10u);
}

TEST(keyed_plan, predicate_filters_before_counting) {
  auto c = compile(spec_of("arg1", ProbeKind::Entry), ProbeKind::Entry, "p:c:f (arg2 > 5)");
  EXPECT_EQ(interpret_recipe(c.main, call(1, 3)).outcome, RecipeOutcome::Filtered);
  EXPECT_EQ(interpret_recipe(c.main, call(1, 6)).outcome, RecipeOutcome::Aggregated);
}

TEST(keyed_plan, log2_histogram_buckets_like_bpftrace) {
  AggregateSpec a;
  auto v = parse_probe_expression("arg2", ProbeKind::Entry);
  ASSERT_TRUE(v.has_value());
  a.value = *v;
  auto c = compile(a, ProbeKind::Entry);
  EXPECT_EQ(c.main.agg_mode, TRACE_AGG_LOG2);
  std::map<int64_t, int> want = {{-5, 0}, {0, 1}, {1, 2},     {2, 3},     {3, 3},         {4, 4},
                                 {7, 4},  {8, 5}, {1023, 11}, {1024, 12}, {INT64_MAX, 64}};
  for (auto [value, bucket] : want) {
    auto r = interpret_recipe(c.main, call(0, static_cast<uint64_t>(value)));
    ASSERT_EQ(r.outcome, RecipeOutcome::Aggregated);
    EXPECT_EQ(r.bucket, bucket) << value;
    EXPECT_EQ(r.value, static_cast<uint64_t>(value));
  }
}

TEST(keyed_plan, linear_histogram_has_under_and_over_buckets) {
  auto scale = parse_linear_scale("0,100,10");
  ASSERT_TRUE(scale.has_value());
  EXPECT_EQ(scale->linear_buckets, 10u);
  AggregateSpec a;
  a.value = *parse_probe_expression("arg1", ProbeKind::Entry);
  a.scale = *scale;
  auto c = compile(a, ProbeKind::Entry);
  std::map<int64_t, int> want = {{-1, 0}, {0, 1}, {9, 1}, {10, 2}, {99, 10}, {100, 11}, {5000, 11}};
  for (auto [value, bucket] : want)
    EXPECT_EQ(interpret_recipe(c.main, call(static_cast<uint64_t>(value), 0)).bucket, bucket)
        << value;
}

TEST(keyed_plan, linear_scale_errors_say_what_would_work) {
  EXPECT_FALSE(parse_linear_scale("0,100").has_value());
  EXPECT_FALSE(parse_linear_scale("0,100,0").has_value());
  EXPECT_FALSE(parse_linear_scale("100,0,10").has_value());
  auto many = parse_linear_scale("0,1000,1");
  ASSERT_FALSE(many.has_value());
  EXPECT_NE(many.error().message.find("raise STEP"), std::string::npos);
  auto odd = parse_linear_scale("0,95,10");
  ASSERT_FALSE(odd.has_value());
  EXPECT_NE(odd.error().message.find("0,100,10"), std::string::npos);
}

TEST(keyed_plan, string_keys_share_the_key_bytes_and_unreadable_ones_say_so) {
  auto c = compile(spec_of("str(arg1),str(arg2, 8)", ProbeKind::Entry), ProbeKind::Entry);
  RecipeInput in = call(0x1000, 0x2000);
  std::string text = "a-rather-long-name-that-goes-on";
  in.read = [&](uint64_t addr, void* dst, size_t len) {
    if (addr < 0x1000 || addr + len > 0x1000 + text.size() + 1) return false;
    std::memcpy(dst, text.c_str() + (addr - 0x1000), len);
    return true;
  };
  auto r = interpret_recipe(c.main, in);
  ASSERT_EQ(r.outcome, RecipeOutcome::Aggregated);
  EXPECT_EQ(r.read_errors, 1u);
  auto k = key_of(c, r);
  ASSERT_EQ(k.size(), 2u);
  EXPECT_EQ(k[0].text, text);
  EXPECT_TRUE(k[1].deferred);  // unreadable: no address to read later
  EXPECT_EQ(k[1].address, 0u);
}

// Strings that do not fit share what the numbers and the short strings leave: a short one keeps
// its size, the others get one cap, the highest that fits TRACE_AGG_KEY_BYTES.
TEST(keyed_plan, short_string_keys_keep_their_size_and_long_ones_share_the_rest) {
  auto c = compile(spec_of("str(arg1),str(arg2),str(arg3, 8)", ProbeKind::Entry), ProbeKind::Entry);
  std::vector<int64_t> sizes;
  for (uint32_t i = 0; i < c.main.n_ops; ++i)
    if (c.main.ops[i].code == TOP_EMIT_STR) sizes.push_back(c.main.ops[i].imm);
  const int64_t shared = (TRACE_AGG_KEY_BYTES - 3 * 4 - 8) / 2;
  EXPECT_EQ(sizes, (std::vector<int64_t>{shared, shared, 8}));
}

TEST(keyed_plan, keys_too_big_for_the_key_are_refused) {
  ProbeSpec spec;
  SiteContext site;
  // 13 x 20 bytes > TRACE_AGG_KEY_BYTES (248).
  static_assert(13 * (4 + TRACE_COMM_LEN) > TRACE_AGG_KEY_BYTES);
  auto a =
      spec_of("comm,comm,comm,comm,comm,comm,comm,comm,comm,comm,comm,comm,comm", ProbeKind::Entry);
  auto c = compile_aggregate(spec, a, site, 0, 0);
  ASSERT_FALSE(c.has_value());
  EXPECT_NE(c.error().message.find("fewer keys"), std::string::npos);
}

TEST(keyed_plan, bad_keys_name_the_key) {
  auto bad = parse_aggregate_keys("comm,arg10", ProbeKind::Entry);
  ASSERT_FALSE(bad.has_value());
  EXPECT_NE(bad.error().message.find("'arg10'"), std::string::npos);
  EXPECT_FALSE(parse_aggregate_keys("comm,,pid", ProbeKind::Entry).has_value());
  EXPECT_FALSE(parse_aggregate_keys("retval", ProbeKind::Entry).has_value());
  EXPECT_TRUE(parse_aggregate_keys("retval", ProbeKind::Return).has_value());
  EXPECT_FALSE(parse_aggregate_keys("ustack,ustack", ProbeKind::Entry).has_value());
}

TEST(keyed_plan, latency_keys_read_arguments_saved_at_entry) {
  auto a = spec_of("arg1,retval", ProbeKind::Return, true);
  ASSERT_EQ(a.keys.size(), 2u);
  EXPECT_EQ(a.keys[0].expr.op, Expr::Op::Entry);
  auto c = compile(a, ProbeKind::Return);
  ASSERT_TRUE(c.entry.has_value());
  EXPECT_TRUE(c.entry->flags & TRACE_F_SAVE_ENTRY);
  EXPECT_TRUE(c.main.flags & TRACE_F_HISTOGRAM);
  EXPECT_TRUE(c.main.flags & TRACE_F_AGGREGATE);
  // Entry half: saves arg1.
  auto saved = interpret_recipe(*c.entry, call(42, 0));
  ASSERT_EQ(saved.outcome, RecipeOutcome::SavedEntry);
  RecipeInput ret;
  ret.regs[UREG_RAX] = 5;
  ret.entry = saved.slots;
  ret.duration_ns = 3000;
  auto r = interpret_recipe(c.main, ret);
  ASSERT_EQ(r.outcome, RecipeOutcome::Aggregated);
  EXPECT_EQ(r.value, 3000u);
  EXPECT_EQ(r.bucket, 13);  // [2048, 4096)
  auto k = key_of(c, r);
  ASSERT_EQ(k.size(), 2u);
  EXPECT_EQ(k[0].number, 42u);
  EXPECT_EQ(k[1].number, 5u);
  RecipeInput orphan;
  EXPECT_EQ(interpret_recipe(c.main, orphan).outcome, RecipeOutcome::NoEntry);
}

TEST(keyed_plan, latency_without_keys_still_records_the_entry_time) {
  auto c = compile(spec_of("comm", ProbeKind::Return, true), ProbeKind::Return);
  ASSERT_TRUE(c.entry.has_value());
  EXPECT_EQ(c.entry->flags, static_cast<uint32_t>(TRACE_F_SAVE_ENTRY));
}

TEST(keyed_plan, ustack_key_takes_the_stack_and_counts_a_failure) {
  auto c = compile(spec_of("ustack,pid", ProbeKind::Entry), ProbeKind::Entry);
  EXPECT_TRUE(c.main.flags & TRACE_F_AGG_USTACK);
  EXPECT_EQ(c.key_fields.size(), 1u);
  RecipeInput in = call(0, 0);
  in.stack = 0x1234abcdu;
  auto r = interpret_recipe(c.main, in);
  EXPECT_EQ(r.key.stack_id, 0);
  EXPECT_EQ(r.key.stack, 0x1234abcdu);
  EXPECT_FALSE(r.stack_failed);
  in.stack.reset();  // the walk failed, or the stack table was full
  r = interpret_recipe(c.main, in);
  EXPECT_EQ(r.key.stack_id, -1);
  EXPECT_EQ(r.key.stack, 0u);
  EXPECT_TRUE(r.stack_failed);
}

TEST(aggregate_deltas, each_interval_shows_the_growth_and_the_deltas_sum_to_the_total) {
  auto row = [](uint8_t k, uint64_t count, uint64_t b3) {
    AggregateRow r;
    r.key[0] = k;
    r.count = count;
    r.sum = count * 2;
    r.buckets.assign(TRACE_AGG_BUCKETS, 0);
    r.buckets[3] = b3;
    return r;
  };
  AggregateDeltas d;
  auto first = d.advance({row(1, 5, 5), row(2, 0, 0)});
  ASSERT_EQ(first.size(), 1u);
  EXPECT_EQ(first[0].count, 5u);
  auto second = d.advance({row(1, 5, 5), row(2, 3, 1)});
  ASSERT_EQ(second.size(), 1u);  // key 1 did not grow
  EXPECT_EQ(second[0].key[0], 2);
  EXPECT_EQ(second[0].count, 3u);
  auto third = d.advance({row(1, 9, 7), row(2, 3, 1)});
  ASSERT_EQ(third.size(), 1u);
  EXPECT_EQ(third[0].count, 4u);
  EXPECT_EQ(third[0].sum, 8u);
  EXPECT_EQ(third[0].buckets[3], 2u);
}

}  // namespace
}  // namespace uscope
