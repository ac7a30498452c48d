#pragma once
// Keyed aggregations printed as bpftrace prints its maps: counts sorted by value (largest last),
// histograms with `[lo, hi)  N |@@@@   |` bars, the top N keys unless all are asked for; or JSON
// Lines, one object per key. The model (model/map_table.h) is filled by the aggregation job.
#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "model/map_table.h"
#include "sink/output_format.h"

namespace uscope {

// bpftrace's bucket labels: "(..., 0)", "[0]", "[1]", "[2, 4)", "[1K, 2K)"; linear "[0, 10)",
// "[100, ...)".
std::string bucket_label(const MapScale& scale, size_t bucket);
// The bucket's bounds: [low, high); nullopt for an open end.
std::pair<std::optional<int64_t>, std::optional<int64_t>> bucket_bounds(const MapScale& scale,
                                                                        size_t bucket);

// Aligned text, or JSON Lines for OutputFormat::Json.
void print_map(MapTable table, OutputFormat format, std::FILE* out = stdout);

}  // namespace uscope
