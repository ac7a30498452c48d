#include <gelf.h>

#include <algorithm>
#include <filesystem>
#include <set>

#include <fmt/format.h>

#include "discover/library_names.h"
#include "discover/process.h"
#include "plan/probe_spec.h"
#include "plan/runtime.h"
#include "util/names.h"

namespace uscope {

namespace {

// The libraries `elf` names in DT_NEEDED ("libruby-3.1.so.3.1"), read with libelf's gelf.
std::vector<std::string> needed_libraries(const ElfFile& elf) {
  std::vector<std::string> out;
  Elf* e = elf.libelf();
  if (!e) return out;
  for (Elf_Scn* scn = nullptr; (scn = elf_nextscn(e, scn));) {
    GElf_Shdr sh;
    if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_DYNAMIC) continue;
    Elf_Data* data = elf_getdata(scn, nullptr);
    for (size_t i = 0; data && sh.sh_entsize && i < sh.sh_size / sh.sh_entsize; ++i) {
      GElf_Dyn dyn;
      if (!gelf_getdyn(data, static_cast<int>(i), &dyn) || dyn.d_tag != DT_NEEDED) continue;
      if (const char* name = elf_strptr(e, sh.sh_link, dyn.d_un.d_val)) out.emplace_back(name);
    }
  }
  return out;
}

// The files a -c command's runtime can be in: its program, the libraries it links, and a java
// launcher's libjvm.so (which it dlopen()s: <java home>/lib/server/libjvm.so).
std::vector<std::string> command_files(const std::string& program) {
  std::vector<std::string> files{program};
  if (auto elf = ElfFile::open(program)) {
    auto cache = read_ld_so_cache();
    for (const auto& lib : needed_libraries(*elf))
      if (cache)
        if (auto path = resolve_library(lib, *cache)) files.push_back(*path);
  }
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

bool runtime_marks(const Runtime& r, RuntimeEvent e) {
  return std::any_of(r.probes.begin(), r.probes.end(),
                     [&](const RuntimeProbe& p) { return p.event == e; });
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

Result<RuntimePlan> plan_runtime(ObjectCache& cache, const TargetContext& ctx,
                                 const std::string& forced, std::span<const RuntimeEvent> events,
                                 std::string_view tool, const TraceOptions& opts, bool per_call) {
  auto found = find_runtime(ctx, forced, tool);
  if (!found) return tl::unexpected(found.error());
  const std::vector<std::string>& carriers = found->carriers;
  const std::string& who = found->who;
  RuntimePlan plan;
  plan.runtime = found->runtime;
  const Runtime& rt = *plan.runtime;
  // The first of the runtime's files with its probes (ruby3.1 links libruby-3.1.so, which has
  // them).
  std::set<std::string_view> present;
  for (const std::string& path : carriers) {
    auto object = cache.get(path);
    if (!object) return tl::unexpected(object.error());
    auto usdt = cache.usdt(**object);
    if (!usdt) return tl::unexpected(usdt.error());
    for (const auto& p : **usdt)
      if (p.provider == rt.provider) present.insert(p.name);
    if (present.empty()) continue;
    plan.object = path;
    break;
  }
  if (present.empty())
    return fail("{} has no {} USDT probes: {}", fmt::join(carriers, " nor "), rt.provider,
                rt.without_probes);

  std::vector<ProbeSpec> specs;
  std::vector<const RuntimeProbe*> wanted;
  std::vector<std::string> skipped_per_call;
  for (const RuntimeProbe& p : rt.probes) {
    if (std::find(events.begin(), events.end(), p.event) == events.end()) continue;
    if (p.per_call && !per_call) {
      skipped_per_call.emplace_back(p.name);
      continue;
    }
    if (!present.contains(p.name)) continue;  // another version's probe
    const std::string text =
        fmt::format("u:{}:{}:{} {}", plan.object, p.provider, p.name, p.message);
    auto spec = parse_probe_spec(text);
    if (!spec) return fail("uscope {}: {}: {}", tool, text, spec.error().message);
    specs.push_back(std::move(*spec));
    wanted.push_back(&p);
  }
  if (specs.empty() && !skipped_per_call.empty())
    return fail(
        "{}'s probes ({} in {}) that uscope {} would read ({}) fire only with {}, and slow every "
        "call then: uscope {} does not turn them on",
        rt.title, rt.provider, plan.object, tool, fmt::join(skipped_per_call, ", "),
        rt.per_call_needs.empty() ? "a flag" : rt.per_call_needs, tool);
  if (specs.empty())
    return fail("{}'s probes ({} in {}) mark no {}: uscope {} has nothing to read in {}", rt.title,
                rt.provider, plan.object, event_names(events), tool, who);
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

}  // namespace uscope
