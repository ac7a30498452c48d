#include "symbolize/frame_names.h"

#include <fmt/format.h>

#include "symbolize/symbol_text.h"

namespace uscope {

std::string frame_name(const Frame& frame) {
  return frame.miss == FrameMiss::None && !frame.function.empty() ? frame.function
                                                                  : unnamed_frame_text(frame);
}

std::string unnamed_frame_text(const Frame& frame) {
  // One vocabulary with trace's %U and -U (symbol_text.h): why, from to_string(FrameMiss), and in
  // which object, by its file name ("[unknown: no symbol covers the address in redis-server]").
  const std::string base = module_name(frame);
  const char* why = frame.miss == FrameMiss::None ? "no name" : to_string(frame.miss);
  switch (frame.miss) {
    case FrameMiss::Unmapped:
    case FrameMiss::ProcessGone:
    case FrameMiss::NoAccess:
    case FrameMiss::NoPerfMap:  // "JIT code without a perf map" says where
      return fmt::format("[unknown: {}]", why);
    default:
      break;
  }
  return base.empty() ? fmt::format("[unknown: {}]", why)
                      : fmt::format("[unknown: {} in {}]", why, base);
}

std::string unnamed_kernel_frame_text(FrameMiss miss, bool symbols_loaded) {
  if (!symbols_loaded) return "[unknown: kernel symbols not read]";
  // An empty table: kptr_restrict shows readers without CAP_SYSLOG zeros, which are dropped.
  if (miss == FrameMiss::NoSymbols) return "[unknown: kernel addresses hidden]";
  return "[unknown: no symbol covers the address in kernel]";
}

}  // namespace uscope
