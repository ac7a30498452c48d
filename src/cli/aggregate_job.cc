#include "cli/aggregate_job.h"

#include <algorithm>

#include <fmt/core.h>

#include "discover/object_store.h"
#include "discover/unwind_cache.h"
#include "symbolize/symbol_text.h"

namespace uscope::cli {

namespace {

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

void AggregateJob::Losses::add(const RecipeCounters& c) {
  agg_full += c.agg_full;
  stack_failed += c.stack_failed;
  stack_table_full += c.stack_table_full;
  read_errors += c.read_errors;
  filtered += c.filtered;
  no_entry += c.no_entry;
  malformed += c.malformed;
  entry_save_failed += c.entry_save_failed;
}

AggregateJob::AggregateJob(Session& session, const SessionOptions& so, const MapOptions& ao,
                           const AggregationPlan& plan, const AggregateView& view,
                           std::function<void(MapTable)> table)
    : session_(session),
      so_(so),
      ao_(ao),
      plan_(plan),
      view_(view),
      table_(std::move(table)),
      meter_(session.watch_pid(), so.verbose) {
  for (const auto& k : view.keys) ustack_ |= k.kind == AggregateKey::Kind::UserStack;
  for (const auto& s : plan.sites) sites_.push_back(s.attach);
  // Several functions share the map: then the function is the first key.
  proto_.kind = view.kind;
  proto_.scale = view.scale;
  proto_.unit = view.unit;
  proto_.top = ao.all ? 0 : ao.top;
  proto_.max_keys = ao.max_keys ? ao.max_keys : TraceProgram::kDefaultAggregateKeys;
  if (plan.slots.size() > 1) proto_.key_names.push_back("probe");
  for (const auto& k : view.keys) proto_.key_names.push_back(k.name);
}

Result<void> AggregateJob::start() {
  // ustack keys: stacks walked by CFI in the kernel, through tables loaded for the target.
  if (ustack_) {
    auto u = UnwindMaps::create(ObjectStore::shared(), UnwindCache::open_default());
    if (!u) return tl::unexpected(u.error());
    unwind_ = std::move(*u);
    if (auto r = session_.prepare_unwind(*unwind_, session_.watch_pid()); !r)
      return tl::unexpected(r.error());
    follower_.emplace(*unwind_);
    if (auto l = follower_->listen_alone(); !l) return tl::unexpected(l.error());
    // A process that exits before its stacks are read (a -c command that exits at once) is
    // named from its maps as it exited: followed before the session starts the command.
    symbols_.follow_exits(session_.watch_pid(), session_.started_as(), "--by ustack");
  }
  auto program = TraceProgram::load(plan_.recipes, session_.target_filter(), !so_.no_multi, 0,
                                    ao_.max_keys, unwind_.get());
  if (!program) return tl::unexpected(program.error());
  program_.emplace(std::move(*program));
  if (auto r = program_->attach(sites_, true); !r)
    return tl::unexpected(session_.explain_attach_failure(r.error(), sites_));
  size_t skipped = plan_.skipped.size();
  for (const auto& r : program_->refused()) {
    if (so_.verbose)
      fmt::print(stderr, "uscope: {} not probed: {}\n", plan_.sites[r.site.cookie].label,
                 r.error.message);
    ++skipped;
  }
  std::string names;
  for (const auto& k : view_.keys) names += (names.empty() ? "" : ", ") + k.name;
  size_t attached = sites_.size() - program_->refused().size();
  fmt::print(stderr, "uscope: {} {} site{}{}{}; Ctrl-C to stop\n", view_.verb, attached,
             attached == 1 ? "" : "s", names.empty() ? "" : fmt::format(" by {}", names),
             skipped ? fmt::format(" ({} unprobeable skipped)", skipped) : "");
  if (auto r = session_.start(); !r) return tl::unexpected(r.error());
  meter_.start();
  return {};
}

const std::vector<std::string>* AggregateJob::symbolize(const AggregateRow& row) {
  auto [it, fresh] = stacks_.try_emplace({row.stack_id, row.stack});
  if (fresh) {
    auto addrs = program_->user_stack(row);
    if (!addrs) {
      stacks_.erase(it);
      read_error_ = addrs.error();
      return nullptr;
    }
    for (const Frame& f : symbols_.symbolizer().symbolize(session_.watch_pid(), *addrs, true))
      it->second.push_back(symbol_text(f));
  }
  return &it->second;
}

bool AggregateJob::symbolize_new() {
  auto rows = program_->aggregates();
  if (!rows) {
    read_error_ = rows.error();
    return false;
  }
  for (const AggregateRow& row : *rows)
    if (row.stack_id >= 0 && !symbolize(row)) break;
  return false;
}

void AggregateJob::emit_table() {
  auto rows = program_->aggregates();
  auto counters = program_->counters();
  if (!rows || !counters) {
    read_error_ = rows ? counters.error() : rows.error();
    return;
  }
  Losses now;
  for (const auto& c : *counters) now.add(c);
  Losses shown = now;
  MapTable t = proto_;
  std::vector<AggregateRow> picked = so_.interval_s > 0 ? deltas_.advance(*rows) : *rows;
  if (so_.interval_s > 0) {
    t.interval = ++interval_;
    // Losses per interval too, so that they add up like the rows.
    shown.agg_full -= last_losses_.agg_full;
    shown.stack_failed -= last_losses_.stack_failed;
    shown.stack_table_full -= last_losses_.stack_table_full;
    shown.read_errors -= last_losses_.read_errors;
    shown.no_entry -= last_losses_.no_entry;
    shown.malformed -= last_losses_.malformed;
    shown.entry_save_failed -= last_losses_.entry_save_failed;
    last_losses_ = now;
  }
  t.not_counted = shown.agg_full;
  t.losses = {{"stack_failed", shown.stack_failed},
              {"stack_table_full", shown.stack_table_full},
              {"read_errors", shown.read_errors},
              {"malformed", shown.malformed}};
  // Returns paired with their entries (latency, calls -L) say what found no entry.
  const bool paired = std::any_of(plan_.sites.begin(), plan_.sites.end(), [](const PlannedSite& s) {
    return s.role == SiteRole::LatencyEntry;
  });
  if (paired) {
    t.losses.emplace_back("returns_without_entry", shown.no_entry);
    t.losses.emplace_back("entries_not_recorded", shown.entry_save_failed);
  }
  bool by_function = plan_.slots.size() > 1;
  for (const AggregateRow& row : picked) {
    if (row.slot >= plan_.slots.size()) continue;  // not ours: never written by our recipes
    const AggregateSlot& slot = plan_.slots[row.slot];
    auto key = decode_key(slot.key_fields, row);
    if (!key) {
      read_error_ =
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
    if (ustack_) {
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
  table_(std::move(t));
}

EventLoop::Callbacks AggregateJob::callbacks() {
  EventLoop::Callbacks cb = table_job_callbacks([this] { emit_table(); }, meter_, read_error_);
  if (ustack_) {
    cb.drain = [this] {  // on every wake-up of the loop (at least every 100 ms)
      follower_->serve();
      symbols_.catch_up();
      return symbolize_new();
    };
    cb.data_poll = std::chrono::milliseconds(1);
  }
  return cb;
}

Result<void> AggregateJob::stop(StopReason) {
  program_->detach();
  if (!read_error_) emit_table();
  if (read_error_) return fail("cannot read the aggregation: {}", read_error_->message);
  return {};
}

std::optional<Overhead> AggregateJob::overhead() {
  return trace_program_overhead(*program_, plan_.sites, meter_, session_);
}

}  // namespace uscope::cli
