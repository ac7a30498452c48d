#include "model/profile_period.h"

#include <algorithm>
#include <map>
#include <numeric>
#include <string>
#include <unordered_map>

namespace uscope {
namespace {

template <typename T>
void append_raw(std::string& key, const T& v) {
  key.append(reinterpret_cast<const char*>(&v), sizeof v);
}

// What makes a stack the same stack in two snapshots: the profile builder makes one location per
// (process, address, kind), so addresses and kinds say which frames, whatever they are named.
std::string stack_key(const Profile& p, const ProfileSample& s) {
  std::string key;
  key.reserve(24 + s.comm.size() + s.locations.size() * 9);
  append_raw(key, s.pid);
  append_raw(key, s.tid);
  const uint8_t flags =
      static_cast<uint8_t>(s.complete | s.user_stack_missing << 1 | s.kernel_stack_missing << 2);
  append_raw(key, flags);
  append_raw(key, static_cast<uint32_t>(s.comm.size()));
  key += s.comm;
  for (uint32_t i : s.locations) {
    if (i >= p.locations.size()) {
      key.push_back('?');
      continue;
    }
    append_raw(key, static_cast<uint8_t>(p.locations[i].kind));
    append_raw(key, p.locations[i].address);
  }
  return key;
}

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

Profile profile_delta(const Profile& now, const Profile& before) {
  const bool same_session = before.start_unix_ns == now.start_unix_ns &&
                            (before.duration_ns > 0 || !before.samples.empty());
  std::unordered_map<std::string, uint64_t> seen;
  if (same_session)
    for (const ProfileSample& s : before.samples) seen[stack_key(before, s)] += s.count;

  // A stack may be more than one sample of `now` (states the model does not keep): the first
  // stands for all, with their sum.
  std::unordered_map<std::string, size_t> first;  // key -> position in `kept`
  std::vector<size_t> kept;
  std::vector<uint64_t> counts;
  std::vector<std::string> keys;
  for (size_t i = 0; i < now.samples.size(); ++i) {
    std::string key = stack_key(now, now.samples[i]);
    auto [it, fresh] = first.try_emplace(key, kept.size());
    if (fresh) {
      kept.push_back(i);
      counts.push_back(0);
      keys.push_back(std::move(key));
    }
    counts[it->second] += now.samples[i].count;
  }
  std::vector<size_t> period;
  std::vector<uint64_t> period_counts;
  for (size_t k = 0; k < kept.size(); ++k) {
    auto it = seen.find(keys[k]);
    const uint64_t was = it == seen.end() ? 0 : it->second;
    if (counts[k] <= was) continue;  // nothing new (the kernel's counts never go down)
    period.push_back(kept[k]);
    period_counts.push_back(counts[k] - was);
  }
  Profile out = profile_subset(now, period);
  for (size_t k = 0; k < out.samples.size(); ++k) out.samples[k].count = period_counts[k];

  std::map<std::string, uint64_t, std::less<>> lost_before;
  if (same_session)
    for (const auto& [cause, n] : before.losses) lost_before[cause] += n;
  for (const auto& [cause, n] : now.losses) {
    auto it = lost_before.find(cause);
    const uint64_t was = it == lost_before.end() ? 0 : it->second;
    out.losses.emplace_back(cause, n > was ? n - was : 0);
  }
  if (same_session) {
    out.start_unix_ns = before.start_unix_ns + before.duration_ns;
    out.duration_ns = std::max<int64_t>(0, now.duration_ns - before.duration_ns);
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
