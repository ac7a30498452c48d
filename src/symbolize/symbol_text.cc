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

// "Foo.bar (Foo.java:12)", "Foo.bar (Foo.java)", "Foo.bar".
std::string at_line(const std::string& function, const std::string& file, int line) {
  if (file.empty()) return function;
  return line > 0 ? fmt::format("{} ({}:{})", function, file, line)
                  : fmt::format("{} ({})", function, file);
}

// A Java frame: the code that ran first (the innermost inlined call), each caller it was inlined
// into, and the tier: "Foo.inner (Foo.java:3) inlined in Foo.outer (Foo.java:10) [java C2]".
std::string java_text(const Frame& frame) {
  if (frame.java_kind == HotspotCodeKind::Stub) return frame.function + " [java]";
  std::string text;
  for (const InlinedCall& call : frame.inlined)
    text += at_line(call.function, call.file, call.line) + " inlined in ";
  text += at_line(frame.function, frame.file, frame.line);
  if (frame.java_kind == HotspotCodeKind::C1 || frame.java_kind == HotspotCodeKind::C2)
    return fmt::format("{} [java {} level {}]", text, to_string(frame.java_kind), frame.comp_level);
  return fmt::format("{} [java {}]", text, to_string(frame.java_kind));
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
    return at_line(frame.function, frame.file, frame.line) + module_text(frame);
  if (frame.origin == SymbolOrigin::Java) return java_text(frame);
  return fmt::format("{}+{:#x}{}", frame.function, frame.function_offset, module_text(frame));
}

}  // namespace uscope
