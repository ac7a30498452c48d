#include <unistd.h>

#include <cerrno>
#include <string>

#include "cli/command.h"

namespace uscope::cli {

int report_error(const std::string& message, int code) noexcept {
  // write(2), not stdio: it cannot throw, and a stderr whose reader went away (`2>&1 | head`)
  // must not turn the error being reported into an abort. What it fails to write is lost.
  try {
    std::string line = "uscope: " + message + "\n";
    for (size_t at = 0; at < line.size();) {
      ssize_t n = ::write(STDERR_FILENO, line.data() + at, line.size() - at);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      at += static_cast<size_t>(n);
    }
  } catch (...) {  // std::bad_alloc: nothing more can be said
  }
  return code;
}

}  // namespace uscope::cli
