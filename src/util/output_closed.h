#pragma once
// The reader of uscope's output went away: `| head` read its lines and exited, `|& less` quit.
// A Unix tool dies of SIGPIPE then; uscope ignores SIGPIPE so that the write fails with EPIPE
// instead, and the write that meets it throws OutputClosed. main() catches it and exits 0 with no
// message (nobody is reading), after the stack has unwound through the destructors that detach
// every probe, stop the perf events and end a -c command.
//
// fmt::print on a FILE* reports the same failure as a std::system_error with EPIPE: that counts
// as a closed output too (is_output_closed), so the stderr lines of every command need no check of
// their own when `2>&1 | head` closes stderr with stdout.
#include <exception>

namespace uscope {

class OutputClosed : public std::exception {
 public:
  const char* what() const noexcept override { return "the output's reader went away"; }
};

// Throws OutputClosed when `errnum`, the errno of a failed write, says the reader went away.
void throw_if_output_closed(int errnum);

// An OutputClosed, or fmt's std::system_error for a write that failed with EPIPE.
bool is_output_closed(const std::exception& e);

}  // namespace uscope
