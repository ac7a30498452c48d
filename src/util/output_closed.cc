#include "util/output_closed.h"

#include <cerrno>
#include <system_error>

namespace uscope {

void throw_if_output_closed(int errnum) {
  if (errnum == EPIPE) throw OutputClosed();
}

bool is_output_closed(const std::exception& e) {
  if (dynamic_cast<const OutputClosed*>(&e)) return true;
  const auto* s = dynamic_cast<const std::system_error*>(&e);
  return s && s->code() == std::errc::broken_pipe;
}

}  // namespace uscope
