#pragma once
// What unit tests compare against: the output of the system's own tools (readelf, nm, go).
#include <cstdio>
#include <string>

namespace uscope::test {

// Stdout of a shell command line ("" when it cannot be started).
inline std::string command_output(const std::string& cmd) {
  std::string out;
  FILE* p = popen(cmd.c_str(), "r");
  if (p == nullptr) return out;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  pclose(p);
  return out;
}

}  // namespace uscope::test
