#pragma once
// What unit tests compare against: the output of the system's own tools (readelf, nm, go).
#include <cstdint>
#include <cstdio>
#include <map>
#include <sstream>
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

struct NmSymbol {
  uint64_t addr = 0;
  uint64_t size = 0;
  char type = 0;  // nm's letter: T, t, W, ...
};

// Symbols with a size as `nm -S ARGS` lists them ("addr size type name"), by name.
inline std::multimap<std::string, NmSymbol> nm_sized_symbols(const std::string& args) {
  std::multimap<std::string, NmSymbol> out;
  std::istringstream in(command_output("nm -S " + args));
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream l(line);
    std::string addr, size, type, name;
    if (!(l >> addr >> size >> type >> name)) continue;
    out.emplace(name,
                NmSymbol{std::stoull(addr, nullptr, 16), std::stoull(size, nullptr, 16), type[0]});
  }
  return out;
}

}  // namespace uscope::test
