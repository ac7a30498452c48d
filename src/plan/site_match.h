#pragma once
// The first step of every plan: the objects a spec names, opened once, and the functions or USDT
// locations in them that a spec, a pattern or `list` names. Every command matches through here,
// so `list` shows the functions `trace`, `count` and `latency` would probe.
#include <sys/types.h>

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "discover/dwarf_types.h"
#include "discover/elf_file.h"
#include "discover/go_buildinfo.h"
#include "discover/go_types.h"
#include "discover/gopclntab.h"
#include "discover/object_store.h"
#include "discover/process.h"
#include "discover/symbol_table.h"
#include "discover/target.h"
#include "discover/usdt.h"
#include "plan/branch_candidates.h"
#include "plan/probe_spec.h"

namespace uscope {

// Where probes go: a running process (-p), a command about to start (-c), or every process that
// maps the named files (neither).
struct TargetContext {
  const Process* process = nullptr;
  std::string main_executable;  // -c: the command's program
  pid_t pid = 0;                // filter for attaching; 0 = every process
};

// One object opened for planning, with what was read from it so far. The ELF and its symbols
// are the shared store's (discover/object_store.h); the rest is the planner's own.
struct PlannedObject {
  ObjectRef ref;
  std::shared_ptr<StoredObject> stored;
  const ElfFile& elf;
  std::optional<std::vector<UsdtProbe>> usdt{};
  bool is_go = false;
  std::optional<GoBuildInfo> go{};  // from .go.buildinfo, when the binary has one
  BranchScan branch_scan{};         // see plan_function_entry()
  // Defined symbols of every kind by name, read once for USDT operands that name one.
  std::optional<std::map<std::string, uint64_t>> symbol_addresses{};
  std::unique_ptr<DwarfTypes> dwarf{};  // opened by the name resolver when a spec names one
  std::unique_ptr<GoTypes> go_types{};  // Go's type layouts, opened when first asked for
};

// The link-time address of a defined symbol of any kind (.symtab, .dynsym) by its exact name.
std::optional<uint64_t> symbol_address(PlannedObject& o, const std::string& name);

// The object's DWARF (its own, or a separate debug file's), opened the first time it is asked for.
Result<DwarfTypes*> dwarf_of(PlannedObject& o);
// Go's type layouts (DWARF, runtime type descriptors, uscope's table), for a Go binary.
Result<GoTypes*> go_types_of(PlannedObject& o);

class ObjectCache;
// How a Go struct field's offset is found (http, tls): GoTypes::field() of an object in the
// product, a table in tests.
using GoFieldLookup = std::function<Result<GoField>(std::string_view type, std::string_view field)>;
// The fields of the object `target` names in `cache` ("" = the main binary), opened when first
// asked for.
GoFieldLookup go_field_lookup(ObjectCache& cache, std::string target = "");

class ObjectCache {
 public:
  // `store` null: the process's shared store, which the symbolizer uses too.
  explicit ObjectCache(const TargetContext& ctx, std::shared_ptr<ObjectStore> store = nullptr)
      : ctx_(ctx), store_(store ? std::move(store) : ObjectStore::shared()) {}
  // `target` as written in a spec ("", a path, a short library name).
  Result<PlannedObject*> get(const std::string& target);
  // An object already resolved (`list -p` walks a process's mappings).
  Result<PlannedObject*> open(const ObjectRef& ref);
  // `ref` opened and named `target` from now on, also when the process does not map it (yet):
  // `tls` probes a library a process will dlopen().
  Result<PlannedObject*> open_as(const std::string& target, const ObjectRef& ref);
  Result<const SymbolTable*> symbols(PlannedObject& o);
  Result<const std::vector<UsdtProbe>*> usdt(PlannedObject& o);
  // The objects specs named that the process does not map yet (ObjectRef::not_mapped): their
  // probes wait for it to map them.
  std::vector<const PlannedObject*> not_mapped() const;

 private:
  const TargetContext& ctx_;
  std::shared_ptr<ObjectStore> store_;
  std::map<std::string, PlannedObject*> by_target_;
  std::map<std::string, std::unique_ptr<PlannedObject>> by_path_;  // open_path -> object
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
  // A copy of the function the compiler inlined into another (Go's inline tree, DWARF's inlined
  // subroutines): the function it is inlined into ("main.fetch"); "" for a function's own code.
  // `address` is the copy's first instruction; function_start/size are the outer function's.
  std::string inlined_in{};
  std::string inlined_call{};  // where the copy's call is in the source: "/src/main.go:18"
};

// The site at the start of function `f` (plus `offset`) in `o`, labelled `label`.
MatchedSite function_site(PlannedObject& o, const FunctionSymbol& f, std::string label,
                          uint64_t offset = 0);
// The site of one location of a USDT probe.
MatchedSite usdt_site(PlannedObject& o, const UsdtProbe& p, const UsdtLocation& loc);

// The function symbols a name selects, aliases and IFUNC resolvers included: a glob over mangled
// and demangled names, else an exact name, else every overload of a C++ name without its
// parameter list ("ns::f" names "ns::f(int)" and "ns::f(char const*)").
std::vector<const FunctionSymbol*> functions_named(const SymbolTable& syms, std::string_view name);
// functions_named() for a Go function that assembly calls (runtime.goexit1): its ABI0 wrapper,
// which loads g into R14 and jumps to it, has its name in .gopclntab too (".abi0" is in .symtab
// only) and is set aside when a copy bigger than a wrapper (32 bytes) is there.
std::vector<const FunctionSymbol*> go_functions_named(const SymbolTable& syms,
                                                      std::string_view name);
// A Go function name as a glob: Go names hold characters globs use, in a receiver
// ("main.(*Store).Get") and in the type arguments of a generic instantiation
// ("main.Sum[go.shape.int_0]"); those are made literal, and "[...]" matches every instantiation
// ("main.Sum[...]"). `go` is false for a name with none of Go's forms (no receiver, type
// arguments or '/').
struct GoNamePattern {
  bool go = false;
  bool any_instantiation = false;  // "[...]"
  bool glob_chars = false;         // glob characters outside the Go parts: "net/http.*"
  std::string glob;                // for glob_match (fnmatch with backslash escapes)
};
GoNamePattern go_name_pattern(std::string_view name);
// Whether a function name in a spec is a glob: '*', '?' or '[' outside a quoted signature.
bool is_function_glob(std::string_view name);

// The inlined copies of the Go functions `name` (exact or glob) selects, from .gopclntab's inline
// trees: each at the copy's first instruction, labelled with the inlined function, `inlined_in`
// its caller. Empty for an object without .gopclntab.
Result<std::vector<MatchedSite>> inlined_sites(PlannedObject& o, std::string_view name);
// The functions an inlined copy calls (direct calls made inside it, the runtime's helpers left
// out), in code order: what a user can probe instead when the copy cannot give what they ask.
std::vector<std::string> functions_called_by_copy(const MatchedSite& m);

// Functions (exact name or glob) or USDT locations a spec names; errors list the closest names.
// Aliases at one address become one site with the first name.
Result<std::vector<MatchedSite>> match_sites(ObjectCache& cache, const ProbeSpec& spec);

// Sites of several count/latency patterns, each (object, offset) once.
Result<std::vector<MatchedSite>> match_patterns(ObjectCache& cache,
                                                std::span<const ProbeSpec> patterns);

}  // namespace uscope
