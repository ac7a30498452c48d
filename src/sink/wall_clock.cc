#include "sink/wall_clock.h"

#include <fmt/core.h>
#include <time.h>

namespace uscope {

int64_t realtime_minus_monotonic_ns() {
  timespec rt{}, mono{};
  clock_gettime(CLOCK_REALTIME, &rt);
  clock_gettime(CLOCK_MONOTONIC, &mono);
  return (rt.tv_sec - mono.tv_sec) * 1'000'000'000LL + (rt.tv_nsec - mono.tv_nsec);
}

std::string local_clock_text(int64_t unix_ns) {
  const time_t s = static_cast<time_t>(unix_ns / 1'000'000'000);
  tm local{};
  localtime_r(&s, &local);
  return fmt::format("{:02}:{:02}:{:02}.{:03}", local.tm_hour, local.tm_min, local.tm_sec,
                     (unix_ns / 1'000'000) % 1000);
}

}  // namespace uscope
