#include "sink/list_output.h"

#include <fmt/core.h>

#include <algorithm>
#include <nlohmann/json.hpp>

namespace uscope {

namespace {

const char* binding_name(SymbolBinding b) {
  switch (b) {
    case SymbolBinding::Local:
      return "local";
    case SymbolBinding::Global:
      return "global";
    case SymbolBinding::Weak:
      return "weak";
    case SymbolBinding::Unique:
      return "unique";
  }
  return "?";
}

const char* source_name(SymbolSource s) {
  switch (s) {
    case SymbolSource::Symtab:
      return "symtab";
    case SymbolSource::Dynsym:
      return "dynsym";
    case SymbolSource::MiniDebugInfo:
      return "minidebuginfo";
    case SymbolSource::DebugFile:
      return "debugfile";
    case SymbolSource::Gopclntab:
      return "gopclntab";
  }
  return "?";
}

const char* arg_kind_name(UsdtArg::Kind k) {
  switch (k) {
    case UsdtArg::Kind::Constant:
      return "constant";
    case UsdtArg::Kind::Register:
      return "register";
    case UsdtArg::Kind::Memory:
      return "memory";
    case UsdtArg::Kind::Indexed:
      return "indexed";
    case UsdtArg::Kind::Absolute:
      return "absolute";
  }
  return "?";
}

std::string signed_hex(int64_t v) {
  if (v == 0) return "";
  return v < 0 ? fmt::format("-{:#x}", -static_cast<uint64_t>(v)) : fmt::format("+{:#x}", v);
}

// "emulated", "single-stepped", or "+0x4 emulated" when an entry probe moves into the prologue.
std::string describe_entry_site(const SitePlacement& p) {
  if (p.moved == 0) return site_cost_name(p.cost.cost);
  return fmt::format("+{:#x} {}", p.moved, site_cost_name(p.cost.cost));
}

nlohmann::json site_json(const SiteClass& c) {
  return {{"cost", site_cost_name(c.cost)}, {"insn", c.insn}};
}

// The planned site as trace attaches it: where (file offset, link-time address, bytes moved past
// the function start), its class, and why it moved or not.
nlohmann::json planned_site_json(const SitePlacement& p) {
  nlohmann::json j = site_json(p.cost);
  j["offset"] = p.moved;
  j["file_offset"] = p.offset;
  j["address"] = p.address;
  j["moved_from"] = p.address - p.moved;
  j["sp_delta"] = p.sp_delta;
  j["note"] = p.note;
  return j;
}

}  // namespace

std::string object_kind_name(bool shared_library, bool pie) {
  if (shared_library) return "shared library";
  return pie ? "PIE executable" : "executable";
}

std::string describe_usdt_arg(const UsdtArg& a) {
  std::string type = fmt::format("{}{}", a.is_signed ? 's' : 'u', a.size * 8);
  switch (a.kind) {
    case UsdtArg::Kind::Constant:
      return fmt::format("{} ${}", type, a.constant);
    case UsdtArg::Kind::Register:
      return fmt::format("{} {}", type, a.base_reg);
    case UsdtArg::Kind::Memory:
      return fmt::format("{} *({}{})", type, a.base_reg, signed_hex(a.offset));
    case UsdtArg::Kind::Indexed:
      return fmt::format("{} *({}+{}*{}{})", type, a.base_reg.empty() ? "0" : a.base_reg,
                         a.index_reg, a.scale, signed_hex(a.offset));
    case UsdtArg::Kind::Absolute:
      return fmt::format("{} *({}{}{}{})", type, a.symbol, a.symbol.empty() ? "" : "@",
                         a.base_reg.empty() ? "abs" : a.base_reg, signed_hex(a.offset));
  }
  return type;
}

nlohmann::json usdt_arg_json(const UsdtArg& a) {
  nlohmann::json j = {
      {"spec", a.text}, {"size", a.size}, {"signed", a.is_signed}, {"type", arg_kind_name(a.kind)}};
  if (a.kind == UsdtArg::Kind::Constant) j["constant"] = a.constant;
  if (!a.base_reg.empty()) j["base"] = a.base_reg;
  if (!a.index_reg.empty()) {
    j["index"] = a.index_reg;
    j["scale"] = a.scale;
  }
  if (a.kind != UsdtArg::Kind::Constant && a.kind != UsdtArg::Kind::Register)
    j["offset"] = a.offset;
  if (!a.symbol.empty()) j["symbol"] = a.symbol;
  return j;
}

void ListPrinter::print(const ListedObject& o) {
  if (json_)
    print_json(o);
  else
    print_text(o);
}

void ListPrinter::print_json(const ListedObject& o) {
  for (size_t i = 0; i < o.inlined.size(); ++i) {
    const MatchedSite& m = o.inlined[i];
    nlohmann::json j = {{"kind", "inlined"},    {"object", o.path},
                        {"name", m.label},      {"inlined_into", m.inlined_in},
                        {"address", m.address}, {"offset", m.offset}};
    if (!m.inlined_call.empty()) j["call"] = m.inlined_call;
    if (i < o.inlined_sites.size()) j["site"] = site_json(o.inlined_sites[i].cost);
    fmt::print(out_, "{}\n", j.dump());
  }
  for (size_t i = 0; i < o.functions.size(); ++i) {
    const FunctionSymbol* f = o.functions[i];
    nlohmann::json j = {{"kind", "function"},
                        {"object", o.path},
                        {"name", f->demangled()},
                        {"mangled", f->name},
                        {"address", f->addr},
                        {"offset", f->offset},
                        {"size", f->size},
                        {"binding", binding_name(f->binding)},
                        {"source", source_name(f->source)},
                        {"ifunc", f->ifunc}};
    if (i < o.entry_sites.size()) {
      const auto& p = o.entry_sites[i];
      j["site"] = site_json(p.original);
      j["entry_site"] = planned_site_json(p);
    }
    fmt::print(out_, "{}\n", j.dump());
  }
  for (size_t pi = 0; pi < o.probes.size(); ++pi) {
    const auto& p = *o.probes[pi];
    nlohmann::json locs = nlohmann::json::array();
    for (size_t li = 0; li < p.locations.size(); ++li) {
      const auto& l = p.locations[li];
      nlohmann::json args = nlohmann::json::array();
      for (const auto& a : l.args) args.push_back(usdt_arg_json(a));
      nlohmann::json lj = {
          {"address", l.addr},
          {"offset", l.offset},
          {"semaphore", l.semaphore ? nlohmann::json(l.semaphore) : nullptr},
          {"semaphore_offset", l.semaphore ? nlohmann::json(l.semaphore_offset) : nullptr},
          {"args_spec", l.args_text},
          {"args", args}};
      if (l.args_error) lj["args_error"] = l.args_error->message;
      if (pi < o.usdt_sites.size() && li < o.usdt_sites[pi].size())
        lj["site"] = site_json(o.usdt_sites[pi][li].cost);
      locs.push_back(std::move(lj));
    }
    nlohmann::json j = {{"kind", "usdt"},
                        {"object", o.path},
                        {"provider", p.provider},
                        {"name", p.name},
                        {"locations", locs}};
    fmt::print(out_, "{}\n", j.dump());
  }
}

void ListPrinter::print_text(const ListedObject& o) {
  if (o.functions.empty() && o.probes.empty() && o.inlined.empty()) return;
  if (!first_object_) fmt::print(out_, "\n");
  first_object_ = false;
  fmt::print(out_, "{} ({}{}{})\n", o.path, object_kind_name(o.shared_library, o.pie),
             o.build_id ? ", build-id " : "", o.build_id.value_or(""));
  if (!o.functions.empty()) {
    fmt::print(out_, "  {:<18} {:>10} {:>8} {:<6}  {:<20}  {}\n", "ADDRESS", "OFFSET", "SIZE",
               "BIND", "ENTRY PROBE SITE", "FUNCTION");
    for (size_t i = 0; i < o.functions.size(); ++i) {
      const FunctionSymbol* f = o.functions[i];
      std::string site = i < o.entry_sites.size() ? describe_entry_site(o.entry_sites[i]) : "-";
      fmt::print(out_, "  {:#018x} {:>#10x} {:>8} {:<6}  {:<20}  {}{}\n", f->addr, f->offset,
                 f->size, binding_name(f->binding), site, f->demangled(),
                 f->ifunc ? " [ifunc resolver]" : "");
    }
  }
  if (!o.inlined.empty()) {
    fmt::print(out_, "  {:<18} {:>10} {:>8} {:<6}  {:<20}  {}\n", "ADDRESS", "OFFSET", "", "",
               "INLINED COPY SITE", "FUNCTION");
    for (size_t i = 0; i < o.inlined.size(); ++i) {
      const MatchedSite& m = o.inlined[i];
      std::string site =
          i < o.inlined_sites.size() ? site_cost_name(o.inlined_sites[i].cost.cost) : "-";
      fmt::print(out_, "  {:#018x} {:>#10x} {:>8} {:<6}  {:<20}  {} (inlined into {}{}{})\n",
                 m.address, m.offset, "", "", site, m.label, m.inlined_in,
                 m.inlined_call.empty() ? "" : " at ", m.inlined_call);
    }
  }
  if (!o.probes.empty()) {
    size_t name_w = 10;
    for (const auto* p : o.probes)
      name_w = std::max(name_w, p->provider.size() + p->name.size() + 1);
    fmt::print(out_, "  {:<{}}  {:<18} {:>10}  {:<18}  {:<14}  {}\n", "USDT PROBE", name_w,
               "ADDRESS", "OFFSET", "SEMAPHORE", "SITE", "ARGS");
    for (size_t pi = 0; pi < o.probes.size(); ++pi) {
      const auto& p = *o.probes[pi];
      std::string name = p.provider + ":" + p.name;
      for (size_t i = 0; i < p.locations.size(); ++i) {
        const auto& l = p.locations[i];
        std::string sem = l.semaphore ? fmt::format("{:#x}", l.semaphore) : "-";
        std::string site = pi < o.usdt_sites.size() && i < o.usdt_sites[pi].size()
                               ? site_cost_name(o.usdt_sites[pi][i].cost.cost)
                               : "-";
        fmt::print(out_, "  {:<{}}  {:#018x} {:>#10x}  {:<18}  {:<14}  {}\n", i == 0 ? name : "",
                   name_w, l.addr, l.offset, sem, site, l.args_text);
        std::string parsed;
        for (size_t a = 0; a < l.args.size(); ++a)
          parsed += fmt::format("{}arg{} = {}", a ? ", " : "", a + 1, describe_usdt_arg(l.args[a]));
        if (l.args_error) parsed = "unparsed: " + l.args_error->message;
        if (!parsed.empty()) fmt::print(out_, "  {:<{}}  ({})\n", "", name_w, parsed);
      }
    }
  }
}

}  // namespace uscope
