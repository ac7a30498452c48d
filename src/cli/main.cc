#include <fmt/core.h>
#include <signal.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cerrno>
#include <exception>
#include <optional>
#include <string>
#include <vector>

#include "cli/command.h"
#include "discover/launched_command.h"
#include "util/names.h"
#include "util/output_closed.h"
#include "util/version.h"

namespace uscope::cli {

namespace {

// A command line whose first word names no command: say which word and what the commands are,
// where CLI11 only says that one is required.
std::optional<int> report_unknown_command(CLI::App& app, int argc, char** argv) {
  if (!app.get_subcommands().empty()) return std::nullopt;
  std::vector<std::string> names;
  for (const CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; }))
    names.push_back(sub->get_name());
  const std::string commands = join(names);
  for (int i = 1; i < argc; ++i) {
    std::string word = argv[i];
    if (word.starts_with('-')) continue;
    auto close = closest_names(word, names, 1);
    return report_error(
        fmt::format("unknown command '{}'{}: the commands are {} (uscope COMMAND "
                    "--help says what one does)",
                    word, close.empty() ? "" : fmt::format(" (did you mean {}?)", close[0]),
                    commands),
        kExitUsage);
  }
  return report_error(
      fmt::format("name a command: {} (uscope COMMAND --help says what one does)", commands),
      kExitUsage);
}

}  // namespace

}  // namespace uscope::cli

int main(int argc, char** argv) {
  using namespace uscope::cli;
  // Before anything blocks a signal: a -c command starts with the mask uscope was started with.
  uscope::LaunchedCommand::remember_start_state();
  // A closed stdout or stderr (`| head`, `2>&1 | head`) becomes EPIPE, which ends the command
  // quietly through the stack (util/output_closed.h): a kill would skip the destructors.
  signal(SIGPIPE, SIG_IGN);
  CLI::App app{"uscope: instrument and profile user-space programs with eBPF"};
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string("uscope ") + uscope::kUscopeVersion);
  Run run;
  add_list_command(app, run);
  add_check_command(app, run);
  add_trace_command(app, run);
  add_count_command(app, run);
  add_latency_command(app, run);
  add_hist_command(app, run);
  add_profile_command(app, run);
  add_top_command(app, run);
  add_memleak_command(app, run);
  add_http_command(app, run);
  add_tls_command(app, run);
  add_stat_command(app, run);
  add_gc_command(app, run);
  add_threads_command(app, run);
  add_calls_command(app, run);
  add_flow_command(app, run);
  add_objnew_command(app, run);
  add_dump_command(app, run);
  add_agent_command(app, run);
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    if (auto code = report_unknown_command(app, argc, argv)) return *code;
    app.exit(e);
    return kExitUsage;
  }
  try {
    return run ? run() : kExitUsage;
  } catch (const std::exception& e) {
    // The reader went away (`| head`): the stack has unwound through every detach, and nobody is
    // reading what could be said about it.
    if (uscope::is_output_closed(e)) return kExitOk;
    return report_error(e.what());
  }
}
