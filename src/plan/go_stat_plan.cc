#include "plan/go_stat_plan.h"

#include <elf.h>

#include <fmt/format.h>

#include "discover/go_types.h"
#include "plan/site_cost.h"

namespace uscope {

namespace {

constexpr std::array<std::string_view, kGoRuntimeEvents> kFunctions = {
    "runtime.newproc1", "runtime.goexit0", "runtime.gcMarkTermination",
    "runtime.stopTheWorldWithSema", "runtime.startTheWorldWithSema"};

ProbeSpec entry_probe(const std::string& target, std::string_view function) {
  ProbeSpec s;
  s.kind = ProbeKind::Entry;
  s.target = target;
  s.function = std::string(function);
  s.text = fmt::format("p:{}:{}", target, function);
  return s;
}

// The event a site of either plan marks, from its label (a function's name, or for an inlined copy
// the inlined function's).
std::optional<GoRuntimeEvent> event_of(std::string_view label) {
  for (size_t i = 0; i < kGoRuntimeEvents; ++i)
    if (label == kFunctions[i]) return static_cast<GoRuntimeEvent>(i);
  return std::nullopt;
}

// runtime.allgs in a binary without its symbol table (-ldflags=-s): from the code of
// runtime.forEachG, which .gopclntab still names, checked to read a variable the program writes.
Result<uint64_t> allgs_from_code(PlannedObject& o, const SymbolTable& syms) {
  auto fns = functions_named(syms, "runtime.forEachG");
  if (fns.size() != 1)
    return fail(
        "{} has no symbol runtime.allgs (a binary linked with -ldflags=-s has no symbol "
        "table) and {} runtime.forEachG to find it from",
        o.ref.display_path, fns.empty() ? "no" : "more than one");
  const FunctionSymbol& f = *fns[0];
  auto allgs = allgs_in_for_each_g(o.elf.code_bytes(f.addr, f.size), f.addr);
  if (!allgs)
    return fail(
        "{} has no symbol runtime.allgs (a binary linked with -ldflags=-s has no symbol "
        "table), and the code of runtime.forEachG does not read one slice header "
        "from which to find it",
        o.ref.display_path);
  for (const auto& s : o.elf.sections())
    if ((s.flags & SHF_ALLOC) && (s.flags & SHF_WRITE) && *allgs >= s.addr &&
        *allgs + 16 <= s.addr + s.size)
      return *allgs;
  return fail(
      "{}: runtime.forEachG reads a slice header at {:#x}, outside the program's writable "
      "data: not runtime.allgs",
      o.ref.display_path, *allgs);
}

}  // namespace

std::optional<uint64_t> allgs_in_for_each_g(std::span<const uint8_t> code, uint64_t addr) {
  std::set<uint64_t> words;
  for (const auto& load : rip_relative_loads(code, addr))
    if (load.size == 8) words.insert(load.target);
  std::optional<uint64_t> header;
  for (uint64_t w : words)
    if (words.count(w + 8)) {
      if (header) return std::nullopt;  // two slice headers: not forEachG as uscope knows it
      header = w;
    }
  return header;
}

std::string_view go_runtime_function(GoRuntimeEvent e) {
  return kFunctions[static_cast<size_t>(e)];
}

Result<GoroutineLayout> goroutine_layout(ObjectCache& cache, PlannedObject& o) {
  GoroutineLayout l;
  auto syms = cache.symbols(o);
  if (!syms) return tl::unexpected(syms.error());
  std::string allgs_source = "its symbol";
  if (auto allgs = symbol_address(o, "runtime.allgs")) {
    l.allgs = *allgs;
  } else {
    auto found = allgs_from_code(o, **syms);
    if (!found) return tl::unexpected(found.error());
    l.allgs = *found;
    allgs_source = "the code of runtime.forEachG";
  }
  auto types = go_types_of(o);
  if (!types) return tl::unexpected(types.error());
  auto status = (*types)->field("runtime.g", "atomicstatus");
  if (!status) return tl::unexpected(status.error());
  auto startpc = (*types)->field("runtime.g", "startpc");
  if (!startpc) return tl::unexpected(startpc.error());
  l.status_offset = status->offset;
  l.startpc_offset = startpc->offset;
  l.sources = fmt::format(
      "runtime.allgs at {:#x} (from {}), runtime.g.atomicstatus at {} and runtime.g.startpc at {} "
      "(from {})",
      l.allgs, allgs_source, l.status_offset, l.startpc_offset,
      go_type_source_name(status->source));
  // runtime.isSystemGoroutine: a goroutine started in package runtime, runtime.main aside.
  for (const auto& f : (*syms)->functions())
    if (f.name.starts_with("runtime.") && f.name != "runtime.main") l.system_starts.insert(f.addr);
  return l;
}

Result<GoStatPlan> plan_go_stat(ObjectCache& cache, const GoStatOptions& opts) {
  auto obj = cache.get(opts.target);
  if (!obj) return tl::unexpected(obj.error());
  PlannedObject& o = **obj;
  GoStatPlan plan;
  plan.object = o.ref.display_path;
  if (!o.is_go)
    return fail(
        "{} is not a Go program (no .go.buildinfo or .gopclntab): uscope stat reads the Go "
        "runtime's goroutines and GC; for other programs, count or time their functions with "
        "uscope count / uscope latency",
        plan.object);
  plan.go_version = o.go ? o.go->version : "an unknown Go version";
  auto syms = cache.symbols(o);
  if (!syms) return tl::unexpected(syms.error());
  for (auto f : kFunctions)
    if (functions_named(**syms, f).empty())
      return fail(
          "{} (built by {}) has no {}: uscope stat knows the runtimes of Go 1.17 to 1.22, whose "
          "functions it probes; `uscope list {} 'runtime.*'` shows what this one has",
          plan.object, plan.go_version, f, plan.object);

  std::vector<ProbeSpec> counted, stw;
  for (size_t i = 0; i < kGoRuntimeEvents; ++i) {
    auto e = static_cast<GoRuntimeEvent>(i);
    (e == GoRuntimeEvent::StopTheWorld || e == GoRuntimeEvent::StartTheWorld ? stw : counted)
        .push_back(entry_probe(opts.target, kFunctions[i]));
  }
  auto counts = plan_count(cache, counted, {.move_sites = opts.move_sites});
  if (!counts) return tl::unexpected(counts.error());
  plan.counts = std::move(*counts);
  for (const auto& s : plan.counts.skipped)
    return fail("{} in {} cannot be probed: {}", s.label, s.object, s.why);
  for (const auto& s : plan.counts.sites) {
    auto e = event_of(s.label);
    if (!e) return fail("uscope stat: a site labelled {} matched none of its functions", s.label);
    plan.counted_event.push_back(*e);
  }

  TraceOptions topts;
  topts.move_sites = opts.move_sites;
  auto trace = plan_trace(cache, stw, topts);
  if (!trace) return tl::unexpected(trace.error());
  plan.stw = std::move(*trace);
  if (auto l = goroutine_layout(cache, o))
    plan.goroutines = std::move(*l);
  else
    plan.no_goroutines = l.error().message;
  for (const auto& p : plan.stw.probes) {
    auto e = event_of(p.spec.function);
    if (!e) return fail("uscope stat: a probe of {} matched none of its functions", p.label);
    plan.stw_event.push_back(*e);
  }
  return plan;
}

}  // namespace uscope
