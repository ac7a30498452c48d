#include "collect/stack_samples.h"

#include <cstring>

namespace uscope {

namespace {

void put(std::string& key, const void* p, size_t n) {
  key.append(static_cast<const char*>(p), n);
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
  uint32_t n = static_cast<uint32_t>(s.comm.size());
  put(key, &n, sizeof n);
  key += s.comm;
  n = static_cast<uint32_t>(s.user.size());
  put(key, &n, sizeof n);
  put(key, s.user.data(), s.user.size() * sizeof(uint64_t));
  put(key, s.kernel.data(), s.kernel.size() * sizeof(uint64_t));
  if (s.waker_tid != 0) {
    put(key, &s.waker_pid, sizeof s.waker_pid);
    put(key, &s.waker_tid, sizeof s.waker_tid);
    n = static_cast<uint32_t>(s.waker_comm.size());
    put(key, &n, sizeof n);
    key += s.waker_comm;
    n = static_cast<uint32_t>(s.waker_user.size());
    put(key, &n, sizeof n);
    put(key, s.waker_user.data(), s.waker_user.size() * sizeof(uint64_t));
    put(key, s.waker_kernel.data(), s.waker_kernel.size() * sizeof(uint64_t));
  }
  return key;
}

}  // namespace

void StackAggregator::add(StackSample sample) {
  total_ += sample.count;
  auto [it, inserted] = index_.try_emplace(key_of(sample), samples_.size());
  if (inserted)
    samples_.push_back(std::move(sample));
  else
    samples_[it->second].count += sample.count;
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
