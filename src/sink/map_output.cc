#include "sink/map_output.h"

#include <fmt/core.h>

#include <algorithm>
#include <nlohmann/json.hpp>

namespace uscope {

namespace {

// 1024 -> "1K", 3 -> "3": exact powers of 1024 get a suffix, as bpftrace writes them.
std::string power_label(uint64_t v) {
  static constexpr const char* kSuffix[] = {"", "K", "M", "G", "T", "P", "E"};
  size_t s = 0;
  while (v >= 1024 && v % 1024 == 0 && s + 1 < std::size(kSuffix)) {
    v /= 1024;
    ++s;
  }
  return fmt::format("{}{}", v, kSuffix[s]);
}

// "@[worker-1, 10]"; a ustack key puts its frames on lines of their own, as bpftrace does.
std::string row_label(const MapTable& t, const MapRow& r) {
  std::vector<std::string> parts;
  size_t k = 0;
  for (const std::string& name : t.key_names) {
    if (name == "ustack") {
      std::string s = "\n";
      if (r.no_stack) s += "        [stack unavailable]\n";
      for (const std::string& f : r.stack) s += "        " + f + "\n";
      parts.push_back(std::move(s));
    } else if (k < r.key.size()) {
      parts.push_back(key_text(r.key[k++]));
    }
  }
  std::string out = "@";
  if (parts.empty()) return out;
  out += "[";
  for (size_t i = 0; i < parts.size(); ++i) out += (i ? ", " : "") + parts[i];
  return out + "]";
}

uint64_t total(const MapRow& r) {
  return r.count;
}

nlohmann::json key_json(const MapTable& t, const MapRow& r) {
  nlohmann::json key = nlohmann::json::object();
  size_t k = 0;
  for (const std::string& name : t.key_names) {
    if (name == "ustack") {
      key[name] = r.no_stack ? nlohmann::json(nullptr) : nlohmann::json(r.stack);
    } else if (k < r.key.size()) {
      const MapKeyPart& p = r.key[k++];
      if (!p.is_string)
        key[name] = p.number;
      else if (p.unreadable)
        key[name] = nullptr;
      else
        key[name] = p.text;  // a cut string says so in "truncated_keys"
    }
  }
  return key;
}

void print_json(const MapTable& t, const std::vector<const MapRow*>& shown, size_t total_keys,
                std::FILE* out) {
  for (const MapRow* r : shown) {
    nlohmann::json j = {{"kind", t.kind}, {"key", key_json(t, *r)}, {"count", r->count}};
    if (t.interval) j["interval"] = *t.interval;
    std::vector<std::string> cut;
    size_t k = 0;
    for (const std::string& name : t.key_names)
      if (name != "ustack" && k < r->key.size() && r->key[k++].truncated) cut.push_back(name);
    if (!cut.empty()) j["truncated_keys"] = cut;
    if (t.scale.mode != TRACE_AGG_COUNT) {
      j["sum"] = r->sum;
      nlohmann::json buckets = nlohmann::json::array();
      for (size_t b = 0; b < r->buckets.size(); ++b) {
        if (!r->buckets[b]) continue;
        auto [lo, hi] = bucket_bounds(t.scale, b);
        nlohmann::json jb = {{"count", r->buckets[b]}};
        if (lo) jb["low"] = *lo;
        if (hi) jb["high"] = *hi;
        buckets.push_back(std::move(jb));
      }
      j["buckets"] = std::move(buckets);
      if (!t.unit.empty()) j["unit"] = t.unit;
    }
    fmt::print(out, "{}\n", j.dump());
  }
  print_map_keys_line(t, t.kind, shown.size(), total_keys, out);
}

void print_hist(const MapTable& t, const MapRow& r, std::FILE* out) {
  fmt::print(out, "{}: {} value{}{}\n", row_label(t, r), r.count, r.count == 1 ? "" : "s",
             t.unit.empty() ? "" : fmt::format(" ({})", t.unit));
  print_histogram_bars(
      r.buckets, [&](size_t b) { return bucket_label(t.scale, b); }, BarStyle::Bpftrace, out);
}

}  // namespace

std::string key_text(const MapKeyPart& k) {
  if (!k.is_string) return fmt::format("{}", k.number);
  if (k.unreadable) return "<unreadable>";
  return k.truncated ? k.text + "…" : k.text;
}

std::pair<std::optional<int64_t>, std::optional<int64_t>> bucket_bounds(const MapScale& s,
                                                                        size_t b) {
  if (s.mode == TRACE_AGG_LINEAR) {
    if (b == 0) return {std::nullopt, s.min};
    if (b > s.linear_buckets) return {s.max, std::nullopt};
    int64_t lo = s.min + static_cast<int64_t>(b - 1) * s.step;
    return {lo, lo + s.step};
  }
  if (b == 0) return {std::nullopt, 0};
  if (b == 1) return {0, 1};
  if (b == 2) return {1, 2};
  if (b >= 65) return {std::nullopt, std::nullopt};
  int64_t lo = int64_t{1} << (b - 2);
  return {lo, b == 64 ? std::optional<int64_t>() : std::optional<int64_t>(lo * 2)};
}

std::string bucket_label(const MapScale& s, size_t b) {
  auto [lo, hi] = bucket_bounds(s, b);
  auto num = [&](int64_t v) {
    return s.mode == TRACE_AGG_LINEAR || v < 0 ? fmt::format("{}", v)
                                               : power_label(static_cast<uint64_t>(v));
  };
  if (!lo && !hi) return "[?]";
  if (!lo) return fmt::format("(..., {})", num(*hi));
  if (!hi) return fmt::format("[{}, ...)", num(*lo));
  if (s.mode != TRACE_AGG_LINEAR && *hi == *lo + 1) return fmt::format("[{}]", num(*lo));
  return fmt::format("[{}, {})", num(*lo), num(*hi));
}

void print_map(MapTable t, OutputFormat format, std::FILE* out) {
  std::erase_if(t.rows, [](const MapRow& r) { return r.count == 0; });
  // Largest last, as bpftrace prints a map: the top stays on screen. Ties in key order, so that
  // equal runs print alike.
  std::vector<const MapRow*> rows;
  for (const MapRow& r : t.rows) rows.push_back(&r);
  std::stable_sort(rows.begin(), rows.end(), [&](const MapRow* a, const MapRow* b) {
    if (total(*a) != total(*b)) return total(*a) < total(*b);
    return row_label(t, *a) < row_label(t, *b);
  });
  size_t total_keys = rows.size();
  if (t.top && rows.size() > t.top)
    rows.erase(rows.begin(), rows.end() - static_cast<ptrdiff_t>(t.top));
  if (format == OutputFormat::Json) {
    print_json(t, rows, total_keys, out);
    std::fflush(out);
    return;
  }
  std::string names;
  for (size_t i = 0; i < t.key_names.size(); ++i) names += (i ? ", " : "") + t.key_names[i];
  std::string heading = t.interval ? fmt::format("interval {}: ", *t.interval) : "";
  heading += t.key_names.empty() ? "@" : fmt::format("@[{}]", names);
  if (rows.size() < total_keys)
    heading += fmt::format("  top {} of {} keys by {}", rows.size(), total_keys,
                           t.scale.mode == TRACE_AGG_COUNT ? "count" : "number of values");
  else
    heading += fmt::format("  {} key{}", total_keys, total_keys == 1 ? "" : "s");
  fmt::print(out, "{}\n", heading);
  if (t.scale.mode == TRACE_AGG_COUNT) {
    size_t w = 0;
    for (const MapRow* r : rows) w = std::max(w, row_label(t, *r).size() + 1);
    for (const MapRow* r : rows)
      fmt::print(out, "{:<{}} {:>10}\n", row_label(t, *r) + ":", w, r->count);
  } else {
    for (const MapRow* r : rows) {
      fmt::print(out, "\n");
      print_hist(t, *r, out);
    }
  }
  print_map_end(t, rows.size(), total_keys, out);
  std::fflush(out);
}

void print_map_end(const MapTable& t, size_t shown, size_t total, std::FILE* out) {
  if (shown < total)
    fmt::print(out, "({} more key{}; --all)\n", total - shown, total - shown == 1 ? "" : "s");
  if (t.not_counted)
    fmt::print(out, "({} hits not counted: the map of {} keys was full; --max-keys raises it)\n",
               t.not_counted, t.max_keys);
  std::string losses;
  for (const auto& [name, n] : t.losses)
    if (n) losses += fmt::format("{}{}: {}", losses.empty() ? "" : ", ", name, n);
  if (!losses.empty()) fmt::print(out, "({})\n", losses);
}

void print_map_keys_line(const MapTable& t, std::string_view of, size_t shown, size_t total,
                         std::FILE* out) {
  nlohmann::json s = {{"kind", "keys"},
                      {"of", of},
                      {"keys", total},
                      {"shown", shown},
                      {"not_counted_map_full", t.not_counted}};
  for (const auto& [name, n] : t.losses) s[name] = n;
  if (t.interval) s["interval"] = *t.interval;
  fmt::print(out, "{}\n", s.dump());
}

}  // namespace uscope
