// `uscope list`: what can be probed in a file, a library or a running process — functions with
// addresses, file offsets, sizes and bindings, and USDT probes with locations, semaphores and
// argument specs (as written and as parsed). Matching and entry sites come from the planner, so
// what list shows is what trace attaches. `list --info` says what one object is instead: its
// symbol tables and DWARF, and for a Go program its version, modules and build settings.
#include <fmt/core.h>
#include <sys/stat.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "cli/command.h"
#include "cli/output_options.h"
#include "discover/elf_file.h"
#include "discover/library_names.h"
#include "discover/object_info.h"
#include "discover/object_store.h"
#include "discover/object_unwind_table.h"
#include "discover/process.h"
#include "discover/symbol_table.h"
#include "discover/target.h"
#include "discover/usdt.h"
#include "plan/planner.h"
#include "sink/list_output.h"
#include "sink/object_info_output.h"
#include "sink/profile_writers.h"
#include "util/names.h"
#include "util/progress_line.h"

namespace uscope::cli {

namespace {

struct ListOptions {
  pid_t pid = 0;
  std::vector<std::string> positionals;  // [TARGET] [PATTERN]
  OutputOptions output;
  bool only_functions = false;
  bool only_usdt = false;
  bool info = false;
};

// "provider:name" selects USDT probes; "ns::f*" is a C++ function name.
bool is_usdt_pattern(const std::string& pattern) {
  return pattern.find(':') != std::string::npos && pattern.find("::") == std::string::npos;
}

// A pattern with ':' is a USDT provider:name glob; otherwise it matches function names and USDT
// probe names.
bool usdt_matches(const std::string& pattern, const UsdtProbe& p) {
  if (pattern.empty()) return true;
  if (is_usdt_pattern(pattern)) return glob_match(pattern, p.provider + ":" + p.name);
  return glob_match(pattern, p.name);
}

// With -p, does the one word name a target (an object the process maps) rather than a pattern?
// A file that exists, a path the process maps (a deleted file), a library it maps by short name,
// and a word written as a path ("/x", "./x", "../x": an error naming what is mapped, if it is not)
// are targets; anything else is a pattern, Go's "net/http.*" and "main.(*T).Get" included.
bool names_a_target(const std::string& word, const Process& process) {
  if (word.starts_with('/') || word.starts_with("./") || word.starts_with("../")) return true;
  struct stat st {};
  if (stat(word.c_str(), &st) == 0) return true;
  for (const auto& o : process.objects())
    if (o.path == word) return true;
  return !has_glob_chars(word) && is_library_short_name(word) &&
         static_cast<bool>(resolve_library(word, process));
}

// Splits the positionals into target and pattern. Without -p, one word is the target; with -p,
// one word is a target only when names_a_target says so.
void split_positionals(const ListOptions& o, const Process* process, std::string& target,
                       std::string& pattern) {
  const auto& pos = o.positionals;
  if (pos.size() >= 2) {
    target = pos[0];
    pattern = pos[1];
  } else if (pos.size() == 1) {
    (!process || names_a_target(pos[0], *process) ? target : pattern) = pos[0];
  }
}

// `list --info [-p PID] [TARGET]`: one object (the process's program when no TARGET is named).
int run_info(const ListOptions& o, CommandOutput& output, const Process* process) {
  if (o.positionals.size() > 1)
    return report_error("list --info takes one TARGET and no pattern", kExitUsage);
  if (o.only_functions || o.only_usdt)
    return report_error("list --info describes the whole object: drop --functions/--usdt",
                        kExitUsage);
  const std::string target = o.positionals.empty() ? "" : o.positionals[0];
  if (!process && target.empty())
    return report_error("name a file or library to describe, or give -p PID", kExitUsage);
  auto ref = resolve_object(target, process);
  if (!ref) return report_error(ref.error().message);
  auto obj = ObjectStore::shared()->open(ref->open_path, ref->display_path);
  if (!obj) return report_error(obj.error().message);
  auto info = describe_object((*obj)->elf());
  if (!info) return report_error(info.error().message);
  UnwindCache cache = UnwindCache::open_default();
  info->unwind = describe_unwind_table(**obj, &cache);
  print_object_info(*info, output.format, output.file.get());
  if (auto r = output.file.close(); !r) return report_error(r.error().message);
  return kExitOk;
}

int run_list(const ListOptions& o) {
  if (o.positionals.size() > 2)
    return report_error(
        fmt::format("list takes at most a TARGET and one PATTERN, not {} words ({}): write "
                    "uscope list [-p PID] [TARGET] [PATTERN], e.g. uscope list "
                    "/usr/bin/python3.11 'PyEval_*'",
                    o.positionals.size(), join(o.positionals, " ")),
        kExitUsage);
  auto output = open_output(o.output);
  if (!output) return output.error();
  std::optional<Process> process;
  if (o.pid) {
    auto p = Process::open(o.pid);
    if (!p) return report_error(p.error().message);
    process = std::move(*p);
  }
  if (o.info) return run_info(o, *output, process ? &*process : nullptr);
  std::string target, pattern;
  split_positionals(o, process ? &*process : nullptr, target, pattern);
  if (!process && target.empty())
    return report_error("name a file or library to list, or give -p PID", kExitUsage);

  std::vector<ObjectRef> objects;
  if (process && target.empty()) {
    objects = process_objects(*process);
  } else {
    auto ref = resolve_object(target, process ? &*process : nullptr);
    if (!ref) return report_error(ref.error().message);
    objects.push_back(std::move(*ref));
  }
  bool usdt_only_pattern = is_usdt_pattern(pattern);
  bool want_functions = !o.only_usdt && !usdt_only_pattern;
  bool want_usdt = !o.only_functions;

  ListPrinter printer(output->format, output->file.get());
  std::vector<std::string> all_names;  // for "closest" suggestions when nothing matched
  size_t matched = 0;
  TargetContext ctx{process ? &*process : nullptr, "", 0};
  ProgressLine progress;
  for (const auto& ref : objects) {
    // One object at a time: a process maps hundreds, and each is printed before the next opens.
    ObjectCache cache(ctx);
    auto obj = cache.open(ref);
    if (!obj) {
      if (process && objects.size() > 1) {
        if (!process_alive(process->pid()))
          return report_error(fmt::format("process {} exited during the scan", process->pid()));
        continue;  // a mapped non-ELF file (locale archive, font cache, ...)
      }
      return report_error(obj.error().message);
    }
    const ElfFile& elf = (*obj)->elf;
    ListedObject listed;
    listed.path = ref.display_path;
    listed.pie = elf.is_pie();
    listed.shared_library = elf.is_shared_library();
    listed.build_id = elf.build_id();
    if (want_functions) {
      auto syms = cache.symbols(**obj);
      if (!syms) return report_error(syms.error().message);
      if (pattern.empty()) {
        for (const auto& f : (*syms)->functions()) listed.functions.push_back(&f);
      } else {
        listed.functions = functions_named(**syms, pattern);
      }
      if (!pattern.empty() && listed.functions.empty()) {
        auto names = (*syms)->names();
        all_names.insert(all_names.end(), names.begin(), names.end());
      }
      // Planning each entry site is the long part of a big object (seconds for 63,000 Go
      // functions): say how far it is on a terminal.
      const size_t total = listed.functions.size();
      for (const auto* f : listed.functions) {
        if (progress.due())
          progress.show(fmt::format("reading {}: {} of {} functions", ref.display_path,
                                    grouped(listed.entry_sites.size()), grouped(total)));
        listed.entry_sites.push_back(listed_entry_site(**obj, *f));
      }
      progress.clear();
      matched += listed.functions.size();
      if (!pattern.empty() && (*obj)->is_go) {
        auto copies = inlined_sites(**obj, pattern);
        if (!copies) return report_error(copies.error().message);
        for (auto& m : *copies) {
          listed.inlined_sites.push_back(place_site(m, ProbeKind::Entry, SiteReads{}, false));
          listed.inlined.push_back(std::move(m));
        }
        matched += listed.inlined.size();
      }
    }
    if (want_usdt) {
      auto probes = cache.usdt(**obj);
      if (!probes) return report_error(probes.error().message);
      for (const auto& p : **probes) {
        if (usdt_matches(pattern, p)) {
          std::vector<SitePlacement> sites;
          for (const auto& l : p.locations) sites.push_back(listed_usdt_site(**obj, p, l));
          listed.usdt_sites.push_back(std::move(sites));
          listed.probes.push_back(&p);
        } else if (!pattern.empty()) {
          all_names.push_back(p.provider + ":" + p.name);
        }
      }
      matched += listed.probes.size();
    }
    printer.print(listed);
  }
  if (matched == 0) {
    std::string what = usdt_only_pattern ? "USDT probe"
                       : want_usdt       ? "function or USDT probe"
                                         : "function";
    std::string where =
        objects.size() == 1 ? objects[0].display_path : fmt::format("process {}", o.pid);
    if (pattern.empty()) return report_error(fmt::format("{} has no {}s", where, what));
    std::sort(all_names.begin(), all_names.end());
    all_names.erase(std::unique(all_names.begin(), all_names.end()), all_names.end());
    auto close = closest_names(pattern, all_names);
    return report_error(fmt::format("no {} matches '{}' in {}{}{}", what, pattern, where,
                                    close.empty() ? "" : "; closest: ", join(close)));
  }
  printer.finish();
  // A full disk shows only at the flush: say so rather than exit 0 with a cut file.
  if (auto r = output->file.close(); !r) return report_error(r.error().message);
  return kExitOk;
}

}  // namespace

// What `uscope list --help` ends with; man uscope-list is made from that help, and
// docs/list.md shows the same examples (tests/e2e/help_test.cc checks both).
constexpr const char* kListExamples = R"(Examples:
  uscope list /usr/bin/python3.11
      functions and USDT probes of one file
  uscope list /usr/bin/python3.11 'python:*'
      only the USDT probes whose provider:name matches
  uscope list libssl 'SSL_*'
      a library by short name (ld.so.cache), functions matching a glob
  uscope list -p PID
      every object mapped into a process
  uscope list -p PID 'SSL_read*'
      a glob over the function names of all of them
  uscope list -p PID c malloc
      one mapped library by short name
  uscope list --info ./goapp
      what a file is: symbol tables, DWARF; Go version, modules, build settings
  uscope list --json /usr/bin/redis-server
      JSON Lines, one object per function or probe

Reference: docs/list.md)";

