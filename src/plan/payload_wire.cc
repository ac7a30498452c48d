#include "plan/payload_wire.h"

#include <algorithm>
#include <cstring>

#include "bpf/trace.h"

namespace uscope {

namespace {

constexpr uint32_t kKnownStrBits =
    TRACE_STR_DEFERRED | TRACE_STR_EXACT | TRACE_STR_TRUNCATED | TRACE_STR_LEN_MASK;

}  // namespace

bool PayloadReader::word(void* dst, size_t n) {
  if (left() < n) return failed("a word does not fit, {} bytes left", left());
  std::memcpy(dst, data_.data() + pos_, n);
  pos_ += n;
  error_ = nullptr;
  return true;
}

bool PayloadReader::value(uint64_t& v) {
  if (left() < 8) return failed("a value needs 8 bytes, {} left", left());
  return word(&v, 8);
}

bool PayloadReader::string(WireString& s) {
  uint32_t w = 0;
  if (left() < 4) return failed("a string needs a length word, {} bytes left", left());
  word(&w, 4);
  if (w & ~kKnownStrBits) return failed("string length word {:#x} has unknown bits", w);
  s.truncated = w & TRACE_STR_TRUNCATED;
  s.deferred = w & TRACE_STR_DEFERRED;
  s.exact = w & TRACE_STR_EXACT;
  s.text = {};
  s.length = 0;
  s.address = 0;
  uint32_t len = w & TRACE_STR_LEN_MASK;
  if (s.deferred && key_) {
    // A key's string that BPF could not read: marked, with no address to read it later.
    if (len || s.exact) return failed("an unreadable key string has no length ({})", len);
  } else if (s.deferred) {
    s.length = len;
    if (left() < 8) return failed("a deferred string needs its address, {} bytes left", left());
    word(&s.address, 8);
  } else {
    if (s.exact) return failed("TRACE_STR_EXACT without TRACE_STR_DEFERRED ({})", w);
    if (left() < len) return failed("a string of {} bytes does not fit", len);
    s.text = {reinterpret_cast<const char*>(data_.data() + pos_), len};
    pos_ += len;
  }
  error_ = nullptr;
  return true;
}

bool PayloadReader::at_end() const {
  if (key_)
    return std::all_of(data_.begin() + static_cast<ptrdiff_t>(pos_), data_.end(),
                       [](uint8_t b) { return b == 0; });
  return pos_ == data_.size();
}

}  // namespace uscope
