#include "util/output_buffer.h"

#include <limits.h>
#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "util/output_closed.h"

namespace uscope {

OutputBuffer::OutputBuffer(int fd, size_t soft_limit) : fd_(fd), soft_limit_(soft_limit) {
  struct stat st {};
  // A regular file never keeps a write() waiting for a reader; anything else may.
  chunked_ = !(fstat(fd, &st) == 0 && S_ISREG(st.st_mode));
  // Twice the limit: appends happen below it, a batch of events fits above it, and compaction
  // moves at most one limit's worth per limit's worth appended.
  cap_ = 2 * soft_limit_;
  data_.reset(new char[cap_]);
}

void OutputBuffer::make_room(size_t n) {
  size_t live = pending();
  if (live + n > cap_) {
    // Only a record larger than the spare half gets here: grow once, keep the new size.
    size_t cap = std::max(2 * cap_, live + n);
    std::unique_ptr<char[]> bigger(new char[cap]);
    copy_bytes(bigger.get(), data_.get() + begin_, live);
    data_ = std::move(bigger);
    cap_ = cap;
  } else {
    // Overlapping move towards the front: a forward copy is safe.
    char* d = data_.get();
    for (size_t i = 0; i < live; ++i) d[i] = d[begin_ + i];
  }
  begin_ = 0;
  end_ = live;
}

bool OutputBuffer::writable_now() const {
  pollfd p{fd_, POLLOUT, 0};
  return poll(&p, 1, 0) > 0;
}

void OutputBuffer::write_ready() {
  // Enough pieces per call to keep up with a fast reader, few enough to return to the loop soon.
  constexpr int kMaxPieces = 64;
  for (int piece = 0; piece < kMaxPieces && pending() > 0 && !failed_; ++piece) {
    if (piece > 0 && chunked_ && !writable_now()) break;
    size_t n = pending();
    const char* p = data_.get() + begin_;
    if (chunked_ && n > PIPE_BUF) {
      n = PIPE_BUF;
      // End the piece at a line end; a line longer than PIPE_BUF cannot be atomic anyway.
      size_t cut = n;
      while (cut > 0 && p[cut - 1] != '\n') --cut;
      if (cut > 0) n = cut;
    }
    ssize_t w = ::write(fd_, p, n);
    if (w < 0) {
      if (errno == EINTR || errno == EAGAIN) break;
      failed_ = errno;
      throw_if_output_closed(failed_);
      break;
    }
    begin_ += static_cast<size_t>(w);
    if (w > 0) mid_line_ = p[w - 1] != '\n';
    if (begin_ == end_) begin_ = end_ = 0;
    if (!chunked_) continue;  // a file took what it could: try the rest at once
  }
}

bool OutputBuffer::flush_until(std::chrono::steady_clock::time_point deadline) {
  using clock = std::chrono::steady_clock;
  while (pending() > 0 && !failed_) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - clock::now());
    if (left.count() < 0) break;
    pollfd p{fd_, POLLOUT, 0};
    int n = poll(&p, 1, static_cast<int>(left.count()));
    if (n < 0 && errno != EINTR) break;
    if (n > 0) write_ready();
    if (n == 0) break;
  }
  return pending() == 0;
}

std::string_view OutputBuffer::drop_pending() {
  const char* p = data_.get() + begin_;
  size_t keep = 0;
  if (mid_line_) {
    while (keep < pending() && p[keep] != '\n') ++keep;
    if (keep < pending()) ++keep;
  }
  std::string_view dropped(p + keep, pending() - keep);
  end_ = begin_ + keep;
  return dropped;
}

}  // namespace uscope
