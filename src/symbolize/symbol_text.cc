#include "symbolize/symbol_text.h"

#include <fmt/format.h>

namespace uscope {

namespace {

// "/usr/lib/x86_64-linux-gnu/libc.so.6" -> "[libc.so.6]"; pseudo names ("[vdso]") stay as they
// are.
std::string module_text(const std::string& object) {
  if (object.empty()) return "";
  if (object.front() == '[') return " " + object;
  size_t slash = object.rfind('/');
  return fmt::format(" [{}]", slash == std::string::npos ? object : object.substr(slash + 1));
}

}  // namespace

const char* unknown_reason(const Frame& frame) {
  if (frame.miss != FrameMiss::None) return to_string(frame.miss);
  return frame.function.empty() ? "no name" : nullptr;
}

std::string symbol_text(const Frame& frame) {
  if (const char* why = unknown_reason(frame))
    return fmt::format("[unknown: {}]{}", why, module_text(frame.object));
  return fmt::format("{}+{:#x}{}", frame.function, frame.function_offset,
                     module_text(frame.object));
}

}  // namespace uscope
