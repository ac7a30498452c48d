#pragma once
// How a user-stack walk ended (bpf/unwind.h's enum unwind_end): its stable name, as JSON and the
// profile's loss list give it ("read_failed"), and what it means to a reader ("cut: stack
// unreadable"). Header-only: the sinks print them without linking the collectors.
#include <cstdint>
#include <string_view>

#include "bpf/unwind.h"

namespace uscope {

inline constexpr const char* kUnwindEndNames[UNWIND_NUM_ENDS] = {
    "entry",       "truncated", "fp_chain_end", "unsupported_cfi",
    "read_failed", "bad_frame", "unloaded"};

inline constexpr const char* kUnwindEndTexts[UNWIND_NUM_ENDS] = {
    "complete",
    "cut at 127 frames",
    "frame-pointer chain ended",
    "cut: CFI rule not evaluated",
    "cut: stack unreadable",
    "cut: broken frame",
    "cut: frame pointers while its tables loaded"};

inline const char* unwind_end_name(uint32_t end) {
  return end < UNWIND_NUM_ENDS ? kUnwindEndNames[end] : "unknown";
}

inline const char* unwind_end_text(uint32_t end) {
  return end < UNWIND_NUM_ENDS ? kUnwindEndTexts[end] : "cut: unknown reason";
}

// nullptr for a name that is no end.
inline const char* unwind_end_text(std::string_view name) {
  for (uint32_t end = 0; end < UNWIND_NUM_ENDS; ++end)
    if (name == kUnwindEndNames[end]) return kUnwindEndTexts[end];
  return nullptr;
}

}  // namespace uscope
