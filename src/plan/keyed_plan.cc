#include "plan/keyed_plan.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <utility>

#include "plan/name_resolver.h"
#include "plan/return_sites.h"

namespace uscope {

namespace {

// Names of their own, as bpftrace writes them; the same expressions with '$' work too.
constexpr std::pair<std::string_view, Expr::Op> kNamedKeys[] = {
    {"comm", Expr::Op::Comm}, {"pid", Expr::Op::Pid}, {"tid", Expr::Op::Tid},
    {"cpu", Expr::Op::Cpu},   {"uid", Expr::Op::Uid},
};

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// Splits at commas outside parentheses.
std::vector<std::string_view> split_keys(std::string_view by) {
  std::vector<std::string_view> out;
  int depth = 0;
  size_t start = 0;
  bool quoted = false;
  for (size_t i = 0; i <= by.size(); ++i) {
    char c = i < by.size() ? by[i] : ',';
    if (c == '"' && (i == 0 || by[i - 1] != '\\')) quoted = !quoted;
    if (quoted) continue;
    if (c == '(') ++depth;
    if (c == ')') --depth;
    if (c == ',' && depth <= 0) {
      out.push_back(trim(by.substr(start, i - start)));
      start = i + 1;
    }
  }
  return out;
}

// argN -> $entry(argN), for keys read at the return of a call.
void args_at_entry(Expr& e) {
  if (e.op == Expr::Op::Arg) e.op = Expr::Op::Entry;
  for (Expr& c : e.children) args_at_entry(c);
}

tl::unexpected<Error> key_error(std::string_view key, const Error& e) {
  return fail("--by key '{}': {}", key, e.message);
}

}  // namespace

Result<std::vector<AggregateKey>> parse_aggregate_keys(std::string_view by, ProbeKind kind,
                                                       bool at_return_of_call) {
  std::vector<AggregateKey> keys;
  for (std::string_view text : split_keys(by)) {
    if (text.empty())
      return fail("--by '{}': an empty key; separate keys with one ',' (e.g. --by comm,arg1)", by);
    AggregateKey key;
    key.name = std::string(text);
    if (text == "ustack") {
      if (std::any_of(keys.begin(), keys.end(), [](const AggregateKey& k) {
            return k.kind == AggregateKey::Kind::UserStack;
          }))
        return fail("--by: ustack given twice");
      key.kind = AggregateKey::Kind::UserStack;
      keys.push_back(std::move(key));
      continue;
    }
    auto named = std::find_if(std::begin(kNamedKeys), std::end(kNamedKeys),
                              [&](const auto& n) { return n.first == text; });
    if (named != std::end(kNamedKeys)) {
      key.expr.op = named->second;
      key.expr.column = 1;
    } else {
      auto e = parse_probe_expression(text, at_return_of_call ? ProbeKind::Entry : kind);
      if (!e && at_return_of_call) e = parse_probe_expression(text, ProbeKind::Return);
      if (!e) return key_error(text, e.error());
      if (at_return_of_call) args_at_entry(*e);
      if (e->op == Expr::Op::String)
        return fail(
            "--by key '{}': a string literal is the same for every call; key by comm, "
            "str(ptr) or a number",
            text);
      key.expr = std::move(*e);
    }
    key.kind = key.expr.op == Expr::Op::Comm || key.expr.op == Expr::Op::Str
                   ? AggregateKey::Kind::String
                   : AggregateKey::Kind::Number;
    keys.push_back(std::move(key));
  }
  return keys;
}

Result<HistScale> parse_linear_scale(std::string_view text) {
  std::vector<std::string_view> parts = split_keys(text);
  int64_t v[3] = {};
  if (parts.size() != 3)
    return fail("--linear '{}': expected MIN,MAX,STEP (e.g. --linear 0,100,10)", text);
  for (size_t i = 0; i < 3; ++i) {
    auto [end, ec] = std::from_chars(parts[i].data(), parts[i].data() + parts[i].size(), v[i]);
    if (ec != std::errc() || end != parts[i].data() + parts[i].size())
      return fail("--linear '{}': '{}' is not an integer; expected MIN,MAX,STEP", text, parts[i]);
  }
  HistScale s{TRACE_AGG_LINEAR, v[0], v[1], v[2], 0};
  if (s.step <= 0) return fail("--linear '{}': STEP must be positive", text);
  if (s.max <= s.min) return fail("--linear '{}': MAX must be above MIN", text);
  uint64_t span = static_cast<uint64_t>(s.max) - static_cast<uint64_t>(s.min);
  uint64_t n = (span + static_cast<uint64_t>(s.step) - 1) / static_cast<uint64_t>(s.step);
  if (n > TRACE_AGG_BUCKETS - 2)
    return fail("--linear '{}': {} buckets between MIN and MAX, at most {}; raise STEP", text, n,
                TRACE_AGG_BUCKETS - 2);
  if (span % static_cast<uint64_t>(s.step))
    return fail("--linear '{}': MAX - MIN must be a multiple of STEP (e.g. --linear {},{},{})",
                text, s.min, s.min + static_cast<int64_t>(n) * s.step, s.step);
  s.linear_buckets = static_cast<uint32_t>(n);
  return s;
}

Result<void> fit_key(uscope_recipe& r) {
  int64_t fixed = 0;
  std::vector<uscope_op*> strings;
  for (uint32_t i = 0; i < r.n_ops; ++i) {
    uscope_op& o = r.ops[i];
    if (o.code == TOP_EMIT) fixed += 8;
    if (o.code == TOP_EMIT_COMM) fixed += 4 + TRACE_COMM_LEN;
    if (o.code == TOP_EMIT_STR) {
      fixed += 4;
      strings.push_back(&o);
    }
  }
  auto size = [&](int64_t cap) {
    int64_t total = fixed;
    for (const uscope_op* o : strings) total += std::min<int64_t>(o->imm, cap);
    return total;
  };
  if (size(1) > TRACE_AGG_KEY_BYTES)
    return fail(
        "the key fields take more than {} bytes (a number 8, comm 20, a string 4 + its bytes); "
        "use fewer keys",
        TRACE_AGG_KEY_BYTES);
  int64_t lo = 1, hi = kMaxStringBytes + 1;  // size(lo) fits
  while (lo + 1 < hi) {
    const int64_t mid = (lo + hi) / 2;
    (size(mid) <= TRACE_AGG_KEY_BYTES ? lo : hi) = mid;
  }
  for (uscope_op* o : strings) o->imm = std::min<int64_t>(o->imm, lo);
  return {};
}

Result<CompiledAggregate> compile_aggregate(const ProbeSpec& spec, const AggregateSpec& agg,
                                            const SiteContext& site, uint32_t probe_id,
                                            uint32_t slot, const NameResolver& resolve) {
  // The keys and the value compile as a trace probe's arguments would; the recipe then keeps
  // its fields for the key instead of an event.
  ProbeSpec probe;
  probe.kind = site.kind;
  probe.offset = spec.offset;
  probe.predicate = spec.predicate;
  bool ustack = false;
  for (const AggregateKey& k : agg.keys) {
    if (k.kind == AggregateKey::Kind::UserStack) {
      ustack = true;
      continue;
    }
    FormatConversion conv;
    conv.conv = k.kind == AggregateKey::Kind::String ? 's' : 'd';
    probe.conversions.push_back(conv);
    probe.args.push_back(k.expr);
  }
  size_t n_keys = probe.args.size();
  if (agg.value) {
    if (agg.value->op == Expr::Op::Comm || agg.value->op == Expr::Op::Str ||
        agg.value->op == Expr::Op::String)
      return fail("probe spec column {}: a histogram counts numbers, and this is a string",
                  agg.value->column);
    probe.conversions.push_back(FormatConversion{});
    probe.args.push_back(*agg.value);
  }
  if (resolve) {
    auto resolved = resolve(probe);
    if (!resolved) return tl::unexpected(resolved.error());
    probe = std::move(*resolved);
  }
  auto compiled = compile_probe(probe, site, probe_id);
  if (!compiled) return tl::unexpected(compiled.error());
  CompiledAggregate out;
  out.main = compiled->main;
  out.entry = compiled->entry;
  out.key_fields.assign(compiled->fields.begin(),
                        compiled->fields.begin() + static_cast<ptrdiff_t>(n_keys));
  uscope_recipe& r = out.main;
  if (agg.value) r.ops[r.n_ops - 1].code = TOP_AGG_VALUE;  // the value's TOP_EMIT
  if (auto fit = fit_key(r); !fit) return fail("--by: {}", fit.error().message);
  r.flags &= ~static_cast<uint32_t>(TRACE_F_STACK);
  r.flags |= TRACE_F_AGGREGATE | (ustack ? TRACE_F_AGG_USTACK : 0);
  r.agg_slot = slot;
  r.agg_mode = TRACE_AGG_COUNT;
  if (agg.value)
    r.agg_mode = agg.scale.mode == TRACE_AGG_LINEAR ? TRACE_AGG_LINEAR : TRACE_AGG_LOG2;
  if (agg.latency) r.agg_mode = TRACE_AGG_LOG2;
  if (r.agg_mode == TRACE_AGG_LINEAR) {
    r.agg_lin_min = agg.scale.min;
    r.agg_lin_max = agg.scale.max;
    r.agg_lin_step = agg.scale.step;
    r.agg_lin_buckets = agg.scale.linear_buckets;
  }
  if (agg.latency) {
    r.flags |= TRACE_F_RETURN | TRACE_F_NEEDS_ENTRY | TRACE_F_HISTOGRAM;
    if (!out.entry) out.entry = latency_entry_recipe(probe_id, site.sp_delta, *site.cc);
  }
  return out;
}

Result<AggregationPlan> plan_aggregation(ObjectCache& cache, std::span<const ProbeSpec> specs,
                                         const AggregateSpec& agg, bool move_sites) {
  AggregationPlan plan;
  for (const ProbeSpec& spec : specs) {
    auto matched = match_sites(cache, spec);
    if (!matched) return tl::unexpected(matched.error());
    std::map<std::string, uint32_t> slot_of_label;
    for (const MatchedSite& m : *matched) {
      const CallingConvention& cc = convention_of(*m.object);
      SiteReads reads = spec_reads(spec, cc);
      for (const AggregateKey& k : agg.keys)
        if (k.kind != AggregateKey::Kind::UserStack)
          collect_reads(k.expr, spec.kind, reads.registers, reads.memory, cc);
      if (agg.value) collect_reads(*agg.value, spec.kind, reads.registers, reads.memory, cc);
      SitePlacement main_place = place_site(m, spec.kind, reads, move_sites);
      // Code whose stacks move (Go) returns through uprobes on its RET instructions.
      const bool ret_sites =
          spec.kind == ProbeKind::Return && cc.returns == ReturnSites::RetInstructions;
      std::vector<SitePlacement> returns;
      if (ret_sites) {
        auto placed = place_return_instructions(m);
        if (!placed)
          return fail("probe spec column {}: {}", spec.function_column, placed.error().message);
        returns = std::move(*placed);
        main_place = returns.front();
      }
      if (main_place.cost.cost == SiteCost::Unprobeable) {
        plan.skipped.push_back({m.label, m.object->ref.display_path, main_place.cost.why});
        continue;
      }
      auto [it, added] = slot_of_label.emplace(m.label, static_cast<uint32_t>(plan.slots.size()));
      uint32_t slot = it->second;
      // Parameter names and members are registers and offsets of this function in this object.
      NameResolver resolve = [&m](const ProbeSpec& probe) {
        return resolve_names(probe, *m.object, m.function_start, m.label);
      };
      auto compiled =
          compile_aggregate(spec, agg, site_context(m, spec.kind, main_place), slot, slot, resolve);
      if (!compiled) return tl::unexpected(compiled.error());
      if (added) plan.slots.push_back({m.label, m.object->ref.display_path, compiled->key_fields});
      auto add_site = [&](const uscope_recipe& r, const SitePlacement& place, bool retprobe,
                          SiteRole role) {
        PlannedSite s;
        s.attach.path = m.object->ref.open_path;
        s.attach.offset = place.offset;
        s.attach.ref_ctr_offset = m.ref_ctr_offset;
        s.attach.cookie = plan.recipes.size();
        s.attach.retprobe = retprobe;
        s.attach.go_code = m.object->is_go;
        s.attach.display_path = m.object->ref.display_path;
        s.probe = slot;
        s.role = role;
        s.object = m.object->ref.display_path;
        s.label = m.label;
        s.placement = place;
        plan.recipes.push_back(r);
        plan.sites.push_back(std::move(s));
      };
      if (compiled->entry) {
        SitePlacement entry_place = place_site(m, ProbeKind::Entry, reads, move_sites);
        compiled->entry->sp_delta = entry_place.sp_delta;
        add_site(*compiled->entry, entry_place, false,
                 agg.latency ? SiteRole::LatencyEntry : SiteRole::SaveEntry);
      }
      if (ret_sites) {
        for (const auto& place : returns)
          add_site(compiled->main, place, false, SiteRole::Aggregate);
      } else {
        add_site(compiled->main, main_place, spec.kind == ProbeKind::Return, SiteRole::Aggregate);
      }
    }
  }
  return plan;
}

}  // namespace uscope
