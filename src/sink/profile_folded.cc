// Folded stacks, one line per distinct stack: "comm;outer;...;inner COUNT", the input of
// FlameGraph's flamegraph.pl, inferno and speedscope. Lines are sorted so that two profiles diff.
// A profile of time (off-CPU, wall) counts microseconds, as bcc's offcputime -f writes them
// (flamegraph.pl --countname=us); a stack of under half a microsecond in all is left out.
#include <fmt/core.h>

#include <map>

#include "sink/profile_stacks.h"
#include "sink/profile_writers.h"

namespace uscope {

Result<void> write_folded(const Profile& profile, std::FILE* out) {
  // Samples that differ only in what folding drops (pid with the same comm, line numbers) merge.
  std::map<std::string, uint64_t> lines;
  for (const auto& sample : profile.samples) {
    if (sample.count == 0) continue;
    std::string stack = folded_safe(process_label(sample));
    for (const auto& frame : root_first_frames(profile, sample)) {
      stack += ';';
      stack += folded_safe(frame.label);
    }
    lines[stack] += sample.count;
  }
  for (const auto& [stack, count] : lines) {
    const uint64_t shown = profile.counts_time() ? (count + 500) / 1000 : count;
    if (shown > 0) fmt::print(out, "{} {}\n", stack, shown);
  }
  return {};
}

}  // namespace uscope
