// CPU-bound target for bench/profile.py: a fixed amount of work on a known stack, built with frame
// pointers, timing itself so a profiler's cost shows as its slowdown.
//
//   profile_target N [--gated]
//       Runs N rounds of main -> outer -> middle -> inner (a few ns of arithmetic per inner call),
//       then prints "wall_ns=W cpu_ns=C" for the loop: its own clock_gettime (CLOCK_MONOTONIC and
//       CLOCK_PROCESS_CPUTIME_ID, which also counts the sampling interrupts charged to it).
//       --gated: print "ready PID" and read one byte from stdin before the loop (so a profiler can
//       attach with -p), and read to EOF after printing (so the profiler is stopped while the
//       process is still alive, and its end of sampling is the bench's to choose).
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double clock_ns(clockid_t id) {
  struct timespec ts;
  clock_gettime(id, &ts);
  return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

// noinline: each level stays a frame of its own at -O2. inner's accumulator lives on the stack:
// gcc 12 sets up no frame pointer in a leaf that needs no stack, even with -fno-omit-frame-pointer,
// and a frame-pointer walk from such a leaf skips its caller (main;outer;inner, no middle).
__attribute__((noinline)) unsigned long inner(unsigned long x) {
  volatile unsigned long acc = x;
  for (int i = 0; i < 64; ++i) acc = acc * 6364136223846793005UL + 1442695040888963407UL;
  return acc;
}

__attribute__((noinline)) unsigned long middle(unsigned long x) {
  for (int i = 0; i < 16; ++i) x ^= inner(x + (unsigned long)i);
  return x;
}

__attribute__((noinline)) unsigned long outer(unsigned long x) {
  for (int i = 0; i < 16; ++i) x += middle(x ^ (unsigned long)i);
  return x;
}

int main(int argc, char** argv) {
  if (argc < 2 || argc > 3 || (argc == 3 && strcmp(argv[2], "--gated") != 0)) {
    fprintf(stderr, "usage: profile_target N [--gated]\n");
    return 2;
  }
  long n = strtol(argv[1], NULL, 10);
  int gated = argc == 3;
  char byte;
  if (gated) {
    printf("ready %d\n", (int)getpid());
    fflush(stdout);
    if (read(0, &byte, 1) != 1) return 2;
  }
  volatile unsigned long sink = 0;
  double c0 = clock_ns(CLOCK_PROCESS_CPUTIME_ID), t0 = clock_ns(CLOCK_MONOTONIC);
  for (long i = 0; i < n; ++i) sink += outer((unsigned long)i);
  double t1 = clock_ns(CLOCK_MONOTONIC), c1 = clock_ns(CLOCK_PROCESS_CPUTIME_ID);
  printf("wall_ns=%.0f cpu_ns=%.0f\n", t1 - t0, c1 - c0);
  fflush(stdout);
  if (gated)
    while (read(0, &byte, 1) > 0) {
    }
  return 0;
}
