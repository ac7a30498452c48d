#include "cli/output_options.h"

#include "cli/command.h"

namespace uscope::cli {

namespace {
constexpr OutputFormat kRowFormats[] = {OutputFormat::Text, OutputFormat::Json};
}  // namespace

void add_output_options(CLI::App* cmd, OutputOptions& o, const std::string& json_help) {
  cmd->add_option("--format", o.format, "Output format: text (default) or json (" + json_help + ")")
      ->type_name("FORMAT");
  cmd->add_option("-o,--output", o.path,
                  "Write to FILE (created mode 0644, or truncated) instead of stdout; a .json or "
                  ".jsonl name means --format json, .txt or .log text")
      ->type_name("FILE");
  cmd->add_flag("--json", o.json, "Same as --format json");
}

tl::expected<CommandOutput, int> open_output(const OutputOptions& o, mode_t mode) {
  std::string flag = o.format;
  if (o.json) {
    if (!flag.empty() && flag != "json")
      return tl::unexpected(report_error(
          "--json means --format json, not --format " + flag + ": give one of them", kExitUsage));
    flag = "json";
  }
  std::string path = o.path == "-" ? "" : o.path;
  auto format = choose_format(flag, path, kRowFormats, OutputFormat::Text);
  if (!format) return tl::unexpected(report_error(format.error().message, kExitUsage));
  auto file = OutputFile::open(path, mode);
  if (!file) return tl::unexpected(report_error(file.error().message));
  return CommandOutput{*format, std::move(*file)};
}

}  // namespace uscope::cli
