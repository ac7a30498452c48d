#include "symbolize/kernel_symbols.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

namespace uscope {

KernelSymbols KernelSymbols::parse(std::string text) {
  KernelSymbols k;
  k.text_ = std::move(text);
  std::string_view rest = k.text_;
  while (!rest.empty()) {
    size_t eol = rest.find('\n');
    std::string_view line = rest.substr(0, eol);
    rest = eol == std::string_view::npos ? std::string_view() : rest.substr(eol + 1);
    // ADDR TYPE NAME[\t[MODULE]]
    size_t sp1 = line.find(' ');
    size_t sp2 = sp1 == std::string_view::npos ? sp1 : line.find(' ', sp1 + 1);
    if (sp2 == std::string_view::npos) continue;
    uint64_t addr = 0;
    bool hex = sp1 > 0;
    for (size_t i = 0; i < sp1 && hex; ++i) {
      char c = line[i];
      int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
      if (d < 0) hex = false;
      addr = addr << 4 | static_cast<uint64_t>(d < 0 ? 0 : d);
    }
    if (!hex || addr == 0) continue;
    std::string_view name = line.substr(sp2 + 1), module;
    if (size_t tab = name.find('\t'); tab != std::string_view::npos) {
      module = name.substr(tab + 1);
      name = name.substr(0, tab);
      if (module.size() >= 2 && module.front() == '[' && module.back() == ']')
        module = module.substr(1, module.size() - 2);
    }
    if (!name.empty()) k.symbols_.push_back({addr, name, module});
  }
  std::stable_sort(k.symbols_.begin(), k.symbols_.end(),
                   [](const Entry& a, const Entry& b) { return a.address < b.address; });
  return k;
}

Result<KernelSymbols> KernelSymbols::load(const std::string& path) {
  std::ifstream in(path);
  if (!in) return fail_errno(errno, "cannot read {}: {}", path, std::strerror(errno));
  std::ostringstream text;
  text << in.rdbuf();
  return parse(std::move(text).str());
}

std::optional<KernelSymbol> KernelSymbols::find(uint64_t address) const {
  auto next = std::upper_bound(symbols_.begin(), symbols_.end(), address,
                               [](uint64_t a, const Entry& e) { return a < e.address; });
  if (next == symbols_.begin()) return std::nullopt;
  const Entry& e = *std::prev(next);
  return KernelSymbol{e.name, e.module, address - e.address};
}

Frame KernelSymbols::frame(uint64_t address) const {
  Frame f;
  f.address = address;
  auto s = find(address);
  if (!s) {
    f.miss = symbols_.empty() ? FrameMiss::NoSymbols : FrameMiss::UnknownAddress;
    f.object = "kernel";
    return f;
  }
  f.function = std::string(s->name);
  f.function_offset = s->offset;
  f.object = s->module.empty() ? "kernel" : std::string(s->module);
  return f;
}

}  // namespace uscope
