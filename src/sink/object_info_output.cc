#include "sink/object_info_output.h"

#include "sink/profile_writers.h"

#include <fmt/core.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "sink/list_output.h"
#include "sink/trace_output.h"
#include "util/names.h"

namespace uscope {
namespace {

constexpr size_t kLabelWidth = 15;

// A line without the padding a short last column leaves.
void add_trimmed(std::string& out, std::string line) {
  while (!line.empty() && line.back() == ' ') line.pop_back();
  out += line;
  out += '\n';
}

void add_line(std::string& out, std::string_view label, std::string_view text) {
  add_trimmed(out, fmt::format("  {:<{}} {}", label, kLabelWidth, text));
}

// Text from the binary (module paths, versions, sums): its bytes are untrusted.
std::string shown(std::string_view s) {
  return printable_bytes(s);
}

std::string symbols_text(const ObjectInfo& o) {
  std::vector<std::string> parts;
  parts.push_back(o.symtab_functions ? fmt::format(".symtab: {} functions", *o.symtab_functions)
                                     : "no .symtab");
  parts.push_back(o.dynsym_functions ? fmt::format(".dynsym: {} functions", *o.dynsym_functions)
                                     : "no .dynsym");
  if (o.minidebuginfo) parts.push_back("MiniDebugInfo (.gnu_debugdata)");
  return join(parts, "; ");
}

std::string dwarf_text(const ObjectInfo& o) {
  std::string text;
  if (o.dwarf.section.empty()) {
    text = "none";
    // What a Go user loses, and how they lost it.
    if (o.go) text += " (Go parameters by name need it: built with -ldflags=-w?)";
  } else {
    text = o.dwarf.section;
    if (!o.dwarf.compression.empty()) text += fmt::format(" (compressed: {})", o.dwarf.compression);
  }
  if (!o.debuglink.empty()) text += fmt::format("; debug link to {}", shown(o.debuglink));
  return text;
}

std::string go_version_text(const GoFacts& go) {
  if (!go.build_error.empty()) return "yes, but .go.buildinfo is unreadable: " + go.build_error;
  if (!go.build) return "yes, version unknown (no .go.buildinfo section)";
  const GoBuildInfo& b = *go.build;
  std::string abi;
  if (b.major == 0) {
    abi = "ABI unknown (no release number in the version)";
  } else if (b.register_abi()) {
    abi = "register ABI (arguments in registers)";
  } else {
    abi = "stack ABI (arguments on the stack: Go before 1.17)";
  }
  return fmt::format("{}, {}", shown(b.version), abi);
}

std::string module_text(const GoModuleVersion& m) {
  std::string text = shown(m.path);
  if (!m.version.empty()) text += " " + shown(m.version);
  if (!m.sum.empty()) text += " " + shown(m.sum);
  return text;
}

void add_go_lines(std::string& out, const GoFacts& go) {
  add_line(out, "Go", go_version_text(go));
  if (go.pclntab_functions) {
    add_line(out, "functions", fmt::format("{} in .gopclntab", *go.pclntab_functions));
  } else {
    add_line(out, "functions",
             go.pclntab_error.empty() ? "no .gopclntab"
                                      : ".gopclntab is unreadable: " + go.pclntab_error);
  }
  if (!go.build_id.empty()) add_line(out, "Go build ID", go.build_id);
  if (!go.build) return;
  const GoModInfo& m = go.modules;
  add_line(out, "main package", m.path.empty() ? "unknown" : shown(m.path));
  add_line(out, "main module", m.main ? module_text(*m.main) : "none (not built in module mode)");
  if (m.main && m.main->replace) add_line(out, "", "=> " + module_text(*m.main->replace));
  add_line(out, "dependencies", m.deps.empty() ? "none" : fmt::to_string(m.deps.size()));
  size_t path_w = 0, version_w = 0;
  for (const auto& d : m.deps) {
    path_w = std::max(path_w, shown(d.path).size());
    version_w = std::max(version_w, shown(d.version).size());
  }
  for (const auto& d : m.deps) {
    // A replaced module's own sum is not recorded: the replacement's is what was built.
    std::string tail = d.replace ? "=> " + module_text(*d.replace) : shown(d.sum);
    add_trimmed(out, fmt::format("    {:<{}}  {:<{}}  {}", shown(d.path), path_w, shown(d.version),
                                 version_w, tail));
  }
  if (!m.settings.empty()) {
    add_line(out, "build settings", "");
    for (const auto& s : m.settings) {
      out +=
          fmt::format("    {}={}\n", go_setting_text(s.key, true), go_setting_text(s.value, false));
    }
  }
  for (const auto& p : m.problems) add_line(out, "module info", "skipped " + shown(p));
}

nlohmann::json module_json(const GoModuleVersion& m) {
  return {{"path", m.path}, {"version", m.version}, {"sum", m.sum}};
}

nlohmann::json dep_json(const GoModule& m) {
  nlohmann::json j = module_json(m);
  j["replace"] = m.replace ? module_json(*m.replace) : nullptr;
  return j;
}

nlohmann::json go_json(const GoFacts& go) {
  nlohmann::json j;
  j["version"] = go.build ? nlohmann::json(go.build->version) : nullptr;
  j["major"] = go.build ? go.build->major : 0;
  j["minor"] = go.build ? go.build->minor : 0;
  j["register_abi"] = go.build ? nlohmann::json(go.build->register_abi()) : nullptr;
  j["buildinfo_error"] = go.build_error.empty() ? nullptr : nlohmann::json(go.build_error);
  const GoModInfo& m = go.modules;
  j["path"] = go.build ? nlohmann::json(m.path) : nullptr;
  j["main"] = m.main ? dep_json(*m.main) : nullptr;
  nlohmann::json deps = nlohmann::json::array();
  for (const auto& d : m.deps) deps.push_back(dep_json(d));
  j["deps"] = std::move(deps);
  nlohmann::json settings = nlohmann::json::array();
  for (const auto& s : m.settings) settings.push_back({{"key", s.key}, {"value", s.value}});
  j["settings"] = std::move(settings);
  j["modinfo_problems"] = m.problems;
  j["gopclntab_functions"] = go.pclntab_functions ? nlohmann::json(*go.pclntab_functions) : nullptr;
  j["build_id"] = go.build_id.empty() ? nullptr : nlohmann::json(go.build_id);
  j["gopclntab_error"] = go.pclntab_error.empty() ? nullptr : nlohmann::json(go.pclntab_error);
  return j;
}

template <class T>
nlohmann::json or_null(const std::optional<T>& v) {
  return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
}

}  // namespace

std::string unwind_text(const UnwindFacts& u) {
  if (!u.error.empty()) return "none: " + u.error;
  if (u.source.empty()) return "none: no CFI (stacks are walked by frame pointer)";
  std::string text = fmt::format("{}: {} rows, {} rules from {} FDEs", u.source, grouped(u.rows),
                                 grouped(u.rules), grouped(u.fdes));
  if (u.unsupported) text += fmt::format(", {} rows not evaluated", grouped(u.unsupported));
  if (u.signal_frames)
    text += fmt::format(", {} signal frame{}", u.signal_frames, u.signal_frames == 1 ? "" : "s");
  text += fmt::format("; {} in {:.1f} ms", u.from_cache ? "read from the cache" : "built",
                      u.milliseconds);
  if (!u.cache_file.empty()) text += fmt::format(" ({})", u.cache_file);
  return text;
}

std::string object_info_text(const ObjectInfo& o) {
  std::string out = fmt::format("{} ({}, {}, {}-bit, {} linked{}{})\n", o.path,
                                object_kind_name(o.shared_library, o.pie), o.machine,
                                o.is_64bit ? 64 : 32, o.dynamic ? "dynamically" : "statically",
                                o.build_id ? ", build-id " : "", o.build_id.value_or(""));
  add_line(out, "symbols", symbols_text(o));
  add_line(out, "DWARF", dwarf_text(o));
  if (o.go) {
    add_go_lines(out, *o.go);
  } else {
    add_line(out, "Go", "no: not a Go program (no .go.buildinfo or .gopclntab section)");
  }
  if (o.unwind) add_line(out, "unwind", unwind_text(*o.unwind));
  return out;
}

nlohmann::json object_info_json(const ObjectInfo& o) {
  nlohmann::json j = {{"kind", "info"},
                      {"object", o.path},
                      {"type", object_kind_name(o.shared_library, o.pie)},
                      {"machine", o.machine},
                      {"bits", o.is_64bit ? 64 : 32},
                      {"pie", o.pie},
                      {"shared_library", o.shared_library},
                      {"dynamic", o.dynamic},
                      {"build_id", or_null(o.build_id)},
                      {"symtab_functions", or_null(o.symtab_functions)},
                      {"dynsym_functions", or_null(o.dynsym_functions)},
                      {"minidebuginfo", o.minidebuginfo},
                      {"debuglink", o.debuglink.empty() ? nullptr : nlohmann::json(o.debuglink)}};
  j["dwarf"] = o.dwarf.section.empty()
                   ? nlohmann::json(nullptr)
                   : nlohmann::json{{"section", o.dwarf.section},
                                    {"compression", o.dwarf.compression.empty()
                                                        ? nullptr
                                                        : nlohmann::json(o.dwarf.compression)}};
  j["go"] = o.go ? go_json(*o.go) : nullptr;
  if (o.unwind) {
    const UnwindFacts& u = *o.unwind;
    j["unwind"] = {{"source", u.source},
                   {"rows", u.rows},
                   {"rules", u.rules},
                   {"fdes", u.fdes},
                   {"unsupported", u.unsupported},
                   {"signal_frames", u.signal_frames},
                   {"from_cache", u.from_cache},
                   {"milliseconds", u.milliseconds},
                   {"cache_file", u.cache_file.empty() ? nullptr : nlohmann::json(u.cache_file)},
                   {"error", u.error.empty() ? nullptr : nlohmann::json(u.error)}};
  }
  return j;
}

void print_object_info(const ObjectInfo& info, OutputFormat format, std::FILE* out) {
  if (format == OutputFormat::Json) {
    // Strings from the binary may be any bytes: invalid UTF-8 becomes U+FFFD, never an exception.
    fmt::print(
        out, "{}\n",
        object_info_json(info).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
  } else {
    fmt::print(out, "{}", object_info_text(info));
  }
}

}  // namespace uscope
