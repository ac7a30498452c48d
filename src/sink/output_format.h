#pragma once
// Which form a command's output takes and where it goes: one choice for every command, made from
// --format or else from the -o file's extension, instead of a `json` flag per sink. Each command
// says which formats it writes; a format it does not write is an error naming those it does.
#include <sys/types.h>

#include <cstdio>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "util/result.h"

namespace uscope {

enum class OutputFormat {
  Text,        // lines or tables for people (profile: the top functions)
  Json,        // JSON Lines
  Folded,      // folded stacks: "comm;outer;inner 42" (FlameGraph, speedscope, inferno)
  Pprof,       // gzipped profile.proto (go tool pprof, Pyroscope, Parca)
  Svg,         // a self-contained interactive flame graph
  Speedscope,  // speedscope's JSON file format
};

// "text", "json", "folded", "pprof", "svg", "speedscope".
std::string_view format_name(OutputFormat f);
std::optional<OutputFormat> parse_format_name(std::string_view name);
// By -o's extension: .json .jsonl .folded .txt .pb .pb.gz .pprof .svg .speedscope.json ...;
// nullopt for an extension that names no format.
std::optional<OutputFormat> format_of_path(std::string_view path);

// --format when given, else -o's extension, else `fallback`. Fails on an unknown name, on a format
// not in `allowed`, on a -o extension that names none (saying to pass --format), and on --format
// and -o that disagree.
Result<OutputFormat> choose_format(std::string_view format_flag, std::string_view output_path,
                                   std::span<const OutputFormat> allowed, OutputFormat fallback);

// Where output goes: stdout (path "") or a file created (mode `mode`) and truncated. Errors name
// the path and the reason. The FILE is closed by the destructor (stdout is not).
class OutputFile {
 public:
  static Result<OutputFile> open(const std::string& path, mode_t mode = 0644);
  OutputFile(OutputFile&& o) noexcept;
  OutputFile& operator=(OutputFile&& o) noexcept;
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;
  ~OutputFile();

  std::FILE* get() const { return file_; }
  const std::string& path() const { return path_; }  // "" for stdout
  bool is_stdout() const { return path_.empty(); }
  // Flushes and closes, reporting a failed write (a full disk) that fclose() would hide; throws
  // OutputClosed when the reader went away (util/output_closed.h).
  Result<void> close();

 private:
  OutputFile(std::FILE* f, std::string path) : file_(f), path_(std::move(path)) {}
  std::FILE* file_ = nullptr;
  std::string path_;
};

// Writes a whole file through `write` into PATH.tmp and renames it over PATH, so that a reader
// (a browser reloading an SVG every -i) never sees half a file. Fails naming the path.
Result<void> replace_file(const std::string& path, mode_t mode,
                          const std::function<Result<void>(std::FILE*)>& write);

}  // namespace uscope
