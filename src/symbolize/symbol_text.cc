#include "symbolize/symbol_text.h"

#include <fmt/format.h>

namespace uscope {

namespace {

// " [libc.so.6]"; pseudo names stay as they are (" [vdso]").
std::string module_text(const Frame& frame) {
  if (frame.object.empty()) return "";
  if (frame.object.front() == '[') return " " + frame.object;
  return fmt::format(" [{}]", module_name(frame));
}

}  // namespace

std::string module_name(const Frame& frame) {
  auto base = [](const std::string& path) {
    size_t slash = path.rfind('/');
    return slash == std::string::npos ? path : path.substr(slash + 1);
  };
  if (frame.started_as.empty()) return base(frame.object);
  return fmt::format("{} ({})", base(frame.started_as), base(frame.object));
}

const char* unknown_reason(const Frame& frame) {
  if (frame.miss != FrameMiss::None) return to_string(frame.miss);
  return frame.function.empty() ? "no name" : nullptr;
}

std::string symbol_text(const Frame& frame) {
  if (const char* why = unknown_reason(frame))
    return fmt::format("[unknown: {}]{}", why, module_text(frame));
  // No offset: a code object or a JavaScript function, at a line of its file.
  if (frame.origin == SymbolOrigin::Python || frame.origin == SymbolOrigin::V8)
    return frame.line > 0
               ? fmt::format("{} ({}:{}){}", frame.function, frame.file, frame.line,
                             module_text(frame))
               : fmt::format("{} ({}){}", frame.function, frame.file, module_text(frame));
  return fmt::format("{}+{:#x}{}", frame.function, frame.function_offset, module_text(frame));
}

}  // namespace uscope
