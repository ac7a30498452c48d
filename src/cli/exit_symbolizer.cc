#include "cli/exit_symbolizer.h"

#include <fmt/core.h>

#include <utility>
#include <vector>

namespace uscope::cli {

namespace {

SymbolizerOptions with_catch_up(std::function<void()> catch_up) {
  SymbolizerOptions o;
  o.catch_up = std::move(catch_up);
  return o;
}

}  // namespace

ExitSymbolizer::ExitSymbolizer()
    : symbolizer_(with_catch_up([this] {
        if (exits_) exits_->catch_up();
      })) {}

void ExitSymbolizer::follow_exits(pid_t pid, const std::string& started_as, const char* what) {
  if (exits_) return;
  if (pid > 0 && !started_as.empty()) symbolizer_.started_as(pid, started_as);
  auto e = ExitMaps::start(pid > 0 ? std::vector<pid_t>{pid} : std::vector<pid_t>{},
                           [this](Process last) { symbolizer_.adopt(std::move(last)); });
  if (!e) {
    fmt::print(stderr,
               "uscope: the maps of exiting processes cannot be kept ({}): {} of a process gone "
               "before they are read show [unknown: process gone]\n",
               e.error().message, what);
    return;
  }
  exits_ = std::move(*e);
}

void ExitSymbolizer::catch_up() {
  if (exits_) exits_->catch_up();
}

}  // namespace uscope::cli
