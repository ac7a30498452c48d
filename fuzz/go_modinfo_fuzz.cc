// libFuzzer target: arbitrary bytes as the module info text of a Go binary (GoBuildInfo::mod_info).
// Whatever is read must hold what the format allows, and every build setting accepted, written
// back the way `go version -m` writes it, must read back as itself.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "discover/go_modinfo.h"

namespace {

bool has_line_break_or_tab(std::string_view s) {
  return s.find_first_of("\t\n") != std::string_view::npos;
}

void check_module(const uscope::GoModuleVersion& m) {
  if (has_line_break_or_tab(m.path) || has_line_break_or_tab(m.version) ||
      has_line_break_or_tab(m.sum)) {
    __builtin_trap();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const uscope::GoModInfo info = uscope::parse_go_modinfo(text);
  if (info.problems.size() > uscope::GoModInfo::kMaxProblems) __builtin_trap();
  if (info.path.find('\n') != std::string::npos) __builtin_trap();
  if (info.main) {
    check_module(*info.main);
    if (info.main->replace) check_module(*info.main->replace);
  }
  for (const auto& d : info.deps) {
    check_module(d);
    if (d.replace) check_module(*d.replace);
  }
  for (const auto& s : info.settings) {
    const std::string key = uscope::go_setting_text(s.key, true);
    const std::string value = uscope::go_setting_text(s.value, false);
    for (unsigned char c : key + value) {
      if (c < 0x20 || c == 0x7f) __builtin_trap();  // shown text holds no control byte
    }
    const uscope::GoModInfo again = uscope::parse_go_modinfo("build\t" + key + "=" + value + "\n");
    if (again.settings.size() != 1 || again.settings[0].key != s.key ||
        again.settings[0].value != s.value) {
      __builtin_trap();
    }
  }
  return 0;
}
