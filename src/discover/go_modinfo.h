#pragma once
// The module info text cmd/go stores in a Go binary (GoBuildInfo::mod_info), as Go's
// runtime/debug.ParseBuildInfo reads it and `go version -m` prints it: one line per fact,
// tab-separated,
//   path   <main package>                      ("command-line-arguments" for `go build f.go`)
//   mod    <path> <version> [<sum>]             the main module (none in GOPATH builds)
//   dep    <path> <version> [<sum>]             a dependency
//   =>     <path> <version> <sum>               replaces the module of the line before
//   build  <key>=<value>                        a build setting (-compiler, CGO_ENABLED, GOARCH,
//                                               vcs.revision, ...); key and value in Go quotes
//                                               ("..." or `...`) when they hold spaces and such
// The text is untrusted (fuzz/go_modinfo_fuzz.cc). Lines Go's parser would refuse are skipped and
// reported in `problems` instead of failing the whole text: one bad line should not hide the
// rest from a person asking what a binary is made of.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace uscope {

struct GoModuleVersion {
  std::string path;     // "golang.org/x/net", or a directory for a replacement ("./greet")
  std::string version;  // "v0.3.7", "(devel)" for a module built from its source tree
  std::string sum;      // go.sum's "h1:..." hash, "" when none is recorded
};

struct GoModule : GoModuleVersion {
  std::optional<GoModuleVersion> replace;  // a `replace` directive's target, when there is one
};

struct GoBuildSetting {
  std::string key;    // "-compiler", "CGO_ENABLED", "GOARCH", "vcs.revision", ...
  std::string value;  // unquoted
};

struct GoModInfo {
  std::string path;              // the main package's import path ("" when the text has none)
  std::optional<GoModule> main;  // the main module; nullopt in GOPATH mode
  std::vector<GoModule> deps;    // in the order cmd/go wrote them (sorted by path)
  std::vector<GoBuildSetting> settings;
  // "line 4: replacement with no module on the line before", one per line skipped; past
  // kMaxProblems, the last says "N more lines skipped" instead.
  std::vector<std::string> problems;
  static constexpr size_t kMaxProblems = 16;

  // The value of build setting `key` (the last one, as Go's readers take it); nullptr when unset.
  const std::string* setting(std::string_view key) const;
};

// Never fails: what cannot be read is in `problems`. A last line without its newline is read
// too (Go's parser drops it; cmd/go always ends the text with one).
GoModInfo parse_go_modinfo(std::string_view text);

// A key or value of a build setting as `go version -m` shows it: as is, or in Go's double quotes
// when it is empty (keys only) or holds a space, tab, newline, quote or '=' (keys only). Also
// quoted, unlike Go, when it holds any other control byte: the result never holds one, so it can
// go to a terminal as it is.
std::string go_setting_text(std::string_view s, bool is_key);

}  // namespace uscope
