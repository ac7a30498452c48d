#include "cli/aggregate_run.h"

#include <fmt/core.h>
#include <unistd.h>

#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <utility>

#include "cli/command.h"
#include "cli/exit_symbolizer.h"
#include "collect/aggregates.h"
#include "collect/overhead_meter.h"
#include "collect/trace_program.h"
#include "collect/unwind_follower.h"
#include "discover/object_store.h"
#include "discover/unwind_cache.h"
#include "sink/overhead_output.h"
#include "symbolize/symbol_text.h"

namespace uscope::cli {

void add_aggregate_options(CLI::App* cmd, MapOptions& o, bool with_by) {
  if (with_by)
    cmd->add_option("--by", o.by,
                    "Keys to aggregate by, comma-separated: comm, pid, tid, argN, retval, "
                    "str(EXPR[,len]), ustack, or any probe expression");
  cmd->add_option("--top", o.top, "Show the N largest keys (default 10)")
      ->check(CLI::Range(1, 1 << 30));
  cmd->add_flag("--all", o.all, "Show every key");
  cmd->add_option("--max-keys", o.max_keys,
                  fmt::format("Distinct keys the kernel keeps (default {}); hits of new keys "
                              "beyond it are counted as not_counted_map_full",
                              TraceProgram::kDefaultAggregateKeys))
      ->check(CLI::Range(1, 1 << 24));
}

namespace {

// Sums of the counters that say what the table does not hold.
struct Losses {
  uint64_t agg_full = 0, stack_failed = 0, stack_table_full = 0, read_errors = 0, filtered = 0,
           no_entry = 0, malformed = 0, entry_save_failed = 0;
  void add(const RecipeCounters& c) {
    agg_full += c.agg_full;
    stack_failed += c.stack_failed;
    stack_table_full += c.stack_table_full;
    read_errors += c.read_errors;
    filtered += c.filtered;
    no_entry += c.no_entry;
    malformed += c.malformed;
    entry_save_failed += c.entry_save_failed;
  }
};

MapKeyPart key_part(const PayloadValue& v) {
  MapKeyPart p;
  p.is_string = v.is_string;
  p.text = v.text;
  p.number = static_cast<int64_t>(v.number);
  p.truncated = v.truncated;
  p.unreadable = v.deferred;
  return p;
}

}  // namespace

int run_aggregation(Session& session, const SessionOptions& so, const MapOptions& ao,
                    const AggregationPlan& plan, const AggregateView& view, CommandOutput& output) {
  bool ustack = false;
  for (const auto& k : view.keys) ustack |= k.kind == AggregateKey::Kind::UserStack;
  if (ustack && session.watch_pid() <= 0)
    return report_error("--by ustack needs -p PID or -c CMD: a stack is symbolized in its process",
                        kExitUsage);
  if (so.verbose) print_sites(plan.sites, plan.skipped);
  if (plan.sites.empty()) return report_error("no probeable site among the matches");
  std::vector<AttachSite> sites;
  for (const auto& s : plan.sites) sites.push_back(s.attach);
  OverheadMeter meter(session.watch_pid(), so.verbose);
  // ustack keys: stacks walked by CFI in the kernel, through tables loaded for the target.
  std::unique_ptr<UnwindMaps> unwind;
  std::optional<UnwindFollower> follower;
  if (ustack) {
    auto u = UnwindMaps::create(ObjectStore::shared(), UnwindCache::open_default());
    if (!u) return report_error(u.error().message);
    unwind = std::move(*u);
    pid_t pid = session.watch_pid();
    auto r = session.launched() ? unwind->expect_exec(pid) : unwind->load_process(pid);
    if (!r) return report_error(r.error().message);
    follower.emplace(*unwind);
    if (auto l = follower->listen_alone(); !l) return report_error(l.error().message);
  }
  // A process that exits before its stacks are read (a -c command that exits at once) is named
  // from its maps as it exited: followed before the session starts the command.
  ExitSymbolizer symbols;
  if (ustack) symbols.follow_exits(session.watch_pid(), session.started_as(), "--by ustack");
  auto program = TraceProgram::load(plan.recipes, session.target_filter(), !so.no_multi, 0,
                                    ao.max_keys, unwind.get());
  if (!program) return report_error(program.error().message);
  if (auto r = program->attach(sites, true); !r)
    return report_error(session.explain_attach_failure(r.error(), sites).message);
  size_t skipped = plan.skipped.size();
  for (const auto& r : program->refused()) {
    if (so.verbose)
      fmt::print(stderr, "uscope: {} not probed: {}\n", plan.sites[r.site.cookie].label,
                 r.error.message);
    ++skipped;
  }
  std::string names;
  for (const auto& k : view.keys) names += (names.empty() ? "" : ", ") + k.name;
  size_t attached = sites.size() - program->refused().size();
  fmt::print(stderr, "uscope: {} {} site{}{}{}; Ctrl-C to stop\n", view.verb, attached,
             attached == 1 ? "" : "s", names.empty() ? "" : fmt::format(" by {}", names),
             skipped ? fmt::format(" ({} unprobeable skipped)", skipped) : "");
  if (auto r = session.start(); !r) return report_error(r.error().message);
  meter.start();

  // Several functions share the map: then the function is the first key.
  bool by_function = plan.slots.size() > 1;
  MapTable proto;
  proto.kind = view.kind;
  proto.scale = view.scale;
  proto.unit = view.unit;
  proto.top = ao.all ? 0 : ao.top;
  proto.max_keys = ao.max_keys ? ao.max_keys : TraceProgram::kDefaultAggregateKeys;
  if (by_function) proto.key_names.push_back("probe");
  for (const auto& k : view.keys) proto.key_names.push_back(k.name);

  std::optional<Error> read_error;
  OutputBuffer out(output.fd());
  uint64_t tables_not_written = 0;
  AggregateDeltas deltas;
  Losses last_losses;
  uint64_t interval = 0;
  // A stack is symbolized when first seen, while its process still runs, by (stack id, stack
  // hash), which name one stack.
  std::map<std::pair<int32_t, uint64_t>, std::vector<std::string>> stacks;
  auto symbolize = [&](const AggregateRow& row) -> const std::vector<std::string>* {
    auto [it, fresh] = stacks.try_emplace({row.stack_id, row.stack});
    if (fresh) {
      auto addrs = program->user_stack(row);
      if (!addrs) {
        stacks.erase(it);
        read_error = addrs.error();
        return nullptr;
      }
      for (const Frame& f : symbols.symbolizer().symbolize(session.watch_pid(), *addrs, true))
        it->second.push_back(symbol_text(f));
    }
    return &it->second;
  };
  auto symbolize_new = [&] {
    auto rows = program->aggregates();
    if (!rows) {
      read_error = rows.error();
      return false;
    }
    for (const AggregateRow& row : *rows)
      if (row.stack_id >= 0 && !symbolize(row)) break;
    return false;
  };
  auto print = [&] {
    auto rows = program->aggregates();
    auto counters = program->counters();
    if (!rows || !counters) {
      read_error = rows ? counters.error() : rows.error();
      return;
    }
    Losses now;
    for (const auto& c : *counters) now.add(c);
    Losses shown = now;
    MapTable t = proto;
    std::vector<AggregateRow> picked = so.interval_s > 0 ? deltas.advance(*rows) : *rows;
    if (so.interval_s > 0) {
      t.interval = ++interval;
      // Losses per interval too, so that they add up like the rows.
      shown.agg_full -= last_losses.agg_full;
      shown.stack_failed -= last_losses.stack_failed;
      shown.stack_table_full -= last_losses.stack_table_full;
      shown.read_errors -= last_losses.read_errors;
      shown.no_entry -= last_losses.no_entry;
      shown.malformed -= last_losses.malformed;
      shown.entry_save_failed -= last_losses.entry_save_failed;
      last_losses = now;
    }
    t.not_counted = shown.agg_full;
    t.losses = {{"stack_failed", shown.stack_failed},
                {"stack_table_full", shown.stack_table_full},
                {"read_errors", shown.read_errors},
                {"malformed", shown.malformed}};
    if (view.kind == "latency") {
      t.losses.emplace_back("returns_without_entry", shown.no_entry);
      t.losses.emplace_back("entries_not_recorded", shown.entry_save_failed);
    }
    for (const AggregateRow& row : picked) {
      if (row.slot >= plan.slots.size()) continue;  // not ours: never written by our recipes
      const AggregateSlot& slot = plan.slots[row.slot];
      auto key = decode_key(slot.key_fields, row);
      if (!key) {
        read_error =
            Error{fmt::format("an aggregation key does not decode: {}", key.error().message)};
        return;
      }
      MapRow r;
      if (by_function) {
        MapKeyPart fn;
        fn.is_string = true;
        fn.text = slot.label;
        r.key.push_back(std::move(fn));
      }
      for (const auto& v : *key) r.key.push_back(key_part(v));
      if (ustack) {
        r.no_stack = row.stack_id < 0;
        if (!r.no_stack) {
          const auto* frames = symbolize(row);
          if (!frames) return;
          r.stack = *frames;
        }
      }
      r.count = row.count;
      r.sum = static_cast<int64_t>(row.sum);
      r.buckets = row.buckets;
      t.rows.push_back(std::move(r));
    }
    if (!append_printed(out, [&](std::FILE* f) { print_map(std::move(t), output.format, f); }))
      ++tables_not_written;
  };
  EventLoop::Callbacks cb;
  cb.interval = print;
  cb.output = &out;
  if (ustack) {
    cb.drain = [&] {  // on every wake-up of the loop (at least every 100 ms)
      follower->serve();
      symbols.catch_up();
      return symbolize_new();
    };
    cb.data_poll = std::chrono::milliseconds(1);
  }
  cb.done = [&] {
    meter.sample();
    return read_error.has_value();
  };
  StopReason why = session.run(cb);
  program->detach();
  if (!read_error) print();
  finish_output(out, tables_not_written);
  if (read_error) return report_error("cannot read the aggregation: " + read_error->message);
  if (!output.json()) fmt::print(stderr, "uscope: {}\n", describe(why));
  if (auto counters = program->counters()) {
    std::vector<OverheadSite> costed;
    for (const auto& s : plan.sites)
      costed.push_back(overhead_site(s.attach, s.label, s.placement.cost.cost,
                                     (*counters)[s.attach.cookie].hits));
    print_overhead(
        meter.finish(std::move(costed), program->program_fds(),
                     measured_hit_costs().trace_program_ns, session.reaped_target_cpu_time()),
        output.format, so.verbose, stderr);
  }
  return kExitOk;
}

}  // namespace uscope::cli
