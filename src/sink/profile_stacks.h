#pragma once
// One sample of the profile model as the stack-shaped formats (folded, SVG flame graph,
// speedscope, the top table) read it: frames root first, inlined calls expanded (the caller
// before its inlined callee), each with its kind and the model's label ("do_syscall_64_[k]").
#include <string>
#include <vector>

#include "model/profile.h"

namespace uscope {

// How a flame graph colors a frame.
enum class FrameClass : uint8_t { Process, User, Inlined, Kernel, Jit, Unknown };

struct StackFrame {
  uint32_t function = 0;  // index into Profile::functions
  uint32_t location = 0;  // index into Profile::locations
  int64_t line = 0;
  FrameClass cls = FrameClass::User;
  std::string label;  // Profile::frame_label: the name with its kind's suffix
};

// Frames of `sample` root first: the process's outermost user frame ... the user leaf, then the
// kernel frames (the model keeps them leaf-most) ending with the innermost. Without the process.
std::vector<StackFrame> root_first_frames(const Profile& profile, const ProfileSample& sample);

// The process a sample belongs to as the first frame of folded stacks and flame graphs: its comm,
// or "comm-PID/TID" when the profile is split by thread (--threads), as FlameGraph's
// stackcollapse-perf.pl --tid writes it.
std::string process_label(const ProfileSample& sample);

// Frames that could not be named ("[unknown: libfoo.so has no symbols]") start with '['.
bool is_unknown_function(const ProfileFunction& function);

// The module (mapping file's base name) a location is in; "[unknown]" without a mapping.
std::string module_of(const Profile& profile, const ProfileLocation& location);

// `label` safe inside a folded line: ';' separates frames and a newline ends the line.
std::string folded_safe(std::string label);

}  // namespace uscope
