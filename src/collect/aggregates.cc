#include "collect/aggregates.h"

#include "bpf/unwind.h"

#include <bpf/bpf.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <optional>

namespace uscope {

namespace {

// Every row, or only those of one epoch.
Result<std::vector<AggregateRow>> walk(int map_fd, std::optional<uint32_t> epoch) {
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
    if (epoch && key.epoch != *epoch) continue;
    if (bpf_map_lookup_elem(map_fd, &key, &value)) {
      if (errno == ENOENT) continue;  // deleted by another reader of a shared map
      return fail_errno(errno, "cannot read an aggregation row: {}", std::strerror(errno));
    }
    AggregateRow row;
    row.slot = key.slot;
    row.stack_id = key.stack_id;
    row.stack = key.stack;
    row.epoch = key.epoch;
    std::memcpy(row.key.data(), key.data, sizeof(key.data));
    row.count = value.count;
    row.sum = value.sum;
    row.buckets.assign(std::begin(value.buckets), std::end(value.buckets));
    rows.push_back(std::move(row));
  }
  return rows;
}

}  // namespace

Result<std::vector<AggregateRow>> read_aggregate_map(int map_fd) {
  return walk(map_fd, std::nullopt);
}

Result<std::vector<AggregateRow>> take_aggregate_rows(int map_fd, uint32_t epoch) {
  auto rows = walk(map_fd, epoch);
  if (!rows) return rows;
  // Deleted once all are read: a walk that deletes as it goes may skip keys.
  for (const AggregateRow& row : *rows) {
    uscope_agg_key key{};
    key.slot = row.slot;
    key.stack_id = row.stack_id;
    key.stack = row.stack;
    key.epoch = row.epoch;
    std::memcpy(key.data, row.key.data(), sizeof(key.data));
    if (bpf_map_delete_elem(map_fd, &key) && errno != ENOENT)
      return fail_errno(errno, "cannot delete an aggregation row: {}", std::strerror(errno));
  }
  return rows;
}

Result<std::vector<uint64_t>> read_stack_trace(int stacks_fd, const AggregateRow& row) {
  if (row.stack_id < 0) return std::vector<uint64_t>{};
  unwind_stack st{};
  if (bpf_map_lookup_elem(stacks_fd, &row.stack, &st))
    return fail_errno(errno, "cannot read user stack {:#x}: {}", row.stack, std::strerror(errno));
  return std::vector<uint64_t>(st.frames,
                               st.frames + std::min<uint32_t>(st.len, UNWIND_MAX_FRAMES));
}

Result<std::vector<PayloadValue>> decode_key(std::span<const OutputField> fields,
                                             const AggregateRow& row) {
  return decode_payload(fields, row.key, true);
}

std::vector<AggregateRow> AggregateDeltas::advance(const std::vector<AggregateRow>& cumulative) {
  std::vector<AggregateRow> out;
  for (const auto& row : cumulative) {
    auto [it, fresh] =
        last_.try_emplace(Id{row.slot, row.stack_id, row.stack, row.key}, AggregateRow{});
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
