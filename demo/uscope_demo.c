// A small "order service" to try uscope on: named functions with arguments worth seeing, and USDT
// probes (one guarded by a semaphore, so it costs nothing until a tracer attaches).
#define _GNU_SOURCE
#define _SDT_HAS_SEMAPHORES 1
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sdt.h>
#include <time.h>
#include <unistd.h>

// USDT semaphores (dtrace -G style): the kernel raises one while a uprobe with a ref_ctr is
// attached to its probe. order__done checks its own to skip work nobody watches.
__extension__ unsigned short demo_order__start_semaphore __attribute__((unused))
__attribute__((section(".probes")));
__extension__ unsigned short demo_order__done_semaphore __attribute__((unused))
__attribute__((section(".probes")));

#define ORDER_DONE_ENABLED() __builtin_expect(demo_order__done_semaphore, 0)

static const char* const kItems[] = {"espresso", "flat white", "croissant", "bagel", "tea"};

__attribute__((noinline)) long price_of(const char* item, size_t len) {
  long cents = 150;
  for (size_t i = 0; i < len; ++i) cents += (unsigned char)item[i] % 7;
  return cents;
}

__attribute__((noinline)) long process_order(int id, const char* item, size_t len, int quantity) {
  DTRACE_PROBE3(demo, order__start, id, item, quantity);
  long total = price_of(item, len) * quantity;
  if (ORDER_DONE_ENABLED()) {
    // Work only worth doing when someone watches: formatting a summary.
    char summary[64];
    snprintf(summary, sizeof(summary), "%d x %s", quantity, item);
    DTRACE_PROBE3(demo, order__done, id, summary, total);
  }
  return total;
}

int main(int argc, char** argv) {
  // uscope-demo [ORDERS] [INTERVAL_MS]: 0 orders = run until killed.
  long orders = argc > 1 ? strtol(argv[1], NULL, 10) : 0;
  long interval_ms = argc > 2 ? strtol(argv[2], NULL, 10) : 100;
  long revenue = 0;
  // Reading the menu once faults its page in: uprobes cannot fault, and a string on a page the
  // process never touched reads as empty (uscope counts it as unreadable memory).
  size_t menu_bytes = 0;
  for (size_t i = 0; i < sizeof(kItems) / sizeof(kItems[0]); ++i) menu_bytes += strlen(kItems[i]);
  if (menu_bytes == 0) return 1;
  for (long i = 0; orders == 0 || i < orders; ++i) {
    const char* item = kItems[i % (sizeof(kItems) / sizeof(kItems[0]))];
    revenue += process_order((int)i, item, strlen(item), (int)(i % 3) + 1);
    if (interval_ms > 0) {
      struct timespec ts = {interval_ms / 1000, (interval_ms % 1000) * 1000000L};
      nanosleep(&ts, NULL);
    }
  }
  printf("revenue %ld\n", revenue);
  return 0;
}
