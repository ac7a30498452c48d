#include "plan/alloc_plan.h"

#include <fmt/format.h>

#include <algorithm>

#include "bpf/profile.h"
#include "discover/library_names.h"
#include "discover/target.h"
#include "plan/site_placement.h"
#include "util/names.h"

namespace uscope {

namespace {

// An object's place in the search: the program, then allocator libraries, libc last.
int search_rank(const PlannedObject& o, bool is_program) {
  if (is_program) return 0;
  return library_name_matches("c", o.ref.display_path) ? 2 : 1;
}

// The argument registers an entry probe reads, so that it may move past the prologue's first
// instruction only while they still hold the arguments.
SiteReads reads_of(uint32_t fn) {
  switch (fn) {
    case ALLOC_MALLOC:
    case ALLOC_VALLOC:
    case ALLOC_FREE:
    case ALLOC_MUNMAP:
      return {{"rdi"}, false};
    case ALLOC_CALLOC:
    case ALLOC_REALLOC:
      return {{"rdi", "rsi"}, false};
    case ALLOC_REALLOCARRAY:
    case ALLOC_POSIX_MEMALIGN:
      return {{"rdi", "rsi", "rdx"}, false};
    default:
      return {{"rsi"}, false};
  }
}

uint64_t cookie_of(uint32_t fn, int32_t sp_delta) {
  return (static_cast<uint64_t>(static_cast<int64_t>(sp_delta)) << 8) | fn;
}

// The entry probe of allocator function `fn` at `f` in `o`, placed past what it may skip while
// the registers it reads still hold the arguments; `placed` says where it went.
AttachSite entry_site(PlannedObject& o, const FunctionSymbol& f, uint32_t fn,
                      const SiteReads& reads, SitePlacement& placed) {
  AttachSite site = entry_probe_site(o, f, reads, placed);
  site.cookie = cookie_of(fn, placed.sp_delta);
  return site;
}

}  // namespace

std::span<const AllocatorFunction> allocator_functions() {
  static constexpr AllocatorFunction kFunctions[] = {
      {"malloc", ALLOC_MALLOC},
      {"calloc", ALLOC_CALLOC},
      {"realloc", ALLOC_REALLOC},
      {"reallocarray", ALLOC_REALLOCARRAY},
      {"posix_memalign", ALLOC_POSIX_MEMALIGN},
      {"aligned_alloc", ALLOC_ALIGNED},
      {"memalign", ALLOC_ALIGNED},
      {"valloc", ALLOC_VALLOC},
      {"pvalloc", ALLOC_VALLOC},
      {"mmap", ALLOC_MMAP},
      {"free", ALLOC_FREE, true},
      {"munmap", ALLOC_MUNMAP, true},
  };
  return kFunctions;
}

Result<AllocPlan> plan_allocators(ObjectCache& cache, const TargetContext& ctx) {
  std::vector<ObjectRef> refs;
  if (ctx.process) {
    refs = process_objects(*ctx.process);
  } else {
    for (const auto& path : linked_files(ctx.main_executable))
      refs.push_back(ObjectRef{path, path, false});
  }
  std::string program = ctx.process && ctx.process->main_object() ? ctx.process->main_object()->path
                                                                  : ctx.main_executable;
  struct Candidate {
    PlannedObject* object;
    const SymbolTable* symbols;
    int rank;
  };
  std::vector<Candidate> objects;
  std::vector<std::string> looked_in;
  for (const auto& ref : refs) {
    if (file_name(ref.display_path).starts_with("ld-linux")) continue;  // ld.so's own malloc
    auto o = cache.open(ref);
    if (!o) continue;
    auto syms = cache.symbols(**o);
    if (!syms) continue;
    looked_in.emplace_back(file_name(ref.display_path));
    objects.push_back({*o, *syms, search_rank(**o, ref.display_path == program)});
  }
  std::stable_sort(objects.begin(), objects.end(),
                   [](const Candidate& a, const Candidate& b) { return a.rank < b.rank; });

  AllocPlan plan;
  bool any_alloc = false, any_free = false;
  for (const AllocatorFunction& f : allocator_functions()) {
    const FunctionSymbol* sym = nullptr;
    PlannedObject* where = nullptr;
    for (const auto& c : objects) {
      for (const FunctionSymbol* s : functions_named(*c.symbols, f.name))
        if (!s->ifunc && s->size > 0) {
          sym = s;
          break;
        }
      if (sym) {
        where = c.object;
        break;
      }
    }
    if (!sym) {
      plan.missing.emplace_back(f.name);
      continue;
    }
    SitePlacement entry;
    AttachSite site = entry_site(*where, *sym, f.fn, reads_of(f.fn), entry);
    plan.sites.push_back(site);
    if (!f.frees) {
      // The return probe takes the return address at the call's rsp: on the first instruction.
      site.offset = sym->offset;
      site.retprobe = true;
      site.cookie = f.fn;
      plan.sites.push_back(site);
    }
    (f.frees ? any_free : any_alloc) = true;
    plan.found.push_back(
        fmt::format("{} in {} (+{:#x}{})", f.name, file_name(where->ref.display_path), sym->offset,
                    entry.moved ? fmt::format(", probed at +{:#x}", entry.moved) : ""));
  }
  // Go's heap: the blocks Go's own sampler picks, and their frees as the sweeper finds them.
  const Candidate* program_object = nullptr;
  for (const auto& c : objects)
    if (c.rank == 0 && c.object->is_go) program_object = &c;
  if (program_object) {
    PlannedObject* go = program_object->object;
    auto sample = functions_named(*program_object->symbols, "runtime.mProf_Malloc");
    auto sweep = functions_named(*program_object->symbols, "runtime.freeSpecial");
    auto rate = symbol_address(*go, "runtime.MemProfileRate");
    if (sample.size() == 1 && sweep.size() == 1 && rate) {
      for (auto [f, fn] : {std::pair{sample[0], uint32_t{ALLOC_GO_SAMPLE}},
                           std::pair{sweep[0], uint32_t{ALLOC_GO_FREE_SPECIAL}}}) {
        SitePlacement entry;
        plan.sites.push_back(entry_site(*go, *f, fn, SiteReads{{"rax", "rbx"}, false}, entry));
        plan.found.push_back(fmt::format("{} in {} (+{:#x}, Go's heap as Go samples it)", f->name,
                                         file_name(go->ref.display_path), f->offset));
      }
      plan.go_rate_address = *rate;
      plan.go_rate_pie = go->elf.is_pie();
      any_alloc = any_free = true;
    } else if (!any_alloc && sample.size() == 1 && sweep.size() == 1) {
      // Its functions are in .gopclntab, which stripping keeps; the rate's variable only in
      // .symtab, without which each sampled block's weight is unknown.
      return fail(
          "{} is a stripped Go program: its heap sampler's rate (runtime.MemProfileRate) has no "
          "symbol, and without it the blocks Go samples cannot be weighed; memleak needs a build "
          "without -ldflags=-s",
          file_name(go->ref.display_path));
    }
  }
  if (!any_alloc || !any_free) {
    std::vector<std::string> names;
    for (const auto& f : allocator_functions()) names.emplace_back(f.name);
    return fail(
        "no allocator uscope can follow: it looked for {} in {}, and found {}; a program with "
        "an allocator of its own (an arena, a pool) allocates through functions of other names",
        join(names), looked_in.empty() ? std::string("no readable object") : join(looked_in),
        plan.found.empty() ? "none" : fmt::format("only {}", plan.found.front()));
  }
  return plan;
}

}  // namespace uscope
