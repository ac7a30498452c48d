#include "collect/ring_reader.h"

#include <bpf/libbpf.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>

namespace uscope {

namespace {
// Returned by the sample callback once the budget is used: libbpf 1.1 then stores the consumer
// position past this sample and returns it (ringbuf_process_ring()), so nothing is lost or seen
// twice. Any negative value does; this one is never reported as an error.
constexpr int kBudgetUsed = -ECANCELED;
}  // namespace

void RingReader::RingDeleter::operator()(ring_buffer* r) const {
  ring_buffer__free(r);
}

RingReader::RingReader(std::unique_ptr<State> state, std::unique_ptr<ring_buffer, RingDeleter> ring)
    : state_(std::move(state)), ring_(std::move(ring)) {}
RingReader::RingReader(RingReader&&) noexcept = default;
RingReader& RingReader::operator=(RingReader&&) noexcept = default;
RingReader::~RingReader() = default;

Result<RingReader> RingReader::open(int ringbuf_fd, Handler handler) {
  if (ringbuf_fd < 0) return fail("cannot open the ring buffer: no such map");
  auto state = std::make_unique<State>();
  state->handler = std::move(handler);
  state->budget = SIZE_MAX;
  std::unique_ptr<ring_buffer, RingDeleter> ring(
      ring_buffer__new(ringbuf_fd, &RingReader::on_sample, state.get(), nullptr));
  if (!ring) return fail_errno(errno, "cannot open the ring buffer: {}", std::strerror(errno));
  return RingReader(std::move(state), std::move(ring));
}

int RingReader::on_sample(void* ctx, void* data, size_t size) {
  auto* state = static_cast<State*>(ctx);
  state->handler(data, size);
  if (state->budget != SIZE_MAX && --state->budget == 0) return kBudgetUsed;
  return 0;
}

Result<void> RingReader::add(int ringbuf_fd, Handler handler) {
  if (ringbuf_fd < 0) return fail("cannot open the ring buffer: no such map");
  auto extra = std::make_unique<Extra>(Extra{state_.get(), std::move(handler)});
  if (int err =
          ring_buffer__add(ring_.get(), ringbuf_fd, &RingReader::on_extra_sample, extra.get()))
    return fail_errno(-err, "cannot open the ring buffer: {}", std::strerror(-err));
  extras_.push_back(std::move(extra));
  return {};
}

int RingReader::on_extra_sample(void* ctx, void* data, size_t size) {
  auto* extra = static_cast<Extra*>(ctx);
  extra->handler(data, size);
  State* state = extra->shared;
  if (state->budget != SIZE_MAX && --state->budget == 0) return kBudgetUsed;
  return 0;
}

int RingReader::epoll_fd() const {
  return ring_buffer__epoll_fd(ring_.get());
}

Result<ConsumeResult> RingReader::consume(size_t max_records) {
  if (max_records == 0) return ConsumeResult{};
  const size_t budget = std::min(max_records, SIZE_MAX - 1);
  state_->budget = budget;
  int n = ring_buffer__consume(ring_.get());
  size_t handed = budget - state_->budget;
  state_->budget = SIZE_MAX;
  if (n == kBudgetUsed) return ConsumeResult{handed, true};
  if (n < 0) return fail_errno(-n, "reading the ring buffer: {}", std::strerror(-n));
  return ConsumeResult{handed, false};
}

Result<size_t> RingReader::consume_all() {
  state_->budget = SIZE_MAX;
  int n = ring_buffer__consume(ring_.get());
  if (n < 0) return fail_errno(-n, "reading the ring buffer: {}", std::strerror(-n));
  return static_cast<size_t>(n);
}

}  // namespace uscope
