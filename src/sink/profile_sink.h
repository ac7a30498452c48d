#pragma once
// Writing a profile (sink/profile.h) in one of the formats `uscope profile` offers; one file per
// format (profile_folded.cc, profile_pprof.cc, profile_svg.cc, profile_speedscope.cc,
// profile_top.cc). Every format reads only the model.
#include <cstdio>
#include <optional>
#include <span>
#include <string>

#include "sink/output_format.h"
#include "model/profile.h"
#include "util/result.h"

namespace uscope {

struct ProfileSinkOptions {
  size_t top = 25;    // Text: rows of the top table
  std::string title;  // SVG/speedscope: what was profiled ("uscope profile -p 1234 (redis-server)")
};

// The formats a profile can be written in (for choose_format()).
std::span<const OutputFormat> profile_formats();

// Writes `profile` as `format` to `out` (binary formats too: `out` is opened for bytes); throws
// OutputClosed when the reader went away (util/output_closed.h).
Result<void> write_profile(const Profile& profile, OutputFormat format, std::FILE* out,
                           const ProfileSinkOptions& options = {});

// The one-line summary every profile ends with, on stderr: samples, processes, lost samples by
// cause, and the share of samples whose user stack is complete; then the hint below, if any.
void print_profile_summary(const Profile& profile, std::FILE* out);
// When 5% or more of the samples stop in the Python interpreter's functions without a name: the
// package whose debug files name them ("apt install python3.11-dbg").
std::optional<std::string> debug_package_hint(const Profile& profile);

}  // namespace uscope
