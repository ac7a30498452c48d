#pragma once
// Error handling shared by every stage: functions that can fail return Result<T>; a miss that is
// not an error (no symbols, unknown address) is modelled by the caller's own types instead.
//
// tl::expected rather than std::expected: the libFuzzer targets are built with clang 14, which
// cannot compile libstdc++ 12's <expected> (it needs C++20 concepts clang 14 does not claim).
#include <fmt/format.h>

#include <string>
#include <tl/expected.hpp>
#include <utility>

namespace uscope {

struct Error {
  std::string message;  // one line, names what was wrong and, where known, what would work
  int errnum = 0;       // errno when a system call failed, else 0

  std::string what() const { return message; }
};

template <class T>
using Result = tl::expected<T, Error>;

template <class... Args>
tl::unexpected<Error> fail(fmt::format_string<Args...> f, Args&&... args) {
  return tl::unexpected(Error{fmt::format(f, std::forward<Args>(args)...), 0});
}

template <class... Args>
tl::unexpected<Error> fail_errno(int errnum, fmt::format_string<Args...> f, Args&&... args) {
  return tl::unexpected(Error{fmt::format(f, std::forward<Args>(args)...), errnum});
}

// Adds context in front of an error's message, keeping its errno.
inline tl::unexpected<Error> with_context(const std::string& context, const Error& e) {
  return tl::unexpected(Error{context + ": " + e.message, e.errnum});
}

}  // namespace uscope
