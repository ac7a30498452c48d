#include "symbolize/kernel_symbols.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>

namespace uscope {

void KernelSymbols::add_line(std::string_view line) {
  // ADDR TYPE NAME[\t[MODULE]]
  size_t sp1 = line.find(' ');
  size_t sp2 = sp1 == std::string_view::npos ? sp1 : line.find(' ', sp1 + 1);
  if (sp2 == std::string_view::npos) return;
  uint64_t addr = 0;
  bool hex = sp1 > 0;
  for (size_t i = 0; i < sp1 && hex; ++i) {
    char c = line[i];
    int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
    if (d < 0) hex = false;
    addr = addr << 4 | static_cast<uint64_t>(d < 0 ? 0 : d);
  }
  if (!hex || addr == 0) return;
  std::string_view name = line.substr(sp2 + 1), module;
  if (size_t tab = name.find('\t'); tab != std::string_view::npos) {
    module = name.substr(tab + 1);
    name = name.substr(0, tab);
    if (module.size() >= 2 && module.front() == '[' && module.back() == ']')
      module = module.substr(1, module.size() - 2);
  }
  if (name.empty() || name.size() > UINT16_MAX || names_.size() > UINT32_MAX - name.size()) return;
  // Modules' symbols come in runs, so the last module is nearly always the one.
  uint16_t m = 0;
  if (!module.empty()) {
    m = static_cast<uint16_t>(modules_.size() - 1);
    if (modules_[m] != module) {
      auto it = std::find(modules_.begin(), modules_.end(), module);
      if (it == modules_.end()) {
        if (modules_.size() > UINT16_MAX) return;
        it = modules_.insert(modules_.end(), std::string(module));
      }
      m = static_cast<uint16_t>(it - modules_.begin());
    }
  }
  symbols_.push_back(
      {addr, static_cast<uint32_t>(names_.size()), static_cast<uint16_t>(name.size()), m});
  names_.append(name);
}

void KernelSymbols::finish() {
  std::stable_sort(symbols_.begin(), symbols_.end(),
                   [](const Entry& a, const Entry& b) { return a.address < b.address; });
  symbols_.shrink_to_fit();
  names_.shrink_to_fit();
}

KernelSymbols KernelSymbols::parse(std::string text) {
  KernelSymbols k;
  std::string_view rest = text;
  while (!rest.empty()) {
    size_t eol = rest.find('\n');
    k.add_line(rest.substr(0, eol));
    rest = eol == std::string_view::npos ? std::string_view() : rest.substr(eol + 1);
  }
  k.finish();
  return k;
}

Result<KernelSymbols> KernelSymbols::load(const std::string& path) {
  // stdio would read procfs in 1 KiB calls (its st_blksize): ~5,000 reads for one table. Declared
  // before the stream, so that it outlives fclose().
  std::vector<char> buffer(256 << 10);
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> in(std::fopen(path.c_str(), "re"), std::fclose);
  if (!in) return fail_errno(errno, "cannot read {}: {}", path, std::strerror(errno));
  std::setvbuf(in.get(), buffer.data(), _IOFBF, buffer.size());
  KernelSymbols k;
  // Sized for a current kernel's table so that growing does not double the peak.
  k.symbols_.reserve(1 << 17);
  k.names_.reserve(3 << 20);
  char* line = nullptr;
  size_t capacity = 0;
  ssize_t n;
  while ((n = ::getline(&line, &capacity, in.get())) > 0) {
    std::string_view l(line, static_cast<size_t>(n));
    if (l.back() == '\n') l.remove_suffix(1);
    k.add_line(l);
  }
  std::free(line);
  k.finish();
  return k;
}

std::optional<KernelSymbol> KernelSymbols::find(uint64_t address) const {
  auto next = std::upper_bound(symbols_.begin(), symbols_.end(), address,
                               [](uint64_t a, const Entry& e) { return a < e.address; });
  if (next == symbols_.begin()) return std::nullopt;
  const Entry& e = *std::prev(next);
  return KernelSymbol{std::string_view(names_).substr(e.name_offset, e.name_length),
                      modules_[e.module], address - e.address};
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
