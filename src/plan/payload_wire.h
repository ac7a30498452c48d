#pragma once
// The payload wire format of bpf/trace.h, read field by field: the one reader behind both
// decoders, the strict one of aggregation keys and tests (decode_payload, recipe_interpreter.h)
// and the event decoder that completes deferred strings from the live process
// (collect/event_decoder.h). Reads in place and allocates nothing; a failed read says which rule
// the bytes broke.
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

namespace uscope {

// A string field as the BPF side wrote it.
struct WireString {
  std::string_view text;   // the bytes read in BPF (empty when deferred)
  bool truncated = false;  // TRACE_STR_TRUNCATED: the string goes on past `text`
  bool deferred = false;   // TRACE_STR_DEFERRED: user space reads `length` bytes at `address`
  bool exact = false;      // deferred pointer + length string
  uint32_t length = 0;     // deferred: bytes to read
  uint64_t address = 0;    // deferred (not in a key: a key's deferred string has no address)
};

class PayloadReader {
 public:
  // `key`: an aggregation key, whose unreadable strings are marked deferred with no address and
  // whose unused bytes are zeros.
  explicit PayloadReader(std::span<const uint8_t> data, bool key = false)
      : data_(data), key_(key) {}

  // A value: 8 bytes.
  bool value(uint64_t& v);
  // A string: its length word, then its bytes, or its address when deferred.
  bool string(WireString& s);
  // A word of `n` bytes (Go values' type and kind words).
  bool word(void* dst, size_t n);

  size_t left() const { return data_.size() - pos_; }
  // Every byte used (in a key: the rest is zeros).
  bool at_end() const;
  // Why the last read failed ("a value needs 8 bytes, 3 left"); nullptr after a success.
  const char* error() const { return error_; }
  size_t error_number() const { return error_number_; }  // the number the message names

 private:
  bool failed(const char* why, size_t n) {
    error_ = why;
    error_number_ = n;
    return false;
  }
  std::span<const uint8_t> data_;
  size_t pos_ = 0;
  bool key_;
  const char* error_ = nullptr;
  size_t error_number_ = 0;
};

}  // namespace uscope
