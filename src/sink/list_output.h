#pragma once
// Rendering of `uscope list`: aligned text grouped by object for people, JSON Lines for programs.
#include <cstdio>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <vector>

#include "discover/symbol_table.h"
#include "discover/usdt.h"
#include "plan/site_placement.h"
#include "sink/output_format.h"

namespace uscope {

// One object's functions and USDT probes, with the sites the planner places for them (pointers
// into the planner's object, which outlives the printing).
struct ListedObject {
  std::string path;
  bool pie = false;
  bool shared_library = false;
  std::optional<std::string> build_id;
  std::vector<const FunctionSymbol*> functions;
  // Per function: where `trace` attaches an entry probe that reads every argument and memory.
  std::vector<SitePlacement> entry_sites;
  // Go functions the compiler inlined, one entry per copy: the copy's site, with `label` the
  // inlined function and `inlined_in` the function holding the copy.
  std::vector<MatchedSite> inlined;
  std::vector<SitePlacement> inlined_sites;
  std::vector<const UsdtProbe*> probes;
  std::vector<std::vector<SitePlacement>> usdt_sites;  // per probe, per location
};

// "shared library", "PIE executable" or "executable".
std::string object_kind_name(bool shared_library, bool pie);

// "u64 rax", "s32 *(rbp-0x8)", "u64 *(rax+rdx*8)", "s32 $5": how a USDT argument is fetched.
std::string describe_usdt_arg(const UsdtArg& a);
nlohmann::json usdt_arg_json(const UsdtArg& a);

class ListPrinter {
 public:
  // Text grouped by object, or JSON Lines for OutputFormat::Json.
  explicit ListPrinter(OutputFormat f, std::FILE* out = stdout)
      : json_(f == OutputFormat::Json), out_(out) {}
  void print(const ListedObject& o);
  void finish() { std::fflush(out_); }

 private:
  void print_text(const ListedObject& o);
  void print_json(const ListedObject& o);
  bool json_;
  std::FILE* out_;
  bool first_object_ = true;
};

}  // namespace uscope
