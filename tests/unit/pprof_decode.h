#pragma once
// gzipped pprof bytes decoded with the generated profile.proto classes (the schema Debian's pprof
// ships), and the sample counts by folded stack, to hold against what was given.
#include <gtest/gtest.h>
#include <zlib.h>

#include <map>
#include <string>

#include "profile.pb.h"

namespace uscope::test {

inline std::string gunzip(const std::string& in) {
  z_stream z{};
  EXPECT_EQ(inflateInit2(&z, 15 + 16), Z_OK);
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  z.avail_in = static_cast<uInt>(in.size());
  std::string out;
  char buf[4096];
  int rc;
  do {
    z.next_out = reinterpret_cast<Bytef*>(buf);
    z.avail_out = sizeof buf;
    rc = inflate(&z, Z_NO_FLUSH);
    out.append(buf, sizeof buf - z.avail_out);
  } while (rc == Z_OK);
  EXPECT_EQ(rc, Z_STREAM_END);
  inflateEnd(&z);
  return out;
}

inline perftools::profiles::Profile pprof_decoded(const std::string& gzipped) {
  perftools::profiles::Profile out;
  EXPECT_TRUE(out.ParseFromString(gunzip(gzipped)));
  return out;
}

// "root;...;leaf" (each location's outermost line, as pprof -traces shows the holder) -> the
// samples/count value, summed over samples with that stack.
inline std::map<std::string, int64_t> pprof_stacks(const perftools::profiles::Profile& p) {
  std::map<uint64_t, std::string> names;
  for (const auto& f : p.function()) names[f.id()] = p.string_table(static_cast<int>(f.name()));
  std::map<uint64_t, std::string> locations;
  for (const auto& l : p.location()) {
    std::string frames;  // innermost line first, as pprof stores them: outermost first here
    for (const auto& line : l.line())
      frames =
          frames.empty() ? names[line.function_id()] : names[line.function_id()] + ";" + frames;
    locations[l.id()] = frames;
  }
  std::map<std::string, int64_t> out;
  for (const auto& s : p.sample()) {
    std::string stack;
    for (uint64_t id : s.location_id())
      stack = stack.empty() ? locations[id] : locations[id] + ";" + stack;
    out[stack] += s.value(0);
  }
  return out;
}

}  // namespace uscope::test
