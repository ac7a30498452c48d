// speedscope's file format (https://www.speedscope.app/file-format-schema.json): frames shared by
// all profiles, one "sampled" profile per process (per thread with --threads) named
// "comm (PID)", the busiest first so that speedscope opens it; speedscope switches between them.
// Weights are sample counts (unit "none"): times derived from the frequency would be estimates.
// A profile of time (off-CPU, wall) weighs nanoseconds.
// The format has no place for losses: they go under a key of uscope's own, "uscope" (the summary
// line and every cause), which speedscope ignores, so that the file never reads as complete.
#include <fmt/core.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>
#include <nlohmann/json.hpp>

#include "sink/profile_stacks.h"
#include "sink/profile_writers.h"

namespace uscope {

namespace {

struct SpeedscopeProfile {
  std::string name;
  uint64_t total = 0;
  nlohmann::json samples = nlohmann::json::array(), weights = nlohmann::json::array();
};

}  // namespace

Result<void> write_speedscope(const Profile& profile, std::FILE* out,
                              const ProfileSinkOptions& options) {
  // One shared frame per (label, function): speedscope merges frames by index, so lines of one
  // function stay one frame.
  std::map<std::pair<std::string, uint32_t>, size_t> frame_index;
  nlohmann::json frames = nlohmann::json::array();
  std::map<std::pair<pid_t, pid_t>, SpeedscopeProfile> by_thread;
  for (const auto& sample : profile.samples) {
    if (sample.count == 0) continue;
    nlohmann::json stack = nlohmann::json::array();
    for (const auto& f : root_first_frames(profile, sample)) {
      auto [it, added] = frame_index.try_emplace({f.label, f.function}, frames.size());
      if (added) {
        nlohmann::json frame{{"name", f.label}};
        if (f.function < profile.functions.size() && !profile.functions[f.function].file.empty())
          frame["file"] = profile.functions[f.function].file;
        frames.push_back(std::move(frame));
      }
      stack.push_back(it->second);
    }
    SpeedscopeProfile& p = by_thread[{sample.pid, sample.tid}];
    if (p.name.empty())
      p.name = sample.tid == 0 ? fmt::format("{} ({})", sample.comm, sample.pid)
                               : fmt::format("{} ({}/{})", sample.comm, sample.pid, sample.tid);
    p.samples.push_back(std::move(stack));
    p.weights.push_back(sample.count);
    p.total += sample.count;
  }
  std::vector<SpeedscopeProfile*> order;
  for (auto& [key, p] : by_thread) order.push_back(&p);
  std::stable_sort(
      order.begin(), order.end(),
      [](const SpeedscopeProfile* a, const SpeedscopeProfile* b) { return a->total > b->total; });
  nlohmann::json profiles = nlohmann::json::array();
  for (SpeedscopeProfile* p : order)
    profiles.push_back({{"type", "sampled"},
                        {"name", p->name},
                        {"unit", profile.counts_time()    ? "nanoseconds"
                                 : profile.counts_bytes() ? "bytes"
                                                          : "none"},
                        {"startValue", 0},
                        {"endValue", p->total},
                        {"samples", std::move(p->samples)},
                        {"weights", std::move(p->weights)}});
  nlohmann::json file{{"$schema", "https://www.speedscope.app/file-format-schema.json"},
                      {"shared", {{"frames", std::move(frames)}}},
                      {"profiles", std::move(profiles)},
                      {"name", options.title.empty() ? "uscope profile" : options.title},
                      {"activeProfileIndex", 0},
                      {"exporter", "uscope"}};
  nlohmann::json losses = nlohmann::json::object();
  for (const auto& [cause, n] : profile.losses) losses[cause] = n;
  file["uscope"] = {{"summary", profile_summary(profile)}, {"losses", std::move(losses)}};
  std::string text = file.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  text += '\n';
  if (std::fwrite(text.data(), 1, text.size(), out) != text.size())
    return fail_errno(errno, "writing the speedscope profile failed: {}", std::strerror(errno));
  return {};
}

}  // namespace uscope
