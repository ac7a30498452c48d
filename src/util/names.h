#pragma once
// Name matching used wherever a user types a name: globs and "did you mean" suggestions.
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace uscope {

// Shell-style glob (*, ?, [..]) over the whole name, as fnmatch(3) without flags.
bool glob_match(std::string_view pattern, std::string_view name);
bool has_glob_chars(std::string_view s);

// Up to `limit` candidates closest to `wanted` (case-insensitive edit distance, with names that
// contain `wanted` ranked first), for "no such symbol; closest: ..." errors.
std::vector<std::string> closest_names(std::string_view wanted,
                                       std::span<const std::string> candidates, size_t limit = 5);

// The last component of a path ("redis-server" for "/usr/bin/redis-server").
std::string_view file_name(std::string_view path);

// "a, b, c" for error messages.
std::string join(std::span<const std::string> items, std::string_view sep = ", ");

}  // namespace uscope
