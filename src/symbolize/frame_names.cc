#include "symbolize/frame_names.h"

#include <fmt/format.h>

namespace uscope {

std::string frame_name(const Frame& frame) {
  return frame.miss == FrameMiss::None && !frame.function.empty() ? frame.function
                                                                  : unnamed_frame_text(frame);
}

std::string unnamed_frame_text(const Frame& frame) {
  const std::string& object = frame.object;
  const bool file = !object.empty() && object.front() == '/';
  const std::string base = file ? object.substr(object.rfind('/') + 1) : object;
  switch (frame.miss) {
    case FrameMiss::NoSymbols:
      // Memory no file backs ([vdso], [anon] JIT code without a perf map) has no symbol table to
      // lack; a file does.
      if (!file) return fmt::format("[unknown in {}]", base.empty() ? "[anon]" : base);
      return fmt::format("[unknown: {} has no symbols]", base);
    case FrameMiss::UnknownAddress:
      return fmt::format("[unknown in {}]", base.empty() ? "?" : base);
    case FrameMiss::Unreadable:
      return fmt::format("[unknown: {} unreadable]", base.empty() ? "object" : base);
    case FrameMiss::NoPerfMap:
      return "[unknown: JIT code, no perf map]";
    case FrameMiss::Unmapped:
    case FrameMiss::ProcessGone:
    case FrameMiss::NoAccess:
      return fmt::format("[unknown: {}]", to_string(frame.miss));
    case FrameMiss::None:
      break;
  }
  return base.empty() ? "[unknown]" : fmt::format("[unknown in {}]", base);
}

std::string unnamed_kernel_frame_text(FrameMiss miss, bool symbols_loaded) {
  if (!symbols_loaded) return "[unknown: kernel symbols not read]";
  // An empty table: kptr_restrict shows readers without CAP_SYSLOG zeros, which are dropped.
  if (miss == FrameMiss::NoSymbols) return "[unknown: kernel addresses hidden]";
  return "[unknown in kernel]";
}

}  // namespace uscope
