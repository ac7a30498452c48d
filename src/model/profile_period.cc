#include "model/profile_period.h"

#include <algorithm>
#include <map>
#include <numeric>
#include <string>
#include <unordered_map>

namespace uscope {
namespace {

// boost::hash_combine's idea, with 64-bit constants; `seed` makes a second, independent hash.
uint64_t combined(uint64_t h, uint64_t v, uint64_t seed) {
  v = (v ^ seed) * 0x9e3779b97f4a7c15ULL;
  v ^= v >> 32;
  return (h ^ v) * 0xff51afd7ed558ccdULL + 0x632be59bd9b4e019ULL;
}

// What makes a stack the same stack in two snapshots: the profile builder makes one location per
// (process, address, kind), so addresses and kinds say which frames, whatever they are named.
// Stacks are known by two independent 64-bit hashes of that, computed in one pass over their
// frames: a host-wide session holds ~100k stacks of ~30 frames, read again every period, and
// comparing frames among equal hashes took most of a delta's time in cache misses. Two stacks
// taken for one when both hashes collide: odds of about n^2 / 2^129, which no profile reaches.
struct StackKey {
  uint64_t h1 = 0, h2 = 0;
  size_t sample = 0;
  auto operator<=>(const StackKey&) const = default;
  bool same_stack(const StackKey& o) const { return h1 == o.h1 && h2 == o.h2; }
};

StackKey stack_key(const Profile& p, size_t sample) {
  constexpr uint64_t kSeed1 = 0, kSeed2 = 0xc2b2ae3d27d4eb4fULL;
  const ProfileSample& s = p.samples[sample];
  StackKey k{0, 0, sample};
  auto add = [&](uint64_t v) {
    k.h1 = combined(k.h1, v, kSeed1);
    k.h2 = combined(k.h2, v, kSeed2);
  };
  add(static_cast<uint32_t>(s.pid));
  add(static_cast<uint32_t>(s.tid));
  add(s.complete | s.user_stack_missing << 1 | s.kernel_stack_missing << 2);
  add(s.comm.size());
  for (char c : s.comm) add(static_cast<unsigned char>(c));
  for (uint32_t i : s.locations) {
    if (i >= p.locations.size()) continue;  // not a frame (profile_subset drops it too)
    add(p.locations[i].address);
    add(static_cast<uint64_t>(p.locations[i].kind));
  }
  return k;
}

// Every sample's key, sorted: a stack's samples sit side by side, the earliest first.
std::vector<StackKey> stack_keys(const Profile& p) {
  std::vector<StackKey> out;
  out.reserve(p.samples.size());
  for (size_t i = 0; i < p.samples.size(); ++i) out.push_back(stack_key(p, i));
  std::sort(out.begin(), out.end());
  return out;
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
  const std::vector<StackKey> was = same_session ? stack_keys(before) : std::vector<StackKey>{};
  const std::vector<StackKey> is = stack_keys(now);
  // A stack may be more than one sample (states the model does not keep): the first stands for
  // all, with their sum.
  std::vector<std::pair<size_t, uint64_t>> period;  // (sample of `now`, samples in the period)
  auto b = was.begin();
  for (auto k = is.begin(); k != is.end();) {
    uint64_t count = 0, before_count = 0;
    const size_t first = k->sample;
    const StackKey& key = *k;
    for (; k != is.end() && k->same_stack(key); ++k) count += now.samples[k->sample].count;
    while (b != was.end() && std::pair(b->h1, b->h2) < std::pair(key.h1, key.h2)) ++b;
    for (; b != was.end() && b->same_stack(key); ++b)
      before_count += before.samples[b->sample].count;
    // The kernel's counts never go down: nothing new when they did not grow.
    if (count > before_count) period.emplace_back(first, count - before_count);
  }
  std::sort(period.begin(), period.end());  // in `now`'s order
  std::vector<size_t> indices;
  indices.reserve(period.size());
  for (const auto& [i, n] : period) indices.push_back(i);
  Profile out = profile_subset(now, indices);
  for (size_t k = 0; k < out.samples.size(); ++k) out.samples[k].count = period[k].second;

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
