#include <fmt/core.h>
#include <signal.h>

#include <CLI/CLI.hpp>
#include <exception>

#include "cli/command.h"
#include "discover/launched_command.h"

namespace uscope::cli {

int report_error(const std::string& message, int code) {
  fmt::print(stderr, "uscope: {}\n", message);
  return code;
}

}  // namespace uscope::cli

int main(int argc, char** argv) {
  using namespace uscope::cli;
  // Before anything blocks a signal: a -c command starts with the mask uscope was started with.
  uscope::LaunchedCommand::remember_start_state();
  // A closed stdout (`| head`) becomes a write error that unwinds and detaches, not a silent kill.
  signal(SIGPIPE, SIG_IGN);
  CLI::App app{"uscope: instrument and profile user-space programs with eBPF"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "uscope 0.1");
  Run run;
  add_list_command(app, run);
  add_check_command(app, run);
  add_trace_command(app, run);
  add_count_command(app, run);
  add_latency_command(app, run);
  add_hist_command(app, run);
  add_profile_command(app, run);
  add_http_command(app, run);
  add_tls_command(app, run);
  add_stat_command(app, run);
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    app.exit(e);
    return kExitUsage;
  }
  try {
    return run ? run() : kExitUsage;
  } catch (const std::exception& e) {
    return report_error(e.what());
  }
}
