#pragma once
// Bytes on their way to an fd (stdout) that may be slower than the events they describe: a
// bounded buffer the event loop writes when poll() says the fd is writable, in pieces write()
// cannot block on. fd 1 stays blocking: its open file description is shared with a traced command
// and the terminal, so O_NONBLOCK would change their behaviour.
//
// Appending calls no libc function (no malloc once the buffer has grown, no memcpy: see
// copy_bytes) so that formatting an event does not trap on a user's uprobe of those functions.
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string_view>

namespace uscope {

// A byte copy the compiler must not turn into a call of memcpy.
[[gnu::optimize("no-tree-loop-distribute-patterns")]] inline void copy_bytes(char* to,
                                                                             const char* from,
                                                                             size_t n) {
  for (; n >= 8; n -= 8, to += 8, from += 8) __builtin_memcpy(to, from, 8);  // inlined: constant
  for (; n > 0; --n) *to++ = *from++;
}

class OutputBuffer {
 public:
  // Above `soft_limit` pending bytes the buffer is full: has_room() is false and the event loop
  // stops reading events until the fd takes some (events then wait, or are lost, in the kernel).
  explicit OutputBuffer(int fd, size_t soft_limit = size_t{1} << 20);
  OutputBuffer(const OutputBuffer&) = delete;
  OutputBuffer& operator=(const OutputBuffer&) = delete;

  int fd() const { return fd_; }
  size_t pending() const { return end_ - begin_; }
  bool has_room() const { return !failed_ && pending() < soft_limit_; }
  // write() failed for good (EIO, ENOSPC...): errno of the failure. A reader that went away
  // (EPIPE) is no failure to report: write_ready() throws OutputClosed (util/output_closed.h).
  int failed() const { return failed_; }

  // Room for `n` more bytes at the end, to be filled and then commit()ed.
  char* reserve(size_t n) {
    if (cap_ - end_ < n) make_room(n);
    return data_.get() + end_;
  }
  void commit(size_t n) { end_ += n; }
  void append(char c) { *reserve(1) = c, ++end_; }
  void append(std::string_view s) {
    copy_bytes(reserve(s.size()), s.data(), s.size());
    end_ += s.size();
  }
  void append_repeated(char c, size_t n) {
    char* p = reserve(n);
    for (size_t i = 0; i < n; ++i) p[i] = c;
    end_ += n;
  }
  // The bytes appended after `mark` (a pending() taken earlier, with nothing written since).
  std::string_view since(size_t mark) const {
    return {data_.get() + begin_ + mark, pending() - mark};
  }
  // Removes what was appended after `mark` (same condition).
  void truncate(size_t mark) { end_ = begin_ + mark; }

  // Writes what the fd takes now without blocking; call when poll() reported it writable (POLLOUT,
  // POLLERR or POLLHUP). A pipe, socket or terminal gets pieces of at most PIPE_BUF bytes, each
  // after a poll() that says it is writable, ending at a line end when one is in reach (a line
  // that fits PIPE_BUF reaches a pipe shared with a traced command whole); a regular file gets
  // everything in one write(). Throws OutputClosed when the reader went away (EPIPE).
  void write_ready();
  // Writes what is pending, waiting for the fd until `deadline`; true when nothing is left. Throws
  // OutputClosed as write_ready() does.
  bool flush_until(std::chrono::steady_clock::time_point deadline);
  // Drops what is pending, except the rest of a line already partly written (so that whatever
  // comes next starts a line of its own). Returns the dropped bytes (valid until the next append).
  std::string_view drop_pending();

 private:
  void make_room(size_t n);
  bool writable_now() const;

  int fd_;
  size_t soft_limit_;
  bool chunked_ = true;  // not a regular file: pieces of PIPE_BUF after POLLOUT
  std::unique_ptr<char[]> data_;
  size_t cap_ = 0;
  size_t begin_ = 0;  // written up to here
  size_t end_ = 0;
  bool mid_line_ = false;  // the last write ended inside a line
  int failed_ = 0;
};

}  // namespace uscope
