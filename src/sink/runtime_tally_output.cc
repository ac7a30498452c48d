#include "sink/runtime_tally_output.h"

#include <fmt/core.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "sink/map_output.h"

namespace uscope {

namespace {

struct Named {
  std::string name;
  bool truncated = false;  // a part of the name was cut ("…" in text)
  const MapRow* row = nullptr;
};

Named named(const Runtime& rt, const MapRow& r) {
  Named n;
  std::vector<std::string> parts;
  for (const MapKeyPart& k : r.key) {
    parts.push_back(key_text(k));
    n.truncated |= k.is_string && !k.unreadable && k.truncated;
  }
  n.name = runtime_name(rt, parts);
  if (n.name.empty()) n.name = "<unnamed>";
  n.row = &r;
  return n;
}

double ms(int64_t ns) {
  return static_cast<double>(ns) / 1e6;
}

}  // namespace

void print_tally(MapTable t, const TallyView& v, OutputFormat format, std::FILE* out) {
  std::vector<Named> rows;
  for (const MapRow& r : t.rows)
    if (r.count) rows.push_back(named(*v.runtime, r));
  auto weight = [&](const Named& n) {
    return v.by_time ? static_cast<uint64_t>(n.row->sum) : n.row->count;
  };
  std::stable_sort(rows.begin(), rows.end(), [&](const Named& a, const Named& b) {
    if (weight(a) != weight(b)) return weight(a) < weight(b);
    return a.name < b.name;
  });
  const size_t total_keys = rows.size();
  if (t.top && rows.size() > t.top)
    rows.erase(rows.begin(), rows.end() - static_cast<ptrdiff_t>(t.top));

  if (format == OutputFormat::Json) {
    for (const Named& n : rows) {
      nlohmann::json j = {{"kind", v.kind}, {"name", n.name}, {"count", n.row->count}};
      if (v.timed) j["total_ns"] = n.row->sum;
      if (n.truncated) j["truncated"] = true;
      if (t.interval) j["interval"] = *t.interval;
      fmt::print(out, "{}\n", j.dump());
    }
    print_map_keys_line(t, v.kind, rows.size(), total_keys, out);
    std::fflush(out);
    return;
  }

  size_t w = v.heading.size();
  for (const Named& n : rows) w = std::max(w, n.name.size());
  std::string heading = t.interval ? fmt::format("interval {}: ", *t.interval) : "";
  heading += rows.size() < total_keys
                 ? fmt::format("top {} of {} {} by {}", rows.size(), total_keys, v.kind,
                               v.by_time ? "time" : "count")
                 : fmt::format("{} {}", total_keys, v.kind);
  fmt::print(out, "{}\n", heading);
  if (v.timed)
    fmt::print(out, "{:<{}} {:>12} {:>14} {:>12}\n", v.heading, w, v.counted, "TOTAL ms", "AVG us");
  else
    fmt::print(out, "{:<{}} {:>12}\n", v.heading, w, v.counted);
  for (const Named& n : rows) {
    const MapRow& r = *n.row;
    if (v.timed)
      fmt::print(out, "{:<{}} {:>12} {:>14.3f} {:>12.3f}\n", n.name, w, r.count, ms(r.sum),
                 static_cast<double>(r.sum) / static_cast<double>(r.count) / 1e3);
    else
      fmt::print(out, "{:<{}} {:>12}\n", n.name, w, r.count);
  }
  print_map_end(t, rows.size(), total_keys, out);
  std::fflush(out);
}

}  // namespace uscope
