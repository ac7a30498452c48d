#pragma once
// Keyed aggregations printed as bpftrace prints its maps: counts sorted by value (largest last),
// histograms with `[lo, hi)  N |@@@@   |` bars, the top N keys unless all are asked for; or JSON
// Lines, one object per key. The model (model/map_table.h) is filled by the aggregation job.
#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <string_view>
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

// A key part as the tables show it: a number, a string ("…" when cut), "<unreadable>".
std::string key_text(const MapKeyPart& k);

// Aligned text, or JSON Lines for OutputFormat::Json.
void print_map(MapTable table, OutputFormat format, std::FILE* out = stdout);

// What every table of keys ends with, `shown` of `total` keys printed: in text, the keys left out
// and each loss not zero; in JSON, the `keys` line (`of` the table's kind) with every loss.
void print_map_end(const MapTable& t, size_t shown, size_t total, std::FILE* out);
void print_map_keys_line(const MapTable& t, std::string_view of, size_t shown, size_t total,
                         std::FILE* out);

}  // namespace uscope
