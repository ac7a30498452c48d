#include "sink/memleak_report.h"

#include <fmt/core.h>

#include <algorithm>
#include <vector>

#include "sink/profile_stacks.h"
#include "sink/profile_writers.h"
#include "sink/wall_clock.h"

namespace uscope {

namespace {

struct LeakRow {
  const ProfileSample* sample = nullptr;
  std::vector<StackFrame> frames;  // root first, as root_first_frames() gives them
  std::string key;
  uint64_t bytes = 0, blocks = 0;
  uint64_t cut_blocks = 0;  // blocks of stacks cut short merged into this one
  bool merged = false;
  int64_t grew_bytes = 0, grew_blocks = 0;
};

// A stack the walker cut short (its process's unwind tables were still loading as a -c command
// started, and frame pointers ended early) holds the same blocks as the whole stack it is the
// innermost part of: when exactly one complete stack of its process begins with its frames, its
// blocks are counted there, and the report says how many were.
void merge_cut_stacks(std::vector<LeakRow>& rows) {
  for (LeakRow& cut : rows) {
    if (cut.sample->complete || cut.frames.empty()) continue;
    LeakRow* into = nullptr;
    int matches = 0;
    for (LeakRow& whole : rows) {
      // Innermost frames first: the cut stack's are the whole one's innermost.
      if (&whole == &cut || !whole.sample->complete || whole.sample->pid != cut.sample->pid ||
          whole.frames.size() <= cut.frames.size() ||
          !std::equal(cut.frames.rbegin(), cut.frames.rend(), whole.frames.rbegin(),
                      [](const StackFrame& a, const StackFrame& b) { return a.label == b.label; }))
        continue;
      into = &whole;
      ++matches;
    }
    if (matches != 1) continue;
    into->bytes += cut.bytes;
    into->blocks += cut.blocks;
    into->cut_blocks += cut.blocks;
    cut.merged = true;
  }
  std::erase_if(rows, [](const LeakRow& r) { return r.merged; });
}

std::string signed_grouped(int64_t n) {
  return fmt::format("{}{}", n < 0 ? "-" : "+", grouped(static_cast<uint64_t>(n < 0 ? -n : n)));
}

}  // namespace

void MemleakReport::write(const Profile& profile, const AllocCounts& counts, int64_t unix_ns,
                          std::FILE* out) {
  const char* about = profile.sample_bytes || counts.estimated ? "~" : "";
  std::vector<LeakRow> rows;
  std::map<std::string, std::pair<uint64_t, uint64_t>> now;
  uint64_t bytes = 0, blocks = 0;
  for (const ProfileSample& s : profile.samples) {
    if (s.count == 0 && s.blocks == 0) continue;
    LeakRow r;
    r.sample = &s;
    r.frames = root_first_frames(profile, s);
    r.bytes = s.count;
    r.blocks = s.blocks;
    bytes += s.count;
    blocks += s.blocks;
    rows.push_back(std::move(r));
  }
  merge_cut_stacks(rows);
  for (LeakRow& r : rows) {
    r.key = fmt::format("{}", r.sample->pid);
    for (const auto& f : r.frames) r.key += ";" + f.label;
    now[r.key] = {r.bytes, r.blocks};
    auto it = last_.find(r.key);
    uint64_t before_bytes = it == last_.end() ? 0 : it->second.first;
    uint64_t before_blocks = it == last_.end() ? 0 : it->second.second;
    r.grew_bytes = static_cast<int64_t>(r.bytes) - static_cast<int64_t>(before_bytes);
    r.grew_blocks = static_cast<int64_t>(r.blocks) - static_cast<int64_t>(before_blocks);
  }
  std::sort(rows.begin(), rows.end(), [](const LeakRow& a, const LeakRow& b) {
    if (a.grew_bytes != b.grew_bytes) return a.grew_bytes > b.grew_bytes;
    if (a.bytes != b.bytes) return a.bytes > b.bytes;
    return a.key < b.key;
  });

  fmt::print(out, "[{}] {}{} bytes outstanding in {}{} block{} from {} stack{}",
             local_clock_text(unix_ns).substr(0, 8), about, grouped(bytes), about, grouped(blocks),
             blocks == 1 ? "" : "s", rows.size(), rows.size() == 1 ? "" : "s");
  fmt::print(out, " ({} allocation{} followed, {} freed", grouped(counts.followed),
             counts.followed == 1 ? "" : "s", grouped(counts.frees));
  if (profile.sample_bytes)
    fmt::print(out,
               "; sampled: one block per {} allocated on average, of {} calls, the sizes "
               "above estimated from them",
               bytes_text(profile.sample_bytes), grouped(counts.calls));
  else if (counts.estimated)
    fmt::print(out,
               "; {} of them sampled by the program's own sampler (Go's MemProfileRate), "
               "the sizes above estimated from them",
               grouped(counts.estimated));
  fmt::print(out, ")\n");
  if (rows.empty()) {
    fmt::print(out, "  no block outstanding: every block followed was freed\n");
  }
  const size_t shown = std::min(rows.size(), top_);
  for (size_t i = 0; i < shown; ++i) {
    const LeakRow& r = rows[i];
    const ProfileSample& s = *r.sample;
    fmt::print(out, "  {}{} bytes in {}{} block{}", about, grouped(r.bytes), about,
               grouped(r.blocks), r.blocks == 1 ? "" : "s");
    if (!first_)
      fmt::print(out, " ({} bytes, {} blocks since the last report)", signed_grouped(r.grew_bytes),
                 signed_grouped(r.grew_blocks));
    fmt::print(out, " from {} ({}):\n", s.comm.empty() ? "?" : s.comm, s.pid);
    if (r.cut_blocks)
      fmt::print(out,
                 "      ({} of the blocks with this stack cut short, as the unwinder loaded "
                 "its tables: counted here by their innermost frames)\n",
                 grouped(r.cut_blocks));
    if (r.frames.empty()) fmt::print(out, "      [no stack]\n");
    for (auto it = r.frames.rbegin(); it != r.frames.rend(); ++it) {
      const std::string module = module_of(profile, profile.locations[it->location]);
      fmt::print(out, "      {}{}\n", it->label,
                 module.empty() ? "" : fmt::format("  ({})", module));
    }
  }
  if (rows.size() > shown) {
    uint64_t rest_bytes = 0, rest_blocks = 0;
    for (size_t i = shown; i < rows.size(); ++i) {
      rest_bytes += rows[i].bytes;
      rest_blocks += rows[i].blocks;
    }
    fmt::print(out, "  ... {} more stack{} hold {}{} bytes in {}{} blocks (--top shows more)\n",
               rows.size() - shown, rows.size() - shown == 1 ? "" : "s", about, grouped(rest_bytes),
               about, grouped(rest_blocks));
  }
  std::fflush(out);
  last_ = std::move(now);
  first_ = false;
}

}  // namespace uscope
