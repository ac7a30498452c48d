#include "model/profile_period.h"

#include <algorithm>
#include <map>
#include <numeric>
#include <string>
#include <unordered_map>

namespace uscope {
namespace {

// Copies the tables' entries that samples use into `out`, each once, in first use order.
class SubsetTables {
 public:
  SubsetTables(const Profile& from, Profile& out) : from_(from), out_(out) {}

  uint32_t location(uint32_t i) {
    auto [it, fresh] = locations_.try_emplace(i, 0);
    if (fresh) {
      ProfileLocation loc = from_.locations[i];
      loc.mapping = loc.mapping == 0 || loc.mapping > from_.mappings.size()
                        ? 0
                        : mapping(loc.mapping - 1) + 1;
      for (ProfileLine& line : loc.lines)
        if (line.function < from_.functions.size()) line.function = function(line.function);
      out_.locations.push_back(std::move(loc));
      it->second = static_cast<uint32_t>(out_.locations.size() - 1);
    }
    return it->second;
  }

 private:
  uint32_t mapping(uint32_t i) {
    auto [it, fresh] = mappings_.try_emplace(i, 0);
    if (fresh) {
      out_.mappings.push_back(from_.mappings[i]);
      it->second = static_cast<uint32_t>(out_.mappings.size() - 1);
    }
    return it->second;
  }
  uint32_t function(uint32_t i) {
    auto [it, fresh] = functions_.try_emplace(i, 0);
    if (fresh) {
      out_.functions.push_back(from_.functions[i]);
      it->second = static_cast<uint32_t>(out_.functions.size() - 1);
    }
    return it->second;
  }

  const Profile& from_;
  Profile& out_;
  std::unordered_map<uint32_t, uint32_t> locations_, mappings_, functions_;
};

Profile with_settings_of(const Profile& p) {
  Profile out;
  out.frequency_hz = p.frequency_hz;
  out.start_unix_ns = p.start_unix_ns;
  out.duration_ns = p.duration_ns;
  out.user_frames = p.user_frames;
  out.kernel_frames = p.kernel_frames;
  return out;
}

}  // namespace

Profile profile_subset(const Profile& p, std::span<const size_t> indices) {
  Profile out = with_settings_of(p);
  SubsetTables tables(p, out);
  out.samples.reserve(indices.size());
  for (size_t i : indices) {
    ProfileSample s = p.samples[i];
    std::erase_if(s.locations, [&](uint32_t l) { return l >= p.locations.size(); });
    for (uint32_t& l : s.locations) l = tables.location(l);
    out.samples.push_back(std::move(s));
  }
  return out;
}

std::vector<Profile> split_by_process(const Profile& p) {
  std::map<pid_t, std::vector<size_t>> by_pid;
  for (size_t i = 0; i < p.samples.size(); ++i) by_pid[p.samples[i].pid].push_back(i);
  std::vector<Profile> out;
  out.reserve(by_pid.size());
  for (const auto& [pid, indices] : by_pid) out.push_back(profile_subset(p, indices));
  return out;
}

StackCap cap_stacks(Profile& p, size_t max_stacks) {
  StackCap cap;
  if (p.samples.size() > max_stacks) {
    std::vector<size_t> order(p.samples.size());
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(),
                     [&](size_t a, size_t b) { return p.samples[a].count > p.samples[b].count; });
    for (size_t i = max_stacks; i < order.size(); ++i) {
      ++cap.stacks_dropped;
      cap.samples_dropped += p.samples[order[i]].count;
    }
    order.resize(max_stacks);
    std::sort(order.begin(), order.end());  // the kept stacks in their order
    auto losses = std::move(p.losses);
    p = profile_subset(p, order);
    p.losses = std::move(losses);
  }
  auto it = std::find_if(p.losses.begin(), p.losses.end(),
                         [](const auto& l) { return l.first == kStacksOverLimit; });
  if (it == p.losses.end())
    p.losses.emplace_back(kStacksOverLimit, cap.samples_dropped);
  else
    it->second += cap.samples_dropped;
  return cap;
}

}  // namespace uscope
