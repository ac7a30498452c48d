#include "util/names.h"

#include <fnmatch.h>

#include <algorithm>
#include <cctype>
#include <string>

namespace uscope {

bool glob_match(std::string_view pattern, std::string_view name) {
  return fnmatch(std::string(pattern).c_str(), std::string(name).c_str(), 0) == 0;
}

bool has_glob_chars(std::string_view s) {
  return s.find_first_of("*?[") != std::string_view::npos;
}

namespace {

size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      bool same = std::tolower(static_cast<unsigned char>(a[i - 1])) ==
                  std::tolower(static_cast<unsigned char>(b[j - 1]));
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (same ? 0 : 1)});
    }
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

bool contains_icase(std::string_view hay, std::string_view needle) {
  return std::search(hay.begin(), hay.end(), needle.begin(), needle.end(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         }) != hay.end();
}

}  // namespace

std::vector<std::string> closest_names(std::string_view wanted,
                                       std::span<const std::string> candidates, size_t limit) {
  // Strip glob characters so that "SSL_rea*" suggests "SSL_read".
  std::string core;
  for (char c : wanted)
    if (c != '*' && c != '?') core += c;
  std::vector<std::pair<size_t, const std::string*>> scored;
  scored.reserve(candidates.size());
  for (const auto& c : candidates) {
    size_t d = !core.empty() && contains_icase(c, core) ? 0 : edit_distance(core, c);
    // Beyond this a suggestion is noise, not help.
    if (d <= std::max<size_t>(3, core.size() / 2)) scored.emplace_back(d, &c);
  }
  std::stable_sort(scored.begin(), scored.end(), [](const auto& x, const auto& y) {
    return x.first != y.first ? x.first < y.first : x.second->size() < y.second->size();
  });
  std::vector<std::string> out;
  for (const auto& [d, name] : scored) {
    if (out.size() == limit) break;
    if (std::find(out.begin(), out.end(), *name) == out.end()) out.push_back(*name);
  }
  return out;
}

std::string join(std::span<const std::string> items, std::string_view sep) {
  std::string out;
  for (size_t i = 0; i < items.size(); ++i) {
    if (i) out += sep;
    out += items[i];
  }
  return out;
}

std::string_view file_name(std::string_view path) {
  const size_t slash = path.rfind('/');
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

}  // namespace uscope
