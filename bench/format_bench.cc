// Formatting throughput: DecodedEvents of one `"%d %s", arg1, str(arg2)` probe formatted as text
// or JSON Lines into an OutputBuffer written to a file, as `uscope trace` does. Prints events/s.
//
//   format_bench text|json FILE [N]
#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "plan/recipe.h"
#include "sink/trace_output.h"

int main(int argc, char** argv) {
  using namespace uscope;
  if (argc < 3) {
    std::fprintf(stderr, "usage: format_bench text|json FILE [N]\n");
    return 2;
  }
  bool json = std::strcmp(argv[1], "json") == 0;
  long n = argc > 3 ? std::atol(argv[3]) : 5'000'000;
  int fd = open(argv[2], O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return 1;
  TracePlan plan;
  ProbePlan p;
  auto spec = parse_probe_spec(R"(p:c:malloc "size=%d tag=%s", arg1, str(arg2))");
  if (!spec) return 1;
  p.spec = *spec;
  p.label = "malloc";
  plan.probes.push_back(p);
  OutputBuffer out(fd);
  TraceColumns columns;
  columns.time = TraceColumns::Time::Clock;  // the wall-time column the text had before -T
  TraceOutput output(plan, json ? OutputFormat::Json : OutputFormat::Text, out, columns);
  DecodedEvent ev;
  ev.header.tgid = 4242;
  ev.header.tid = 4243;
  ev.header.cpu = 1;
  std::memcpy(ev.header.comm, "bench_target", 13);
  ev.values.resize(2);
  ev.n_values = 2;
  ev.values[1].is_string = true;
  ev.values[1].text = "request-handler";
  auto t0 = std::chrono::steady_clock::now();
  for (long i = 0; i < n; ++i) {
    ev.header.ts = 1'000'000'000ull + static_cast<uint64_t>(i) * 1000;  // 1 M events/s of time
    ev.values[0].number = static_cast<uint64_t>(i & 1023);
    output.event(ev);
    if (!out.has_room()) out.write_ready();
  }
  out.flush_until(std::chrono::steady_clock::now() + std::chrono::seconds(10));
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("format=%s events=%ld seconds=%.3f events_per_s=%.0f ns_per_event=%.1f\n", argv[1], n,
              s, n / s, s * 1e9 / n);
  close(fd);
  return 0;
}
