#pragma once
// Reading `uscope profile --format folded` in tests: one line per stack, comm first, then the
// frames outermost to innermost, then the count. Assertions are on shares, never on counts.
#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

namespace uscope::e2e {

struct FoldedLine {
  std::vector<std::string> frames;  // [0] is the comm, then outermost to innermost
  uint64_t count = 0;
};

inline std::vector<FoldedLine> parse_folded(const std::string& text) {
  std::vector<FoldedLine> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    auto space = line.rfind(' ');
    if (space == std::string::npos) continue;
    FoldedLine f;
    f.count = std::stoull(line.substr(space + 1));
    std::istringstream stack(line.substr(0, space));
    for (std::string frame; std::getline(stack, frame, ';');) f.frames.push_back(frame);
    out.push_back(std::move(f));
  }
  return out;
}

inline std::string joined(const FoldedLine& l) {
  std::string s;
  for (const auto& f : l.frames) s += f + ";";
  return s;
}

// The share of samples whose stack (joined with ';', each frame followed by one) contains `text`.
inline double share_with(const std::vector<FoldedLine>& lines, const std::string& text) {
  uint64_t all = 0, with = 0;
  for (const auto& l : lines) {
    all += l.count;
    if (joined(l).find(text) != std::string::npos) with += l.count;
  }
  return all ? static_cast<double>(with) / static_cast<double>(all) : 0;
}

// The share of samples whose stack, outermost frame first, begins with one of `roots` (frames
// each followed by ';'): the stacks that reach an entry the test knows, whatever the profiler
// says of them.
inline double share_rooted_at(const std::vector<FoldedLine>& lines,
                              const std::vector<std::string>& roots) {
  uint64_t all = 0, rooted = 0;
  for (const auto& l : lines) {
    all += l.count;
    std::string frames;
    for (size_t i = 1; i < l.frames.size(); ++i) frames += l.frames[i] + ";";
    for (const auto& r : roots)
      if (frames.starts_with(r)) {
        rooted += l.count;
        break;
      }
  }
  return all ? static_cast<double>(rooted) / static_cast<double>(all) : 0;
}

inline uint64_t total(const std::vector<FoldedLine>& lines) {
  uint64_t n = 0;
  for (const auto& l : lines) n += l.count;
  return n;
}

}  // namespace uscope::e2e
