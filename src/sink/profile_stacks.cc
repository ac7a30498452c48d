#include "sink/profile_stacks.h"

#include <fmt/core.h>

#include <algorithm>

namespace uscope {

std::vector<StackFrame> root_first_frames(const Profile& profile, const ProfileSample& sample) {
  std::vector<StackFrame> frames;
  frames.reserve(sample.locations.size());
  for (auto it = sample.locations.rbegin(); it != sample.locations.rend(); ++it) {
    if (*it >= profile.locations.size()) continue;
    const ProfileLocation& loc = profile.locations[*it];
    // lines are innermost first: the function holding the code is last, and is the caller.
    for (size_t i = loc.lines.size(); i-- > 0;) {
      const ProfileLine& line = loc.lines[i];
      StackFrame f;
      f.function = line.function;
      f.location = *it;
      f.line = line.line;
      f.label = profile.frame_label(line, loc.kind, i + 1 < loc.lines.size());
      bool unknown = line.function >= profile.functions.size() ||
                     is_unknown_function(profile.functions[line.function]);
      if (unknown)
        f.cls = FrameClass::Unknown;
      else if (loc.kind == FrameKind::Kernel)
        f.cls = FrameClass::Kernel;
      else if (loc.kind == FrameKind::Jit || loc.kind == FrameKind::JitC1)
        f.cls = FrameClass::Jit;
      else
        f.cls = i + 1 < loc.lines.size() ? FrameClass::Inlined : FrameClass::User;
      frames.push_back(std::move(f));
    }
  }
  return frames;
}

std::string process_label(const ProfileSample& sample) {
  std::string comm = sample.comm.empty() ? fmt::format("[pid {}]", sample.pid) : sample.comm;
  if (sample.tid == 0) return comm;
  return fmt::format("{}-{}/{}", comm, sample.pid, sample.tid);
}

bool is_unknown_function(const ProfileFunction& function) {
  return function.name.empty() || function.name.front() == '[';
}

std::string module_of(const Profile& profile, const ProfileLocation& location) {
  if (location.mapping == 0 || location.mapping > profile.mappings.size()) return "[unknown]";
  const std::string& file = profile.mappings[location.mapping - 1].file;
  auto slash = file.rfind('/');
  return slash == std::string::npos ? file : file.substr(slash + 1);
}

std::string folded_safe(std::string label) {
  std::replace(label.begin(), label.end(), ';', ':');
  std::replace(label.begin(), label.end(), '\n', ' ');
  return label;
}

}  // namespace uscope
