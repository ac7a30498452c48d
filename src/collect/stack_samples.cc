#include "collect/stack_samples.h"

#include <cstring>

namespace uscope {

namespace {

void put(std::string& key, const void* p, size_t n) {
  key.append(static_cast<const char*>(p), n);
}

// A thread's name and stacks: the sample's own, or its waker's.
void put_stacks(std::string& key, const std::string& comm, const std::vector<uint64_t>& user,
                const std::vector<uint64_t>& kernel) {
  uint32_t n = static_cast<uint32_t>(comm.size());
  put(key, &n, sizeof n);
  key += comm;
  n = static_cast<uint32_t>(user.size());
  put(key, &n, sizeof n);
  put(key, user.data(), user.size() * sizeof(uint64_t));
  put(key, kernel.data(), kernel.size() * sizeof(uint64_t));
}

std::string key_of(const StackSample& s) {
  std::string key;
  key.reserve(32 + s.comm.size() + 8 * (s.user.size() + s.kernel.size()));
  put(key, &s.pid, sizeof s.pid);
  put(key, &s.tid, sizeof s.tid);
  put(key, &s.user_status, 1);
  put(key, &s.kernel_status, 1);
  put(key, &s.user_end, sizeof s.user_end);
  put(key, &s.reason, 1);
  uint32_t n = static_cast<uint32_t>(s.wait.size());
  put(key, &n, sizeof n);
  key += s.wait;
  put_stacks(key, s.comm, s.user, s.kernel);
  if (s.waker_tid != 0) {
    put(key, &s.waker_pid, sizeof s.waker_pid);
    put(key, &s.waker_tid, sizeof s.waker_tid);
    put_stacks(key, s.waker_comm, s.waker_user, s.waker_kernel);
  }
  return key;
}

}  // namespace

void StackAggregator::add(StackSample sample) {
  total_ += sample.count;
  auto [it, inserted] = index_.try_emplace(key_of(sample), samples_.size());
  if (inserted)
    samples_.push_back(std::move(sample));
  else {
    samples_[it->second].count += sample.count;
    samples_[it->second].blocks += sample.blocks;
  }
}

std::vector<StackSample> StackPeriods::next(const StackAggregator& now) {
  std::vector<StackSample> out;
  for (const StackSample& s : now.samples()) {
    uint64_t& seen = seen_[key_of(s)];
    if (s.count > seen) {
      out.push_back(s);
      out.back().count = s.count - seen;
    }
    seen = s.count;
  }
  return out;
}

void StackAggregator::clear() {
  samples_.clear();
  index_.clear();
  total_ = 0;
}

}  // namespace uscope
