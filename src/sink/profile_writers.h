#pragma once
// The writer of each profile format, one per file (profile_folded.cc, profile_pprof.cc,
// profile_svg.cc, profile_speedscope.cc, profile_top.cc); write_profile() (profile_sink.cc)
// chooses among them. Internal to sink/: commands call write_profile().
#include <cstdio>
#include <string>

#include "model/profile.h"
#include "sink/profile_sink.h"
#include "util/result.h"

namespace uscope {

Result<void> write_folded(const Profile& profile, std::FILE* out);
Result<void> write_pprof(const Profile& profile, std::FILE* out);
Result<void> write_svg(const Profile& profile, std::FILE* out, const ProfileSinkOptions& options);
Result<void> write_speedscope(const Profile& profile, std::FILE* out,
                              const ProfileSinkOptions& options);
Result<void> write_top(const Profile& profile, std::FILE* out, const ProfileSinkOptions& options);

// print_profile_summary()'s line without "uscope: " (the SVG's subtitle, pprof's comments).
std::string profile_summary(const Profile& profile);
// "4,913": digits grouped by thousands.
std::string grouped(uint64_t n);
// A count of `profile` as a person reads it: samples grouped ("4,913"), or a time with its unit
// ("12.3 ms") when the profile's counts are nanoseconds.
std::string count_text(const Profile& profile, uint64_t count);
// Bytes with a unit a person reads: "812 B", "40.0 KiB", "1.50 MiB".
std::string bytes_text(uint64_t bytes);

}  // namespace uscope
