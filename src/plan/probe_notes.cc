#include "plan/probe_notes.h"

#include <fmt/format.h>

#include <set>

#include "util/names.h"

namespace uscope {

namespace {

// HotSpot leaves these probes off unless ExtendedDTraceProbes, or the flag of their group, is on
// (ciEnv::cache_dtrace_flags; each slows every call, allocation or monitor operation).
constexpr std::string_view kMethodFlags[] = {"-XX:+ExtendedDTraceProbes",
                                             "-XX:+DTraceMethodProbes"};
constexpr std::string_view kAllocFlags[] = {"-XX:+ExtendedDTraceProbes", "-XX:+DTraceAllocProbes"};
constexpr std::string_view kMonitorFlags[] = {"-XX:+ExtendedDTraceProbes",
                                              "-XX:+DTraceMonitorProbes"};
constexpr std::string_view kJvmOff =
    "fires only in a JVM started with {flags} (HotSpot leaves it off otherwise)";
// Measured on Debian's python3.11 (3.11.2): of a script calling f 100 times from Python code and
// 50 times through map(), function__entry fired for none, nor for its generators' frames, only
// for a few frames of the interpreter's start; function__return fired for all 150.
constexpr std::string_view kPython311Entry =
    "fires for almost no call in Python 3.11 (none of a program's own calls, from Python code or "
    "from C): count or time calls with python:function__return, which fires for every one";

constexpr ProbeNote kNotes[] = {
    {"hotspot", "method__entry", "", kMethodFlags, kJvmOff},
    {"hotspot", "method__return", "", kMethodFlags, kJvmOff},
    {"hotspot", "object__alloc", "", kAllocFlags, kJvmOff},
    {"hotspot", "monitor__contended__enter", "", kMonitorFlags, kJvmOff},
    {"hotspot", "monitor__contended__entered", "", kMonitorFlags, kJvmOff},
    {"hotspot", "monitor__contended__exit", "", kMonitorFlags, kJvmOff},
    {"hotspot", "monitor__wait", "", kMonitorFlags, kJvmOff},
    {"hotspot", "monitor__waited", "", kMonitorFlags, kJvmOff},
    {"hotspot", "monitor__notify", "", kMonitorFlags, kJvmOff},
    {"hotspot", "monitor__notifyAll", "", kMonitorFlags, kJvmOff},
    {"python", "function__entry", "python3.11", {}, kPython311Entry},
};

std::string flags_text(std::span<const std::string_view> flags) {
  std::string out;
  for (size_t i = 0; i < flags.size(); ++i)
    out += fmt::format("{}{}", i == 0 ? "" : i + 1 == flags.size() ? " or " : ", ", flags[i]);
  return out;
}

// A USDT site's label is "provider:probe"; a C++ function's ("hotspot::f") never matches.
const ProbeNote* note_of(const PlannedSite& s) {
  const size_t colon = s.label.find(':');
  if (colon == std::string::npos) return nullptr;
  const std::string_view provider = std::string_view(s.label).substr(0, colon);
  const std::string_view probe = std::string_view(s.label).substr(colon + 1);
  for (const auto& n : kNotes)
    if (n.provider == provider && n.probe == probe && s.object.find(n.object) != std::string::npos)
      return &n;
  return nullptr;
}

}  // namespace

std::span<const ProbeNote> known_probe_notes() {
  return kNotes;
}

std::vector<std::string> probe_notes(std::span<const PlannedSite> sites,
                                     const std::optional<std::string>& command_line,
                                     std::string_view who) {
  std::vector<std::string> out;
  std::set<std::string> said;
  for (const auto& s : sites) {
    const ProbeNote* n = note_of(s);
    if (!n || !said.insert(s.label).second) continue;
    std::string line = fmt::format("{} ", s.label);
    if (n->flags.empty()) {
      line += n->note;
    } else {
      bool shown = false;
      if (command_line)
        for (auto f : n->flags) shown |= command_line->find(f) != std::string::npos;
      if (shown) continue;
      line += fmt::format(fmt::runtime(n->note), fmt::arg("flags", flags_text(n->flags)));
      if (command_line)
        line += fmt::format("; {} {}", who,
                            n->flags.size() == 1   ? "does not show it"
                            : n->flags.size() == 2 ? "shows neither"
                                                   : "shows none of them");
    }
    out.push_back(std::move(line));
  }
  return out;
}

}  // namespace uscope
