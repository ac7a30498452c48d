#pragma once
// Probe specs resolved to attach sites: which object, which file offset, which kind of probe,
// which USDT semaphore, which recipe, and what each site costs per hit.
#include <sys/types.h>

#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "bpf/trace.h"
#include "discover/dwarf_types.h"
#include "discover/elf_file.h"
#include "discover/go_buildinfo.h"
#include "discover/process.h"
#include "discover/symbol_table.h"
#include "discover/target.h"
#include "discover/usdt.h"
#include "plan/attach_site.h"
#include "plan/probe_spec.h"
#include "plan/recipe.h"
#include "plan/site_cost.h"

namespace uscope {

// Where probes go: a running process (-p), a command about to start (-c), or every process that
// maps the named files (neither).
struct TargetContext {
  const Process* process = nullptr;
  std::string main_executable;  // -c: the command's program
  pid_t pid = 0;                // filter for attaching; 0 = every process
};

// One object opened for planning, with what was read from it so far.
struct PlannedObject {
  ObjectRef ref;
  ElfFile elf;
  std::optional<SymbolTable> symbols{};
  std::optional<std::vector<UsdtProbe>> usdt{};
  bool is_go = false;
  std::optional<GoBuildInfo> go{};  // from .go.buildinfo, when the binary has one
  std::optional<std::vector<uint64_t>> branch_targets{};  // see plan_function_entry()
  // Defined symbols of every kind by name, read once for USDT operands that name one.
  std::optional<std::map<std::string, uint64_t>> symbol_addresses{};
  std::unique_ptr<DwarfTypes> dwarf{};  // opened by the name resolver when a spec names one
};

// Where an entry probe on the function at [addr, addr+size) goes. A move past more than endbr64
// is checked against every direct branch in the object (swept once into `branch_targets`), since
// other functions may jump into this one's prologue.
Result<EntrySitePlan> plan_function_entry(const ElfFile& elf, uint64_t addr, uint64_t size,
                                          const std::vector<std::string>& reads, bool reads_memory,
                                          std::optional<std::vector<uint64_t>>& branch_targets);

class ObjectCache {
 public:
  explicit ObjectCache(const TargetContext& ctx) : ctx_(ctx) {}
  // `target` as written in a spec ("", a path, a short library name).
  Result<PlannedObject*> get(const std::string& target);
  Result<const SymbolTable*> symbols(PlannedObject& o);
  Result<const std::vector<UsdtProbe>*> usdt(PlannedObject& o);

 private:
  const TargetContext& ctx_;
  std::map<std::string, std::unique_ptr<PlannedObject>> by_target_;
};

// A function or USDT location matched by a spec or pattern.
struct MatchedSite {
  PlannedObject* object = nullptr;
  std::string label;            // "malloc", "python:function__entry"
  uint64_t address = 0;         // link-time address of the site
  uint64_t function_start = 0;  // link-time address of the function (0 for USDT)
  uint64_t offset = 0;          // file offset of the site
  uint64_t function_size = 0;
  uint64_t ref_ctr_offset = 0;
  const UsdtLocation* usdt = nullptr;
};

// Functions (exact name, or glob for count/latency) or USDT locations a spec names; errors list
// the closest names. Aliases at one address become one site with the first name.
Result<std::vector<MatchedSite>> match_sites(ObjectCache& cache, const ProbeSpec& spec);

// Sites of several count/latency patterns, each (object, offset) once.
Result<std::vector<MatchedSite>> match_patterns(ObjectCache& cache,
                                                std::span<const ProbeSpec> patterns);

// The attach point of one matched site, with its cost class. Probes on a function's first
// instruction may move into the prologue when the registers they read provably still hold the
// arguments there (return probes only while rsp is unchanged).
struct SitePlacement {
  uint64_t offset = 0;
  uint64_t address = 0;
  int32_t sp_delta = 0;
  SiteClass cost;
  std::string note;  // why moved or not
};
SitePlacement place_site(const MatchedSite& m, ProbeKind kind,
                         const std::vector<std::string>& reads, bool reads_memory, bool allow_move);

struct PlannedSite {
  AttachSite attach;
  uint32_t probe = 0;  // index into TracePlan::probes
  std::string object;  // display path
  std::string label;
  SitePlacement placement;
};

struct ProbePlan {
  ProbeSpec spec;
  std::string label;
  std::vector<OutputField> fields;
};

struct TracePlan {
  std::vector<uscope_recipe> recipes;  // index = bpf cookie
  std::vector<PlannedSite> sites;      // sites[i] runs recipes[i]
  std::vector<ProbePlan> probes;
};

struct TraceOptions {
  bool capture_stack = false;
  bool move_sites = true;  // allow cheaper sites inside the entry block
};

Result<TracePlan> plan_trace(ObjectCache& cache, std::span<const ProbeSpec> specs,
                             const TraceOptions& opts);

// Registers an expression reads (canonical names) and whether it dereferences memory.
void collect_reads(const Expr& e, ProbeKind kind, std::vector<std::string>& regs, bool& memory);

}  // namespace uscope
