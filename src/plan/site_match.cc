#include "plan/site_match.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "plan/probe_parse.h"
#include "plan/site_cost.h"
#include "util/names.h"

namespace uscope {

namespace {

Result<std::vector<MatchedSite>> match_usdt(ObjectCache& cache, PlannedObject& o,
                                            const ProbeSpec& spec) {
  auto probes = cache.usdt(o);
  if (!probes) return tl::unexpected(probes.error());
  std::vector<MatchedSite> out;
  std::vector<std::string> names;
  for (const auto& p : **probes) {
    names.push_back(p.provider + ":" + p.name);
    bool provider_ok = spec.provider.empty() || glob_match(spec.provider, p.provider);
    if (!provider_ok || !glob_match(spec.function, p.name)) continue;
    for (const auto& loc : p.locations) out.push_back(usdt_site(o, p, loc));
  }
  if (out.empty()) {
    std::string wanted =
        spec.provider.empty() ? spec.function : spec.provider + ":" + spec.function;
    if (names.empty())
      return fail("probe spec column {}: {} has no USDT probes", spec.function_column,
                  o.ref.display_path);
    auto close = closest_names(wanted, names);
    return fail("probe spec column {}: no USDT probe '{}' in {}{}{}", spec.function_column, wanted,
                o.ref.display_path, close.empty() ? "" : "; closest: ", join(close));
  }
  return out;
}

Result<std::vector<MatchedSite>> match_functions(ObjectCache& cache, PlannedObject& o,
                                                 const ProbeSpec& spec) {
  auto syms = cache.symbols(o);
  if (!syms) return tl::unexpected(syms.error());
  std::vector<const FunctionSymbol*> found = functions_named(**syms, spec.function);
  // Go inlines small functions (net/http.Get, fmt.Println) into their callers: each copy is a
  // site too, so that every call is seen, and a function that exists only inlined is found.
  std::vector<MatchedSite> inlined;
  if (o.is_go && spec.offset == 0) {
    auto copies = inlined_sites(o, spec.function);
    if (!copies) return tl::unexpected(copies.error());
    inlined = std::move(*copies);
  }
  if (found.empty() && !inlined.empty()) return inlined;
  if (found.empty()) {
    auto close = closest_names(spec.function, (*syms)->names());
    return fail("probe spec column {}: no function '{}' in {}{}{}", spec.function_column,
                spec.function, o.ref.display_path, close.empty() ? "" : "; closest: ", join(close));
  }
  // An IFUNC symbol is its resolver, run once at load time; a glob skips it, and naming it
  // exactly points at the implementations it chooses between.
  if (!is_function_glob(spec.function) && !found.empty() &&
      std::all_of(found.begin(), found.end(), [](const FunctionSymbol* f) { return f->ifunc; })) {
    std::vector<std::string> impls;
    for (const auto& name : (*syms)->names())
      if (name.find(spec.function) != std::string::npos && name != spec.function &&
          name.starts_with("__") && !name.starts_with("__GI_"))  // __GI_: glibc-internal alias
        impls.push_back(name);
    if (impls.size() > 8) impls.resize(8);
    return fail(
        "probe spec column {}: {} in {} is an IFUNC: its symbol is the resolver that "
        "picks an implementation at load time; probe the implementations instead{}{}",
        spec.function_column, spec.function, o.ref.display_path, impls.empty() ? "" : ": ",
        join(impls));
  }
  std::vector<MatchedSite> out;
  std::set<uint64_t> seen;
  for (const auto* f : found) {
    if (f->ifunc) continue;
    if (!seen.insert(f->offset).second) continue;  // alias of a function already taken
    if (spec.offset && f->size && spec.offset >= f->size)
      return fail("probe spec column {}: {}+{:#x} is past the end of the function ({} bytes)",
                  spec.function_column, f->demangled(), spec.offset, f->size);
    // A glob names every alias; a label should be the one users know.
    out.push_back(function_site(o, *f,
                                is_function_glob(spec.function)
                                    ? (*syms)->preferred_alias(*f)->demangled()
                                    : f->demangled(),
                                spec.offset));
  }
  out.insert(out.end(), inlined.begin(), inlined.end());
  return out;
}

}  // namespace

Result<std::vector<MatchedSite>> inlined_sites(PlannedObject& o, std::string_view name) {
  std::vector<MatchedSite> out;
  auto t = o.stored->go_table();
  if (!t) return tl::unexpected(t.error());
  if (!*t) return out;
  const GoPclntab& table = **t;
  const bool glob = is_function_glob(name);
  const GoNamePattern go = go_name_pattern(name);
  const std::string pattern = go.go ? go.glob : std::string(name);
  for (const auto& c : table.inlined_calls([&](const std::string& function) {
         return glob ? glob_match(pattern, function) : function == name;
       })) {
    const GoFunction* caller = table.containing(c.pc);
    auto offset = o.elf.vaddr_to_offset(c.pc);
    if (!caller || !offset) continue;
    MatchedSite m;
    m.object = &o;
    m.label = c.function;
    m.address = c.pc;
    m.offset = *offset;
    m.function_start = caller->entry;
    m.function_size = caller->end - caller->entry;
    m.inlined_in = c.caller;
    if (!c.call_file.empty()) m.inlined_call = fmt::format("{}:{}", c.call_file, c.call_line);
    out.push_back(std::move(m));
  }
  return out;
}

std::vector<std::string> functions_called_by_copy(const MatchedSite& m) {
  std::vector<std::string> out;
  const PlannedObject& o = *m.object;
  const GoPclntab* table = o.stored->go_pclntab();
  if (m.inlined_in.empty() || !table) return out;
  const GoPclntab& t = *table;
  const bool runtime = m.label.starts_with("runtime.");
  for_each_direct_branch(
      o.elf.code_bytes(m.function_start, m.function_size), m.function_start,
      [&](const DirectBranch& b) {
        if (!b.call) return;
        const GoFunction* callee = t.containing(b.target);
        if (!callee || callee->entry != b.target) return;
        // The runtime's helpers (morestack, write barriers, conversions) are called everywhere.
        if (!runtime && callee->name.starts_with("runtime.")) return;
        // Made inside the copy: the copy's function is among the inlined frames at the call.
        auto frames = t.frames_at(b.pc);
        bool inside = false;
        for (size_t i = 0; i + 1 < frames.size(); ++i) inside |= frames[i].function == m.label;
        if (inside && std::find(out.begin(), out.end(), callee->name) == out.end())
          out.emplace_back(callee->name);
      });
  return out;
}

MatchedSite function_site(PlannedObject& o, const FunctionSymbol& f, std::string label,
                          uint64_t offset) {
  MatchedSite m;
  m.object = &o;
  m.label = std::move(label);
  m.address = f.addr + offset;
  m.function_start = f.addr;
  m.offset = f.offset + offset;
  m.function_size = f.size;
  return m;
}

MatchedSite usdt_site(PlannedObject& o, const UsdtProbe& p, const UsdtLocation& loc) {
  MatchedSite m;
  m.object = &o;
  m.label = p.provider + ":" + p.name;
  m.address = loc.addr;
  m.offset = loc.offset;
  m.ref_ctr_offset = loc.semaphore ? loc.semaphore_offset : 0;
  m.usdt = &loc;
  return m;
}

GoNamePattern go_name_pattern(std::string_view name) {
  GoNamePattern out;
  std::string rest;  // the name without its Go parts: what may still hold glob characters
  for (size_t i = 0; i < name.size();) {
    // A receiver: ".(*T)." or ".(T)." (T may carry type arguments).
    if (name[i] == '(' && i > 0 && name[i - 1] == '.') {
      size_t close = name.find(')', i);
      if (close != std::string_view::npos && close + 1 < name.size() && name[close + 1] == '.') {
        out.go = true;
        for (size_t k = i; k <= close; ++k) {
          if (name[k] == '*' || name[k] == '[' || name[k] == ']') out.glob += '\\';
          out.glob += name[k];
        }
        i = close + 1;
        continue;
      }
    }
    // Type arguments of a generic instantiation: "Sum[go.shape.int_0]", or "Sum[...]" for all.
    if (name[i] == '[' && i > 0 &&
        (probe_detail::is_ident_char(name[i - 1]) || name[i - 1] == ')')) {
      size_t close = name.find(']', i);
      if (close != std::string_view::npos) {
        std::string_view args = name.substr(i + 1, close - i - 1);
        if (args == "...") {
          out.go = out.any_instantiation = true;
          out.glob += "\\[*\\]";
          i = close + 1;
          continue;
        }
        if (args.find('.') != std::string_view::npos) {
          out.go = true;
          out.glob += "\\[";
          for (char c : args) {
            if (c == '*' || c == '?' || c == '[') out.glob += '\\';
            out.glob += c;
          }
          out.glob += "\\]";
          i = close + 1;
          continue;
        }
      }
    }
    if (name[i] == '/') out.go = true;
    out.glob += name[i];
    rest += name[i];
    ++i;
  }
  out.glob_chars = has_glob_chars(rest);
  return out;
}

bool is_function_glob(std::string_view name) {
  if (auto go = go_name_pattern(name); go.go) return go.glob_chars || go.any_instantiation;
  // A demangled signature ("ns::f(char const*)") is a name, never a glob.
  return has_glob_chars(name) && name.find('(') == std::string_view::npos;
}

std::vector<const FunctionSymbol*> functions_named(const SymbolTable& syms, std::string_view name) {
  if (auto go = go_name_pattern(name); go.go)
    return go.glob_chars || go.any_instantiation ? syms.match(go.glob) : syms.find(name);
  if (is_function_glob(name)) return syms.match(name);
  return syms.find(name);  // "ns::f" names every overload, "ns::f(int)" one
}

std::vector<const FunctionSymbol*> go_functions_named(const SymbolTable& syms,
                                                      std::string_view name) {
  constexpr uint64_t kAbi0WrapperBytes = 32;
  auto found = functions_named(syms, name);
  if (found.size() < 2) return found;
  std::vector<const FunctionSymbol*> bodies;
  for (const auto* f : found)
    if (f->size > kAbi0WrapperBytes) bodies.push_back(f);
  return bodies.empty() ? found : bodies;
}

Result<PlannedObject*> ObjectCache::get(const std::string& target) {
  if (auto it = by_target_.find(target); it != by_target_.end()) return it->second;
  Result<ObjectRef> ref =
      (target.empty() && !ctx_.process && !ctx_.main_executable.empty())
          ? Result<ObjectRef>(ObjectRef{ctx_.main_executable, ctx_.main_executable, false})
          : resolve_object(target, ctx_.process);
  if (!ref) return tl::unexpected(ref.error());
  auto obj = open(*ref);
  if (obj) by_target_.emplace(target, *obj);
  return obj;
}

std::vector<const PlannedObject*> ObjectCache::not_mapped() const {
  std::vector<const PlannedObject*> out;
  for (const auto& [path, obj] : by_path_)
    if (obj->ref.not_mapped) out.push_back(obj.get());
  return out;
}

Result<PlannedObject*> ObjectCache::open_as(const std::string& target, const ObjectRef& ref) {
  auto obj = open(ref);
  if (obj) by_target_.insert_or_assign(target, *obj);
  return obj;
}

Result<PlannedObject*> ObjectCache::open(const ObjectRef& ref) {
  if (auto it = by_path_.find(ref.open_path); it != by_path_.end()) return it->second.get();
  auto stored = store_->open(ref.open_path, ref.display_path);
  if (!stored) return tl::unexpected(stored.error());
  const ElfFile& elf = (*stored)->elf();
  auto go = read_go_buildinfo(elf);
  if (!go) return tl::unexpected(go.error());
  bool is_go = go->has_value() || elf.section(".gopclntab").has_value();
  auto obj =
      std::make_unique<PlannedObject>(PlannedObject{.ref = ref, .stored = *stored, .elf = elf});
  obj->is_go = is_go;
  obj->go = std::move(*go);
  auto* raw = obj.get();
  by_path_.emplace(ref.open_path, std::move(obj));
  return raw;
}

GoFieldLookup go_field_lookup(ObjectCache& cache, std::string target) {
  return [&cache, target = std::move(target)](std::string_view type,
                                              std::string_view field) -> Result<GoField> {
    auto obj = cache.get(target);
    if (!obj) return tl::unexpected(obj.error());
    auto types = go_types_of(**obj);
    if (!types) return tl::unexpected(types.error());
    return (*types)->field(type, field);
  };
}

std::optional<uint64_t> symbol_address(PlannedObject& o, const std::string& name) {
  if (!o.symbol_addresses) {
    o.symbol_addresses.emplace();
    if (auto syms = o.elf.symbols())
      for (const auto& s : *syms)
        if (s.defined) o.symbol_addresses->emplace(s.name, s.addr);
  }
  auto it = o.symbol_addresses->find(name);
  if (it == o.symbol_addresses->end()) return std::nullopt;
  return it->second;
}

Result<const SymbolTable*> ObjectCache::symbols(PlannedObject& o) {
  return o.stored->symbols();
}

Result<const std::vector<UsdtProbe>*> ObjectCache::usdt(PlannedObject& o) {
  if (!o.usdt) {
    auto p = read_usdt_probes(o.elf);
    if (!p) return tl::unexpected(p.error());
    o.usdt = std::move(*p);
  }
  return &*o.usdt;
}

Result<DwarfTypes*> dwarf_of(PlannedObject& o) {
  if (!o.dwarf) {
    auto opened = DwarfTypes::open(o.elf);
    if (!opened) return tl::unexpected(opened.error());
    o.dwarf = std::move(*opened);
  }
  return o.dwarf.get();
}

Result<GoTypes*> go_types_of(PlannedObject& o) {
  if (!o.go_types) {
    auto dwarf = dwarf_of(o);
    if (!dwarf) return tl::unexpected(dwarf.error());
    auto table = o.stored->go_table();
    if (!table) return tl::unexpected(table.error());
    auto types = GoTypes::open(o.elf, *dwarf, o.go ? &*o.go : nullptr, *table);
    if (!types) return tl::unexpected(types.error());
    o.go_types = std::move(*types);
  }
  return o.go_types.get();
}

Result<std::vector<MatchedSite>> match_sites(ObjectCache& cache, const ProbeSpec& spec) {
  auto obj = cache.get(spec.target);
  if (!obj) return fail("probe spec column 3: {}", obj.error().message);
  return spec.kind == ProbeKind::Usdt ? match_usdt(cache, **obj, spec)
                                      : match_functions(cache, **obj, spec);
}

Result<std::vector<MatchedSite>> match_patterns(ObjectCache& cache,
                                                std::span<const ProbeSpec> patterns) {
  std::vector<MatchedSite> out;
  std::set<std::pair<std::string, uint64_t>> seen;
  for (const auto& p : patterns) {
    auto sites = match_sites(cache, p);
    if (!sites) return tl::unexpected(sites.error());
    for (auto& m : *sites)
      if (seen.emplace(m.object->ref.open_path, m.offset).second) out.push_back(std::move(m));
  }
  return out;
}

}  // namespace uscope
