#include "model/profile.h"

#include <unordered_set>

#include <fmt/format.h>

namespace uscope {

uint64_t Profile::total_samples() const {
  uint64_t n = 0;
  for (const auto& s : samples) n += s.count;
  return n;
}

size_t Profile::process_count() const {
  std::unordered_set<pid_t> pids;
  for (const auto& s : samples) pids.insert(s.pid);
  return pids.size();
}

uint64_t Profile::complete_samples() const {
  uint64_t n = 0;
  for (const auto& s : samples)
    if (s.complete) n += s.count;
  return n;
}

std::string Profile::frame_label(const ProfileLine& line, FrameKind kind, bool inlined) const {
  std::string label = line.function < functions.size() ? functions[line.function].name : "[?]";
  switch (kind) {
    case FrameKind::User:
      break;
    case FrameKind::Kernel:
      label += "_[k]";
      break;
    case FrameKind::Jit:
    case FrameKind::JitC1:
    case FrameKind::Interpreted:
      // As py-spy labels them: "outer.<locals>.inner (app.py:12)"; JIT code that knows its
      // source (a JavaScript function) too: "leaf (/srv/app.js:3)_[j]".
      if (line.function < functions.size() && !functions[line.function].file.empty())
        label += line.line > 0 ? fmt::format(" ({}:{})", functions[line.function].file, line.line)
                               : fmt::format(" ({})", functions[line.function].file);
      // async-profiler's suffixes for Java: "_[i]" inlined into JIT code, "_[1]" C1's code.
      if (kind == FrameKind::Jit) label += inlined ? "_[i]" : "_[j]";
      if (kind == FrameKind::JitC1) label += inlined ? "_[i]" : "_[1]";
      break;
  }
  return label;
}

}  // namespace uscope
