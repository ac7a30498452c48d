#include "sink/top_table.h"

#include <fmt/core.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string_view>
#include <tuple>
#include <vector>

#include "sink/function_shares.h"
#include "sink/profile_writers.h"
#include "util/output_closed.h"

namespace uscope {

namespace {

struct Row {
  const FunctionShare* since_start;
  uint64_t self = 0, total = 0;  // in the last interval
};

// Counts only grow, but a stack read again may be named otherwise (its process's maps caught up
// with): never a negative share.
uint64_t minus(uint64_t now, uint64_t before) {
  return now > before ? now - before : 0;
}

// `line` cut to `columns` characters (UTF-8 aware), 0: uncut.
std::string_view cut(std::string_view line, size_t columns) {
  if (columns == 0) return line;
  size_t chars = 0, i = 0;
  for (; i < line.size(); ++i)
    if ((static_cast<unsigned char>(line[i]) & 0xC0) != 0x80 && chars++ == columns) break;
  return line.substr(0, i);
}

}  // namespace

Result<void> TopTable::write(const Profile& profile, double interval_s, std::FILE* out) {
  const uint64_t total = profile.total_samples();
  const uint64_t interval_total = minus(total, previous_samples_);
  std::vector<FunctionShare> shares = function_shares(profile);
  std::vector<Row> rows;
  rows.reserve(shares.size());
  std::unordered_map<std::string, Counts> now;
  for (const auto& s : shares) {
    std::string key = s.function + '\0' + s.module;
    Counts before;
    if (auto it = previous_.find(key); it != previous_.end()) before = it->second;
    rows.push_back({&s, minus(s.self, before.self), minus(s.total, before.total)});
    now.emplace(std::move(key), Counts{s.self, s.total});
  }
  previous_ = std::move(now);
  previous_samples_ = total;

  const bool by_self = options_.sort == TopSort::Self;
  const bool session = by_session_;
  std::sort(rows.begin(), rows.end(), [by_self, session](const Row& a, const Row& b) {
    auto key = [by_self, session](const Row& r) {
      const uint64_t self = session ? r.since_start->self : r.self;
      const uint64_t total = session ? r.since_start->total : r.total;
      return by_self ? std::tuple(self, total, r.since_start->self, r.since_start->total)
                     : std::tuple(total, self, r.since_start->total, r.since_start->self);
    };
    if (key(a) != key(b)) return key(a) > key(b);
    return a.since_start->function < b.since_start->function;
  });

  std::vector<std::string> lines;
  lines.push_back(fmt::format("uscope top {}: {} sample{} in the last {:.1f} s, sorted by {}{}{}{}",
                              options_.title, grouped(interval_total),
                              interval_total == 1 ? "" : "s", interval_s,
                              by_self ? "self" : "total", by_session_ ? " since start" : "",
                              options_.keys.empty() ? "" : "; ", options_.keys));
  lines.push_back("since start: " + profile_summary(profile));
  lines.emplace_back();
  // Header lines, the "more" line, and on a terminal one line spare (the cursor's).
  constexpr size_t kFixedLines = 3 + 2 + 1 + 1;
  size_t shown = std::min(rows.size(), options_.rows);
  if (options_.terminal && options_.lines > 0)
    shown = std::min(shown, options_.lines > kFixedLines ? options_.lines - kFixedLines : 0);
  size_t width = 8;
  for (size_t i = 0; i < shown; ++i) width = std::max(width, rows[i].since_start->function.size());
  width = std::min<size_t>(width, 60);
  lines.push_back(
      fmt::format("{:^14}   {:^14}", fmt::format("last {:.1f} s", interval_s), "since start"));
  lines.push_back(fmt::format("{:>6} {:>7}   {:>6} {:>7}  {:<{}}  {}", "SELF%", "TOTAL%", "SELF%",
                              "TOTAL%", "FUNCTION", width, "MODULE"));
  for (size_t i = 0; i < shown; ++i) {
    const Row& r = rows[i];
    lines.push_back(fmt::format(
        "{:>5.1f}% {:>6.1f}%   {:>5.1f}% {:>6.1f}%  {:<{}}  {}",
        share_percent(r.self, interval_total), share_percent(r.total, interval_total),
        share_percent(r.since_start->self, total), share_percent(r.since_start->total, total),
        r.since_start->function, width, r.since_start->module));
  }
  if (total == 0)
    lines.emplace_back("no samples yet");
  else if (shown < rows.size())
    lines.push_back(fmt::format("({} more functions)", rows.size() - shown));

  // One write per table: a terminal never shows half of one.
  std::string text;
  if (options_.terminal) text += "\x1b[H";  // home: drawn over the previous table
  for (const auto& line : lines) {
    if (options_.terminal) {
      text += cut(line, options_.columns);
      text += "\x1b[K\n";  // the rest of a longer old line erased
    } else {
      text += line;
      text += '\n';
    }
  }
  if (options_.terminal)
    text += "\x1b[J";  // and the old lines below
  else
    text += '\n';  // tables apart
  if (std::fwrite(text.data(), 1, text.size(), out) != text.size() || std::fflush(out) != 0) {
    int e = errno;
    throw_if_output_closed(e);
    return fail_errno(e, "writing the table failed: {}", std::strerror(e));
  }
  return {};
}

}  // namespace uscope
