#pragma once
// A summary's losses in one phrase: "3 lost (ring buffer full), 1 events malformed", only the
// counts that are not zero, each with what it counts.
#include <fmt/core.h>

#include <cstdint>
#include <string>
#include <string_view>

namespace uscope {

class LossList {
 public:
  void add(uint64_t n, std::string_view what) {
    if (n) text_ += fmt::format("{}{} {}", text_.empty() ? "" : ", ", n, what);
  }
  bool empty() const { return text_.empty(); }
  const std::string& text() const { return text_; }

 private:
  std::string text_;
};

}  // namespace uscope
