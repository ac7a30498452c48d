// Benchmark target for bench/run.py. The measurements are the target's own (clock_gettime around
// its loop), so they do not depend on what the tracer reports.
//
//   bench_target emulated|stepped|endbr N [--wait]
//       Calls one function N times in a tight loop and prints "ns_per_call=X calls=N", then
//       "cpu_ns=T": the process's CPU time over the loop (CLOCK_PROCESS_CPUTIME_ID, which counts
//       the uprobe traps: the kernel charges them to the thread that hit them).
//       --wait: read one byte from stdin first (so a tracer can attach with -p).
//   bench_target libc
//       Prints "ready", then serves commands read from stdin, one per line:
//         run SECONDS   calls a mix of libc functions for SECONDS and prints how many calls of each
//                       it made ("count NAME N" lines, then "done SECONDS_MEASURED")
//         quit          exits
//
// The three probe targets are written in assembly so their first instructions are exactly what
// the benchmark needs, whatever the compiler's defaults (CET, frame pointers):
//   bench_emulated  push %rbp first: the kernel emulates it (~1 us per hit on the reference VM)
//   bench_stepped   sub $8,%rsp first, no emulated instruction before the block ends: the kernel
//                   single-steps it (~16 us per hit) and uscope has no cheaper site to move to
//   bench_endbr     endbr64; push %rbp: endbr64 is single-stepped, uscope moves the probe to the
//                   emulated push at +4 (unless --no-move)
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

long bench_emulated(long x);
long bench_stepped(long x);
long bench_endbr(long x);

__asm__(
    ".text\n"
    ".globl bench_emulated\n"
    ".type bench_emulated, @function\n"
    ".p2align 4\n"
    "bench_emulated:\n"
    "  push %rbp\n"
    "  mov %rsp, %rbp\n"
    "  lea 1(%rdi), %rax\n"
    "  pop %rbp\n"
    "  ret\n"
    ".size bench_emulated, .-bench_emulated\n"
    "\n"
    ".globl bench_stepped\n"
    ".type bench_stepped, @function\n"
    ".p2align 4\n"
    "bench_stepped:\n"
    "  sub $8, %rsp\n"
    "  lea 1(%rdi), %rax\n"
    "  add $8, %rsp\n"
    "  ret\n"
    ".size bench_stepped, .-bench_stepped\n"
    "\n"
    ".globl bench_endbr\n"
    ".type bench_endbr, @function\n"
    ".p2align 4\n"
    "bench_endbr:\n"
    "  endbr64\n"
    "  push %rbp\n"
    "  mov %rsp, %rbp\n"
    "  lea 1(%rdi), %rax\n"
    "  pop %rbp\n"
    "  ret\n"
    ".size bench_endbr, .-bench_endbr\n");

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static double cpu_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static int usage(void) {
  fprintf(stderr,
          "usage: bench_target emulated|stepped|endbr N [--wait]\n"
          "       bench_target libc\n");
  return 2;
}

static int loop(const char* mode, long n) {
  volatile long sink = 0;
  long acc = 0;
  double c0 = cpu_ns();
  double t0 = now_s();
  // One loop per function: direct calls, nothing but the call in the loop body.
  if (strcmp(mode, "emulated") == 0) {
    for (long i = 0; i < n; ++i) acc += bench_emulated(i);
  } else if (strcmp(mode, "stepped") == 0) {
    for (long i = 0; i < n; ++i) acc += bench_stepped(i);
  } else if (strcmp(mode, "endbr") == 0) {
    for (long i = 0; i < n; ++i) acc += bench_endbr(i);
  } else {
    return usage();
  }
  double t1 = now_s();
  double c1 = cpu_ns();
  sink = acc;
  (void)sink;
  printf("ns_per_call=%.3f calls=%ld\ncpu_ns=%.0f\n", (t1 - t0) * 1e9 / (double)n, n, c1 - c0);
  return 0;
}

// The functions of the libc mix. Every call below is a real call into libc.so.6 (the file is built
// with -fno-builtin, and none of these has an inline version in glibc's headers).
enum { F_MALLOC, F_FREE, F_MEMCPY, F_STRLEN, F_STRTOL, F_RAND, F_GETPID, F_LABS, F_CLOCK, F_N };
static const char* const kNames[F_N] = {"malloc", "free",   "memcpy", "strlen",       "strtol",
                                        "rand",   "getpid", "labs",   "clock_gettime"};

static double libc_mix(double seconds, uint64_t counts[F_N]) {
  static const char kText[] = "12345 uscope benchmark text";
  volatile long sink = 0;
  struct timespec ts;
  memset(counts, 0, sizeof(uint64_t) * F_N);
  clock_gettime(CLOCK_MONOTONIC, &ts);
  ++counts[F_CLOCK];
  double start = (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
  double t = start;
  for (unsigned long i = 0;; ++i) {
    size_t size = sizeof kText + (i & 255);
    char* p = malloc(size);
    ++counts[F_MALLOC];
    if (p == NULL) abort();
    memcpy(p, kText, sizeof kText);
    ++counts[F_MEMCPY];
    long len = (long)strlen(p);
    ++counts[F_STRLEN];
    long v = strtol(p, NULL, 10);
    ++counts[F_STRTOL];
    free(p);
    ++counts[F_FREE];
    long r = rand();
    ++counts[F_RAND];
    long a = labs(v - r);
    ++counts[F_LABS];
    if ((i & 7) == 0) {
      sink += getpid();
      ++counts[F_GETPID];
    }
    sink += len + a;
    if ((i & 15) == 0) {
      clock_gettime(CLOCK_MONOTONIC, &ts);
      ++counts[F_CLOCK];
      t = (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
      if (t - start >= seconds) break;
    }
  }
  return t - start;
}

static int serve_libc(void) {
  // The first printf allocates stdout's buffer: do it before any tracer attaches.
  printf("ready %d\n", (int)getpid());
  fflush(stdout);
  char line[128];
  while (fgets(line, sizeof line, stdin) != NULL) {
    double seconds = 0;
    if (sscanf(line, "run %lf", &seconds) == 1) {
      uint64_t counts[F_N];
      double took = libc_mix(seconds, counts);
      // Counted before printing: printf itself calls into libc.
      for (int f = 0; f < F_N; ++f)
        printf("count %s %llu\n", kNames[f], (unsigned long long)counts[f]);
      printf("done %.6f\n", took);
      fflush(stdout);
    } else if (strncmp(line, "quit", 4) == 0) {
      return 0;
    } else {
      fprintf(stderr, "bench_target: unknown command: %s", line);
      return 2;
    }
  }
  return 0;
}

int main(int argc, char** argv) {
  if (argc == 2 && strcmp(argv[1], "libc") == 0) return serve_libc();
  if (argc < 3 || argc > 4) return usage();
  char* end = NULL;
  errno = 0;
  long n = strtol(argv[2], &end, 10);
  if (errno != 0 || *end != '\0' || n <= 0) return usage();
  if (argc == 4) {
    if (strcmp(argv[3], "--wait") != 0) return usage();
    char go;
    if (read(0, &go, 1) < 0) return 2;
  }
  return loop(argv[1], n);
}
