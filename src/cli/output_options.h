#pragma once
// --format, -o and --json for the commands that print rows or events (trace, count, latency,
// hist, list): the format chosen once (sink/output_format.h), the sinks handed it, and the output
// going to the -o file or stdout.
#include <sys/types.h>
#include <CLI/CLI.hpp>

#include <cstdio>
#include <string>
#include <tl/expected.hpp>

#include "sink/output_format.h"

namespace uscope::cli {

struct OutputOptions {
  std::string format;  // --format
  std::string path;    // -o
  bool json = false;   // --json: an alias of --format json, kept for scripts written against it
};

// --format text|json, -o FILE, --json; `json_help` says what the JSON holds.
void add_output_options(CLI::App* cmd, OutputOptions& o, const std::string& json_help);

struct CommandOutput {
  OutputFormat format = OutputFormat::Text;
  OutputFile file;  // stdout without -o
  bool json() const { return format == OutputFormat::Json; }
  int fd() const { return fileno(file.get()); }
};

// The format and the -o file created. On failure the error is printed and the exit code returned:
// kExitUsage for a format this command does not write, kExitFailure for a file it cannot create.
// `mode`: a new file's permissions (tls: 0600, as the file holds what a process encrypted).
tl::expected<CommandOutput, int> open_output(const OutputOptions& o, mode_t mode = 0644);

}  // namespace uscope::cli
