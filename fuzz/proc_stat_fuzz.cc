// /proc/PID/stat: the command name inside its parentheses is the target's choice (prctl
// PR_SET_NAME: up to 15 bytes, any but NUL, ')' , ' ' and '\n' included), the rest the kernel's.
// Two inputs in one: the whole input as stat text (any bytes must parse or be refused), and a
// kernel-shaped line around a comm taken from the input, whose CPU times must be read exactly.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "discover/process.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const long ticks = 1 + data[0];
  std::string_view text(reinterpret_cast<const char*>(data + 1), size - 1);
  if (auto t = uscope::parse_proc_stat_cpu_time(text, ticks)) {
    volatile uint64_t sink = t->user_ns + t->system_ns;
    (void)sink;
  }

  // The comm: the input's first 15 bytes up to a NUL, as the kernel would store it.
  std::string comm(text.substr(0, std::min<size_t>(text.size(), 15)));
  comm = comm.substr(0, comm.find('\0'));
  const uint64_t utime = 1234, stime = 56;
  const std::string line = "4242 (" + comm + ") R 1 4242 4242 0 -1 4194304 100 0 0 0 " +
                           std::to_string(utime) + " " + std::to_string(stime) +
                           " 0 0 20 0 1 0 99 1000 10 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 "
                           "0 17 1 0 0 0 0 0\n";
  auto t = uscope::parse_proc_stat_cpu_time(line, ticks);
  if (!t) __builtin_trap();
  const uint64_t ns_per_tick = 1'000'000'000 / static_cast<uint64_t>(ticks);
  if (t->user_ns != utime * ns_per_tick || t->system_ns != stime * ns_per_tick) __builtin_trap();
  return 0;
}
