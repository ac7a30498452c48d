#include "sink/dump_output.h"

#include <fmt/format.h>

#include <iterator>

namespace uscope {

std::string dump_text(const ThreadDump& d) {
  std::string text;
  auto out = std::back_inserter(text);
  fmt::format_to(out, "Process {}: {}\n", d.pid, d.command_line);
  for (const auto& r : d.runtimes) fmt::format_to(out, "{}\n", r);
  for (const DumpedThread& t : d.threads) {
    fmt::format_to(out, "\nThread {}{} ({}): {}{}{}\n", t.tid,
                   t.name ? fmt::format(" \"{}\"", *t.name) : "", t.comm, t.state,
                   t.holds_gil ? ", holds the GIL" : "", t.kind.empty() ? "" : ", " + t.kind);
    if (t.native_not_read)
      fmt::format_to(out, "    [native frames not read: the thread is running]\n");
    for (const auto& f : t.frames) fmt::format_to(out, "    {}\n", f);
  }
  return text;
}

}  // namespace uscope
