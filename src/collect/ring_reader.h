#pragma once
// Reading a BPF ring buffer in bounded batches: the records of one ringbuf map handed to a handler,
// at most a budget per consume(), so that a storm cannot keep the caller from its signals, timers
// and output. Used by every command whose BPF program writes records (trace, profile).
#include <cstddef>
#include <functional>
#include <memory>
#include <vector>

#include "util/result.h"

struct ring_buffer;  // libbpf

namespace uscope {

// What one bounded consume() did.
struct ConsumeResult {
  size_t records = 0;         // handed to the handler
  bool more_pending = false;  // the budget ran out: the ring may hold more, call again soon
};

class RingReader {
 public:
  // One record as the BPF side wrote it; valid only during the call.
  using Handler = std::function<void(const void* data, size_t size)>;

  // `ringbuf_fd` is a loaded BPF_MAP_TYPE_RINGBUF map's fd (BpfObject::map_fd).
  static Result<RingReader> open(int ringbuf_fd, Handler handler);
  RingReader(RingReader&&) noexcept;
  RingReader& operator=(RingReader&&) noexcept;
  ~RingReader();

  // Another ring read through the same epoll fd and budget, its records to `handler`.
  Result<void> add(int ringbuf_fd, Handler handler);

  // Readable when records are pending (and the BPF side woke the reader): for epoll/poll.
  int epoll_fd() const;
  // Hands out at most `max_records` records and returns.
  Result<ConsumeResult> consume(size_t max_records);
  // Everything in the ring now (after the programs are detached, when nothing more can arrive).
  Result<size_t> consume_all();

 private:
  // What the libbpf callback needs; on the heap, so that moving the reader keeps the pointer
  // libbpf holds valid.
  struct State {
    Handler handler;
    size_t budget = 0;  // records left in this consume(); SIZE_MAX: no limit
  };
  // An added ring: its own handler, the first ring's budget.
  struct Extra {
    State* shared;
    Handler handler;
  };
  struct RingDeleter {
    void operator()(ring_buffer* r) const;
  };
  RingReader(std::unique_ptr<State> state, std::unique_ptr<ring_buffer, RingDeleter> ring);
  static int on_sample(void* ctx, void* data, size_t size);
  static int on_extra_sample(void* ctx, void* data, size_t size);

  std::unique_ptr<State> state_;
  std::vector<std::unique_ptr<Extra>> extras_;
  std::unique_ptr<ring_buffer, RingDeleter> ring_;  // after state_: freed before it
};

}  // namespace uscope
