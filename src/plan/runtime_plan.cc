#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <set>

#include <fmt/format.h>

#include "discover/library_names.h"
#include "discover/process.h"
#include "plan/aggregate_plan.h"
#include "plan/probe_spec.h"
#include "plan/runtime.h"
#include "util/names.h"

namespace uscope {

namespace {

// The files a -c command's runtime can be in: its program, the libraries it links, and a java
// launcher's libjvm.so (which it dlopen()s: <java home>/lib/server/libjvm.so).
std::vector<std::string> command_files(const std::string& program) {
  std::vector<std::string> files = linked_files(program);
  std::error_code ec;
  const auto real = std::filesystem::canonical(program, ec);
  if (!ec && real.filename() == "java")
    files.push_back((real.parent_path().parent_path() / "lib/server/libjvm.so").string());
  return files;
}

std::string known_runtimes() {
  std::string s;
  for (const Runtime* r : runtimes())
    s += fmt::format("{}{} ({})", s.empty() ? "" : ", ", r->name, r->carrier);
  return s;
}

std::string event_names(std::span<const RuntimeEvent> events) {
  std::string s;
  for (RuntimeEvent e : events)
    s += fmt::format("{}{}", s.empty() ? "" : ", ", runtime_event_name(e));
  return s;
}

}  // namespace

std::string_view runtime_event_name(RuntimeEvent e) {
  switch (e) {
    case RuntimeEvent::GcBegin:
      return "GC begin";
    case RuntimeEvent::GcEnd:
      return "GC end";
    case RuntimeEvent::ThreadStart:
      return "thread start";
    case RuntimeEvent::ThreadEnd:
      return "thread end";
    case RuntimeEvent::ClassLoad:
      return "class load";
    case RuntimeEvent::MethodEntry:
      return "method entry";
    case RuntimeEvent::MethodReturn:
      return "method return";
    case RuntimeEvent::ObjectNew:
      return "object creation";
    case RuntimeEvent::Exception:
      return "exception";
  }
  return "event";
}

std::span<const Runtime* const> runtimes() {
  static const Runtime* const all[] = {&java_runtime(), &python_runtime(), &ruby_runtime(),
                                       &php_runtime()};
  return all;
}

std::span<const RuntimeEvent> runtime_stat_events() {
  static constexpr RuntimeEvent kEvents[] = {RuntimeEvent::GcBegin,     RuntimeEvent::GcEnd,
                                             RuntimeEvent::ThreadStart, RuntimeEvent::ThreadEnd,
                                             RuntimeEvent::ClassLoad,   RuntimeEvent::Exception};
  return kEvents;
}

bool runtime_marks(const Runtime& r, RuntimeEvent e) {
  return std::any_of(r.probes.begin(), r.probes.end(),
                     [&](const RuntimeProbe& p) { return p.event == e; });
}

bool RuntimePlan::marks(RuntimeEvent e) const {
  return std::any_of(probe_of.begin(), probe_of.end(),
                     [&](const RuntimeProbe* p) { return p->event == e; });
}

std::vector<std::string> runtime_carriers(const Runtime& r, std::span<const std::string> paths) {
  std::vector<std::string> out;
  for (const auto& p : paths)
    if (r.carries_probes(file_name(p)) && std::find(out.begin(), out.end(), p) == out.end())
      out.push_back(p);
  return out;
}

Result<FoundRuntime> find_runtime(const TargetContext& ctx, const std::string& forced,
                                  std::string_view tool) {
  std::vector<std::string> files;
  FoundRuntime found;
  if (ctx.process) {
    for (const auto& o : ctx.process->objects()) files.push_back(o.path);
    found.who = fmt::format("process {} ({})", ctx.process->pid(), ctx.process->comm());
  } else {
    files = command_files(ctx.main_executable);
    found.who = ctx.main_executable;
  }
  if (!forced.empty()) {
    for (const Runtime* r : runtimes())
      if (r->name == forced) found.runtime = r;
    if (!found.runtime) {
      std::vector<std::string> names;
      for (const Runtime* r : runtimes()) names.emplace_back(r->name);
      return fail("-l {}: uscope knows the runtimes {}", forced, fmt::join(names, ", "));
    }
    found.carriers = runtime_carriers(*found.runtime, files);
    if (found.carriers.empty())
      return fail("{} runs no {}: it maps no {}", found.who, found.runtime->title,
                  found.runtime->carrier);
    return found;
  }
  for (const Runtime* r : runtimes())
    if (found.carriers = runtime_carriers(*r, files); !found.carriers.empty()) {
      found.runtime = r;
      return found;
    }
  return fail(
      "{} runs no runtime uscope {} knows: {}{}; -l NAME names the runtime when its file has "
      "another name",
      found.who, tool, known_runtimes(),
      tool == "stat" ? ", and Go" : "; for a Go program, uscope stat");
}

namespace {

// The runtime of the target, the file with its probes and which of them it has.
struct LocatedRuntime {
  const Runtime* runtime = nullptr;
  std::string object;
  std::string who;
  std::set<std::string_view> present;
};

Result<LocatedRuntime> locate_runtime(ObjectCache& cache, const TargetContext& ctx,
                                      const std::string& forced, std::string_view tool) {
  auto found = find_runtime(ctx, forced, tool);
  if (!found) return tl::unexpected(found.error());
  LocatedRuntime out;
  out.runtime = found->runtime;
  out.who = found->who;
  const Runtime& rt = *out.runtime;
  // The first of the runtime's files with its probes (ruby3.1 links libruby-3.1.so, which has
  // them).
  for (const std::string& path : found->carriers) {
    auto object = cache.get(path);
    if (!object) return tl::unexpected(object.error());
    auto usdt = cache.usdt(**object);
    if (!usdt) return tl::unexpected(usdt.error());
    for (const auto& p : **usdt)
      if (p.provider == rt.provider) out.present.insert(p.name);
    if (out.present.empty()) continue;
    out.object = path;
    break;
  }
  if (out.present.empty())
    return fail("{}{} {} {} USDT probes: {}", found->carriers.size() > 1 ? "neither " : "",
                fmt::join(found->carriers, " nor "), found->carriers.size() > 1 ? "has" : "has no",
                rt.provider, rt.without_probes);
  return out;
}

Result<ProbeSpec> runtime_spec(const LocatedRuntime& at, const RuntimeProbe& p,
                               std::string_view message, std::string_view tool) {
  const std::string text = fmt::format("u:{}:{}:{} {}", at.object, p.provider, p.name, message);
  auto spec = parse_probe_spec(text);
  if (!spec) return fail("uscope {}: {}: {}", tool, text, spec.error().message);
  return spec;
}

// The probes of `e` in the process, and how many the runtime has but the process lacks.
std::vector<const RuntimeProbe*> present_probes(const LocatedRuntime& at, RuntimeEvent e) {
  std::vector<const RuntimeProbe*> out;
  for (const RuntimeProbe& p : at.runtime->probes)
    if (p.event == e && at.present.contains(p.name)) out.push_back(&p);
  return out;
}

// Whether the environment process `pid` started with holds `name` (/proc/PID/environ); nullopt
// when it cannot be read.
std::optional<bool> started_with_env(pid_t pid, std::string_view name) {
  std::ifstream in(fmt::format("/proc/{}/environ", pid), std::ios::binary);
  if (!in) return std::nullopt;
  const std::string prefix = std::string(name) + "=";
  for (std::string entry; std::getline(in, entry, '\0');)
    if (entry.starts_with(prefix)) return true;
  return in.eof() ? std::optional<bool>(false) : std::nullopt;
}

// The one-byte global `symbol` of `object` in the running process; nullopt when it cannot be
// found or read (then nothing is refused: the probe notes say what the probes need).
std::optional<uint8_t> read_flag(ObjectCache& cache, const Process& process,
                                 const std::string& object, std::string_view symbol) {
  auto planned = cache.get(object);
  if (!planned) return std::nullopt;
  const ElfFile& elf = (*planned)->elf;
  auto syms = elf.symbols();
  if (!syms) return std::nullopt;
  auto sym = std::find_if(syms->begin(), syms->end(),
                          [&](const ElfSymbol& s) { return s.name == symbol; });
  if (sym == syms->end()) return std::nullopt;
  for (const MappedObject& o : process.objects()) {
    if (o.path != object) continue;
    auto bias = load_bias(o, elf);
    if (!bias) return std::nullopt;
    uint8_t byte = 0;
    auto n = read_process_memory(process.pid(), *bias + sym->addr, {&byte, 1});
    if (!n || *n != 1) return std::nullopt;
    return byte;
  }
  return std::nullopt;
}

// Per-call probes that cannot fire in the target are refused with what would make them fire: a
// flag of the runtime that is off in the running process (HotSpot's DTraceMethodProbes, set only
// at its start), an environment variable the process was started without (PHP's
// USE_ZEND_DTRACE), or, for -c, not in uscope's environment, which the command inherits.
Result<void> check_per_call(ObjectCache& cache, const TargetContext& ctx, const LocatedRuntime& at,
                            std::span<const RuntimeProbe* const> probes, std::string_view tool) {
  const Runtime& rt = *at.runtime;
  if (!rt.per_call_env.empty()) {
    const std::string env(rt.per_call_env);
    if (!ctx.process && !std::getenv(env.c_str()))
      return fail(
          "{}'s per-call probes fire only in {}: a -c command inherits uscope's environment, so "
          "run `{}=1 uscope {} -c ...`",
          rt.title, rt.per_call_needs, env, tool);
    if (ctx.process && started_with_env(ctx.process->pid(), env) == false)
      return fail(
          "{} was started without {} in its environment, so {}'s per-call probes never fire in "
          "it (PHP reads it once, at its start): start it with {}=1",
          at.who, env, rt.title, env);
  }
  if (!ctx.process) return {};
  std::set<std::string_view> checked;
  for (const RuntimeProbe* p : probes) {
    if (p->flag_symbol.empty() || !checked.insert(p->flag_symbol).second) continue;
    if (read_flag(cache, *ctx.process, at.object, p->flag_symbol) == uint8_t{0})
      return fail(
          "{} runs with {} off, so {}:{} never fires in it ({} reads its flags only at its start): "
          "start it with -XX:+ExtendedDTraceProbes or {}",
          at.who, p->flag_symbol, p->provider, p->name, rt.title, p->flag_option);
  }
  return {};
}

// Every site of `plan` one slot (the tally's one table), its recipes reporting as probe 0.
void one_slot(AggregationPlan& plan, const std::string& label) {
  for (auto& r : plan.recipes) {
    r.agg_slot = 0;
    r.probe_id = 0;
  }
  for (auto& s : plan.sites) s.probe = 0;  // its label stays the probe's (probe_notes.h)
  if (plan.slots.size() > 1) plan.slots.resize(1);
  if (!plan.slots.empty()) plan.slots[0].label = label;
}

}  // namespace

Result<RuntimePlan> plan_runtime(ObjectCache& cache, const TargetContext& ctx,
                                 const std::string& forced, std::span<const RuntimeEvent> events,
                                 std::string_view tool, const TraceOptions& opts, bool per_call) {
  auto at = locate_runtime(cache, ctx, forced, tool);
  if (!at) return tl::unexpected(at.error());
  RuntimePlan plan;
  plan.runtime = at->runtime;
  plan.object = at->object;
  const Runtime& rt = *plan.runtime;

  std::vector<ProbeSpec> specs;
  std::vector<const RuntimeProbe*> wanted;
  std::vector<std::string> skipped_per_call;
  for (const RuntimeProbe& p : rt.probes) {
    if (std::find(events.begin(), events.end(), p.event) == events.end()) continue;
    if (p.per_call && !per_call) {
      skipped_per_call.emplace_back(p.name);
      continue;
    }
    if (!at->present.contains(p.name)) continue;  // another version's probe
    if (p.partial)
      return fail(
          "{}'s {}:{} fires for only some calls (in Python 3.11, those entered from C): uscope {} "
          "cannot show its calls; uscope calls counts them (at their return), uscope top shows "
          "where the time goes",
          rt.title, p.provider, p.name, tool);
    auto spec = runtime_spec(*at, p, p.message, tool);
    if (!spec) return tl::unexpected(spec.error());
    specs.push_back(std::move(*spec));
    wanted.push_back(&p);
  }
  if (per_call)
    if (auto ok = check_per_call(cache, ctx, *at, wanted, tool); !ok)
      return tl::unexpected(ok.error());
  if (specs.empty() && !skipped_per_call.empty())
    return fail(
        "{}'s probes ({} in {}) that uscope {} would read ({}) fire only with {}, and slow every "
        "call then: uscope {} does not turn them on",
        rt.title, rt.provider, plan.object, tool, fmt::join(skipped_per_call, ", "),
        rt.per_call_needs.empty() ? "a flag" : rt.per_call_needs, tool);
  if (specs.empty())
    return fail("{}'s probes ({} in {}) mark no {}: uscope {} has nothing to read in {}", rt.title,
                rt.provider, plan.object, event_names(events), tool, at->who);
  auto trace = plan_trace(cache, specs, opts);
  if (!trace) return tl::unexpected(trace.error());
  plan.trace = std::move(*trace);
  for (const auto& probe : plan.trace.probes) {
    auto it = std::find_if(wanted.begin(), wanted.end(), [&](const RuntimeProbe* w) {
      return w->name == probe.spec.function && w->provider == probe.spec.provider;
    });
    if (it == wanted.end())
      return fail("uscope {}: the planner returned a probe ({}) that was not asked for", tool,
                  probe.label);
    plan.probe_of.push_back(*it);
  }
  return plan;
}

void pair_calls_by_depth(RuntimePlan& plan) {
  TracePlan& t = plan.trace;
  auto is = [&](const PlannedSite& s, RuntimeEvent e) {
    return s.probe < plan.probe_of.size() && plan.probe_of[s.probe]->event == e;
  };
  std::vector<size_t> order;
  for (size_t i = 0; i < t.sites.size(); ++i)
    if (is(t.sites[i], RuntimeEvent::MethodReturn)) order.push_back(i);
  for (size_t i = 0; i < t.sites.size(); ++i)
    if (!is(t.sites[i], RuntimeEvent::MethodReturn)) order.push_back(i);
  std::vector<uscope_recipe> recipes;
  std::vector<PlannedSite> sites;
  for (size_t i : order) {
    uscope_recipe r = t.recipes[i];
    PlannedSite s = t.sites[i];
    if (is(s, RuntimeEvent::MethodReturn)) r.flags |= TRACE_F_RETURN | TRACE_F_DEPTH;
    if (is(s, RuntimeEvent::MethodEntry)) r.flags |= TRACE_F_DEPTH;
    s.attach.cookie = recipes.size();
    recipes.push_back(r);
    sites.push_back(std::move(s));
  }
  t.recipes = std::move(recipes);
  t.sites = std::move(sites);
}

Result<RuntimeAggregation> plan_runtime_tally(ObjectCache& cache, const TargetContext& ctx,
                                              const std::string& forced, RuntimeTally what,
                                              std::string_view tool) {
  auto at = locate_runtime(cache, ctx, forced, tool);
  if (!at) return tl::unexpected(at.error());
  const Runtime& rt = *at->runtime;
  RuntimeAggregation out;
  out.runtime = &rt;
  out.object = at->object;

  const RuntimeEvent counted =
      what == RuntimeTally::Objects ? RuntimeEvent::ObjectNew : RuntimeEvent::MethodEntry;
  std::vector<const RuntimeProbe*> entries = present_probes(*at, counted);
  std::vector<const RuntimeProbe*> returns = present_probes(*at, RuntimeEvent::MethodReturn);
  const bool partial_entries =
      std::any_of(entries.begin(), entries.end(), [](const RuntimeProbe* p) { return p->partial; });
  if (entries.empty() && (what == RuntimeTally::Objects || returns.empty()))
    return fail("{}'s probes ({} in {}) mark no {}: uscope {} has nothing to count in {}{}",
                rt.title, rt.provider, at->object, runtime_event_name(counted), tool, at->who,
                what == RuntimeTally::Objects ? "" : "; where its time goes: uscope top -p PID");
  if (what == RuntimeTally::TimedCalls && (entries.empty() || partial_entries || returns.empty()))
    return fail(
        "{}'s {} fires for only some calls ({}), so its calls cannot be paired with their "
        "returns to time them: uscope calls without -L counts every call (at {}); where its "
        "time goes: uscope top -p PID",
        rt.title, entries.empty() ? "call probe" : entries.front()->name,
        entries.empty() ? "none" : "in Python 3.11, those entered from C",
        returns.empty() ? "none" : returns.front()->name);
  // A call is counted where it is entered, or where it returns when its entry probe is partial
  // (or missing).
  std::vector<const RuntimeProbe*> keyed =
      what == RuntimeTally::TimedCalls ||
              (what == RuntimeTally::Calls && (partial_entries || entries.empty()))
          ? returns
          : entries;

  std::vector<const RuntimeProbe*> used = keyed;
  if (what == RuntimeTally::TimedCalls) used.insert(used.end(), entries.begin(), entries.end());
  if (auto ok = check_per_call(cache, ctx, *at, used, tool); !ok) return tl::unexpected(ok.error());

  AggregateSpec agg;
  std::vector<ProbeSpec> specs;
  for (const RuntimeProbe* p : keyed) {
    auto spec = runtime_spec(*at, *p, "", tool);
    if (!spec) return tl::unexpected(spec.error());
    specs.push_back(std::move(*spec));
    out.probes.push_back(p->name);
  }
  auto keys = parse_aggregate_keys(keyed.front()->key, ProbeKind::Usdt);
  if (!keys) return fail("uscope {}: {}: {}", tool, keyed.front()->key, keys.error().message);
  agg.keys = std::move(*keys);
  out.keys = agg.keys;
  auto plan = plan_aggregation(cache, specs, agg, false);
  if (!plan) return tl::unexpected(plan.error());
  const std::string label = what == RuntimeTally::Objects ? "objects" : "calls";
  one_slot(*plan, label);
  if (what == RuntimeTally::TimedCalls) {
    // Each return takes the call its thread entered last (TRACE_F_DEPTH), and its duration.
    for (auto& r : plan->recipes) {
      r.flags |= TRACE_F_RETURN | TRACE_F_DEPTH | TRACE_F_NEEDS_ENTRY | TRACE_F_HISTOGRAM;
      r.agg_mode = TRACE_AGG_LOG2;
    }
    // The entries after the returns: attached last (trace.h's TRACE_F_DEPTH).
    std::vector<ProbeSpec> entry_specs;
    for (const RuntimeProbe* p : entries) {
      auto spec = runtime_spec(*at, *p, "", tool);
      if (!spec) return tl::unexpected(spec.error());
      entry_specs.push_back(std::move(*spec));
      out.probes.push_back(p->name);
    }
    auto entry_plan = plan_count(cache, entry_specs, {.move_sites = false});
    if (!entry_plan) return tl::unexpected(entry_plan.error());
    for (PlannedSite s : entry_plan->sites) {
      uscope_recipe r{};
      r.flags = TRACE_F_SAVE_ENTRY | TRACE_F_DEPTH;
      s.attach.cookie = plan->recipes.size();
      s.probe = 0;
      s.role = SiteRole::LatencyEntry;
      plan->recipes.push_back(r);
      plan->sites.push_back(std::move(s));
    }
  }
  out.plan = std::move(*plan);
  return out;
}

std::string runtime_name(const Runtime& r, std::span<const std::string> parts) {
  std::string out;
  for (const std::string& p : parts) {
    if (p.empty()) continue;
    if (!out.empty()) out += r.name_joiner;
    out += p;
  }
  return out;
}

std::string per_call_notice(const Runtime& r, std::span<const std::string_view> probes) {
  std::string s = fmt::format("{}'s per-call probes ({}) are on: {}", r.title,
                              fmt::join(probes, ", "), r.per_call_cost);
  if (!r.per_call_needs.empty()) s += fmt::format("; they fire only with {}", r.per_call_needs);
  return s;
}

}  // namespace uscope
