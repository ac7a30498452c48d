#pragma once
// Walking a BPF hash map from user space while BPF programs add to it (and delete from it): every
// entry read as (key, value), one deleted between the walk reaching its key and its lookup
// skipped.
#include <bpf/bpf.h>

#include <cerrno>
#include <cstring>

#include "util/result.h"

namespace uscope {

// Calls `each(key, value)` for every entry of the hash map `fd` (keys K, values V). Fails on an
// error of the walk other than its end, naming `what` ("the profiler's counts").
template <typename K, typename V, typename Each>
Result<void> for_each_map_entry(int fd, const char* what, Each&& each) {
  K key{}, next{};
  const void* prev = nullptr;
  while (bpf_map_get_next_key(fd, prev, &next) == 0) {
    key = next;
    prev = &key;
    V value{};
    if (bpf_map_lookup_elem(fd, &key, &value) != 0) continue;
    each(key, value);
  }
  if (errno != ENOENT) return fail_errno(errno, "cannot read {}: {}", what, std::strerror(errno));
  return {};
}

}  // namespace uscope
