#pragma once
// Each subcommand lives in its own file and registers itself on the root CLI11 app; the callback
// it returns runs after parsing and gives the exit code.
#include <CLI/CLI.hpp>

#include <functional>
#include <string>

namespace uscope::cli {

using Run = std::function<int()>;

// Exit codes shared by every subcommand.
inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;  // the target or the kernel said no
inline constexpr int kExitUsage = 2;    // the command line was wrong

void add_list_command(CLI::App& app, Run& run);
void add_check_command(CLI::App& app, Run& run);
void add_trace_command(CLI::App& app, Run& run);
void add_count_command(CLI::App& app, Run& run);
void add_latency_command(CLI::App& app, Run& run);
void add_hist_command(CLI::App& app, Run& run);
void add_profile_command(CLI::App& app, Run& run);
void add_top_command(CLI::App& app, Run& run);
void add_memleak_command(CLI::App& app, Run& run);
void add_http_command(CLI::App& app, Run& run);
void add_tls_command(CLI::App& app, Run& run);
void add_stat_command(CLI::App& app, Run& run);
void add_gc_command(CLI::App& app, Run& run);
void add_threads_command(CLI::App& app, Run& run);
void add_calls_command(CLI::App& app, Run& run);
void add_objnew_command(CLI::App& app, Run& run);
void add_flow_command(CLI::App& app, Run& run);
void add_dump_command(CLI::App& app, Run& run);
void add_agent_command(CLI::App& app, Run& run);

// Ends a subcommand's --help with its examples, after the footer it has (bcc's tools end -h so).
inline void add_examples(CLI::App* cmd, const char* examples) {
  cmd->footer(cmd->get_footer().empty() ? std::string(examples)
                                        : cmd->get_footer() + "\n\n" + examples);
}

// Prints "uscope: <message>" to stderr and returns `code`; never throws, also when stderr is a
// pipe whose reader went away.
int report_error(const std::string& message, int code = kExitFailure) noexcept;

}  // namespace uscope::cli
