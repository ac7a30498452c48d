#include "collect/aggregates.h"

#include <bpf/bpf.h>

#include <cerrno>
#include <cstring>

namespace uscope {

Result<std::vector<AggregateRow>> read_aggregate_map(int map_fd) {
  std::vector<AggregateRow> rows;
  uscope_agg_key key{}, next{};
  uscope_agg_value value{};
  const void* prev = nullptr;
  for (;;) {
    if (bpf_map_get_next_key(map_fd, prev, &next)) {
      if (errno == ENOENT) break;
      return fail_errno(errno, "cannot walk the aggregation map: {}", std::strerror(errno));
    }
    key = next;
    prev = &key;
    if (bpf_map_lookup_elem(map_fd, &key, &value)) {
      if (errno == ENOENT) continue;  // never deleted; kept for a map shared with another reader
      return fail_errno(errno, "cannot read an aggregation row: {}", std::strerror(errno));
    }
    AggregateRow row;
    row.slot = key.slot;
    row.stack_id = key.stack_id;
    row.return_address = key.return_address;
    std::memcpy(row.key.data(), key.data, sizeof(key.data));
    row.count = value.count;
    row.sum = value.sum;
    row.buckets.assign(std::begin(value.buckets), std::end(value.buckets));
    rows.push_back(std::move(row));
  }
  return rows;
}

Result<std::vector<uint64_t>> read_stack_trace(int stacks_fd, const AggregateRow& row) {
  if (row.stack_id < 0) return std::vector<uint64_t>{};
  uint64_t frames[TRACE_MAX_FRAMES] = {};
  auto id = static_cast<uint32_t>(row.stack_id);
  if (bpf_map_lookup_elem(stacks_fd, &id, frames))
    return fail_errno(errno, "cannot read user stack {}: {}", row.stack_id, std::strerror(errno));
  std::vector<uint64_t> out;
  for (uint64_t f : frames) {
    if (!f) break;  // the kernel zero-fills past the last frame
    out.push_back(f);
  }
  if (row.return_address && !out.empty() && (out.size() < 2 || out[1] != row.return_address))
    out.insert(out.begin() + 1, row.return_address);
  return out;
}

Result<std::vector<PayloadValue>> decode_key(std::span<const OutputField> fields,
                                             const AggregateRow& row) {
  return decode_payload(fields, row.key, true);
}

std::vector<AggregateRow> AggregateDeltas::advance(const std::vector<AggregateRow>& cumulative) {
  std::vector<AggregateRow> out;
  for (const auto& row : cumulative) {
    auto [it, fresh] =
        last_.try_emplace(Id{row.slot, row.stack_id, row.return_address, row.key}, AggregateRow{});
    AggregateRow& before = it->second;
    if (!fresh && row.count <= before.count) continue;
    if (fresh && row.count == 0) {
      before = row;
      continue;
    }
    AggregateRow delta = row;
    delta.count -= before.count;
    delta.sum -= before.sum;
    for (size_t b = 0; b < delta.buckets.size() && b < before.buckets.size(); ++b)
      delta.buckets[b] -= before.buckets[b];
    before = row;
    out.push_back(std::move(delta));
  }
  return out;
}

}  // namespace uscope