void add_list_command(CLI::App& app, Run& run) {
  auto opts = std::make_shared<ListOptions>();
  auto* cmd = app.add_subcommand(
      "list",
      "List the functions and USDT probes of a file, a library or a process. ENTRY PROBE SITE is "
      "where trace attaches a p: probe of the function that reads all six argument registers "
      "and memory (planned as trace plans it); probes reading less, and count and latency, may "
      "sit further into the prologue, never before it. With --info: what the object is instead "
      "(symbol tables, DWARF; for Go its version, ABI, modules and build settings)");
  cmd->add_option("-p,--pid", opts->pid, "List every object mapped into process PID");
  cmd->add_option("target_pattern", opts->positionals,
                  "[TARGET] [PATTERN]: a path or library short name (c, ssl, libssl.so.3), then a "
                  "glob over function names or USDT provider:name")
      ->expected(0, -1);  // more than two: run_list says what list takes
  add_output_options(cmd, opts->output, "JSON Lines, one object per function or probe");
  cmd->add_flag("--functions", opts->only_functions, "Only functions");
  cmd->add_flag("--usdt", opts->only_usdt, "Only USDT probes");
  cmd->add_flag("--info", opts->info,
                "Describe TARGET (with -p alone: the process's program) instead of listing: "
                "symbol tables, DWARF, and for a Go program its Go version, register or stack "
                "ABI, main package and module, dependencies (with replacements), build settings "
                "and .gopclntab functions, as `go version -m` shows them; --json: one object");
  add_examples(cmd, kListExamples);
  cmd->callback([&run, opts] { run = [opts] { return run_list(*opts); }; });
}

}  // namespace uscope::cli
