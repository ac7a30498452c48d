// Symbolization cost for one object: cold load (open, symbols with MiniDebugInfo or a debug
// file, demangling) and N lookups through the Symbolizer, against a process model that maps the
// object; optionally with lines (--lines) and, for comparison, libdwfl's own dwfl_module_addrinfo
// (--dwfl), which scans every symbol per call and is why uscope keeps its own sorted table.
//
//   build/bench/symbolize_bench /usr/lib/jvm/java-17-openjdk-amd64/lib/server/libjvm.so 10000
//
// The page cache is whatever it is (run twice for warm files); "cold" means no uscope cache.
#include <elfutils/libdwfl.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "discover/symbol_table.h"
#include "symbolize/symbolizer.h"

using namespace uscope;

namespace {

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

// libdwfl's lookup at the same link-time addresses.
void time_dwfl(const std::string& path, const std::vector<uint64_t>& link_addrs) {
  static char debuginfo_path[] = ":.debug:/usr/lib/debug";
  char* p = debuginfo_path;
  Dwfl_Callbacks cb{};
  cb.find_elf = dwfl_build_id_find_elf;
  cb.find_debuginfo = dwfl_standard_find_debuginfo;
  cb.debuginfo_path = &p;
  auto t0 = std::chrono::steady_clock::now();
  Dwfl* dwfl = dwfl_begin(&cb);
  Dwfl_Module* mod = dwfl_report_elf(dwfl, "bench", path.c_str(), -1, 0, false);
  dwfl_report_end(dwfl, nullptr, nullptr);
  if (mod == nullptr) {
    fmt::print("dwfl: {}\n", dwfl_errmsg(-1));
    return;
  }
  size_t named = 0;
  for (uint64_t a : link_addrs) {
    GElf_Off off;
    GElf_Sym sym;
    if (dwfl_module_addrinfo(mod, a, &off, &sym, nullptr, nullptr, nullptr)) ++named;
  }
  fmt::print("libdwfl dwfl_module_addrinfo: load + {} lookups {:.1f} ms ({} named)\n",
             link_addrs.size(), ms_since(t0), named);
  dwfl_end(dwfl);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: symbolize_bench OBJECT [N] [--lines] [--dwfl]\n");
    return 2;
  }
  const std::string path = argv[1];
  size_t n = 10000;
  bool lines = false, dwfl = false;
  for (int i = 2; i < argc; ++i) {
    if (std::strcmp(argv[i], "--lines") == 0)
      lines = true;
    else if (std::strcmp(argv[i], "--dwfl") == 0)
      dwfl = true;
    else
      n = std::strtoull(argv[i], nullptr, 10);
  }

  // Addresses to look up: inside functions spread over the whole table, chosen from a table read
  // apart from the timed run.
  auto elf = ElfFile::open(path);
  if (!elf) {
    std::fprintf(stderr, "%s\n", elf.error().message.c_str());
    return 1;
  }
  auto table = SymbolTable::load(*elf);
  if (!table || table->functions().empty()) {
    std::fprintf(stderr, "%s: no function symbols\n", path.c_str());
    return 1;
  }
  const auto& fns = table->functions();
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) return 1;
  const uint64_t base = 0x7f0000000000;
  const uint64_t end = base + ((static_cast<uint64_t>(st.st_size) + 0xfff) & ~0xfffull);
  const std::string maps = fmt::format("{:x}-{:x} r-xp 00000000 {:02x}:{:02x} {} {}\n", base, end,
                                       major(st.st_dev), minor(st.st_dev), st.st_ino, path);
  auto process = Process::from_maps(1, maps, "/nonexistent-proc");
  if (!process) return 1;
  std::vector<uint64_t> addrs, link_addrs;
  for (size_t i = 0; i < n; ++i) {
    const FunctionSymbol& f = fns[(i * 7919) % fns.size()];
    // Entries after the first are taken as return addresses (looked up one byte earlier), as
    // in a stack: +1 keeps the lookup inside the function.
    const uint64_t inside = 1 + (f.size > 1 ? i % (f.size - 1) : 0);
    addrs.push_back(base + f.offset + inside);
    link_addrs.push_back(f.addr + inside);
  }

  SymbolizerOptions options;
  options.lines = lines;
  options.objects = std::make_shared<ObjectStore>();
  Symbolizer s(options);
  auto t0 = std::chrono::steady_clock::now();
  auto first = s.symbolize(*process, std::span<const uint64_t>(addrs).first(1), true);
  const double cold = ms_since(t0);
  t0 = std::chrono::steady_clock::now();
  auto frames = s.symbolize(*process, addrs, true);
  const double lookups = ms_since(t0);
  size_t named = 0, with_line = 0, inlined = 0;
  for (const Frame& f : frames) {
    named += f.miss == FrameMiss::None;
    with_line += f.line != 0;
    inlined += f.inlined.size();
  }
  fmt::print(
      "{}: {} functions; cold load + first lookup {:.1f} ms; {} lookups {:.1f} ms "
      "({:.2f} us each); {} named{}\n",
      path, fns.size(), cold, n, lookups, 1000.0 * lookups / static_cast<double>(n), named,
      lines ? fmt::format(", {} with a line, {} inlined calls", with_line, inlined) : "");
  if (first.front().miss != FrameMiss::None) fmt::print("first: {}\n", first.front().describe());
  for (size_t i = 0, shown = 0; i < frames.size() && shown < 3; ++i) {
    if (frames[i].miss == FrameMiss::None) continue;
    fmt::print("miss: {} (link {:#x})\n", frames[i].describe(), link_addrs[i]);
    ++shown;
  }
  if (dwfl) time_dwfl(path, link_addrs);
  return 0;
}
