// The SVG flame graph rendered by a real browser: headless Chromium (a dependency, Debian's
// chromium) takes a screenshot, libpng decodes it, and the pixels must show frames in the
// palette's colors and text; "?s=REGEX" must make the script highlight matches and "?z=PATH"
// zoom, which proves the script runs. No root needed.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <png.h>

#include <algorithm>
#include <fstream>
#include <set>

#include "profile_fixture.h"
#include "temp_dir.h"
#include "tool_output.h"

namespace uscope {
namespace {

struct Pixels {
  uint32_t width = 0, height = 0;
  std::vector<uint8_t> rgb;
  // Pixels matching `pred` in the rectangle [0, max_x) x [0, max_y).
  size_t count(bool (*pred)(uint8_t r, uint8_t g, uint8_t b), uint32_t max_x = UINT32_MAX,
               uint32_t max_y = UINT32_MAX) const {
    size_t n = 0;
    for (uint32_t y = 0; y < std::min(height, max_y); ++y)
      for (uint32_t x = 0; x < std::min(width, max_x); ++x) {
        const uint8_t* p = &rgb[(size_t(y) * width + x) * 3];
        n += pred(p[0], p[1], p[2]);
      }
    return n;
  }
};

Pixels read_png(const std::string& path) {
  png_image image{};
  image.version = PNG_IMAGE_VERSION;
  Pixels p;
  if (!png_image_begin_read_from_file(&image, path.c_str())) return p;
  image.format = PNG_FORMAT_RGB;
  p.rgb.resize(PNG_IMAGE_SIZE(image));
  if (!png_image_finish_read(&image, nullptr, p.rgb.data(), 0, nullptr)) return {};
  p.width = image.width;
  p.height = image.height;
  return p;
}

// A server-shaped profile: a few hundred stacks over realistic names, deterministic.
Profile server_profile() {
  Profile p;
  p.mappings = {{0x400000, 0x800000, 0, "/usr/sbin/server", "feed01", true, true},
                {0xffffffff81000000, 0xffffffff82000000, 0, "[kernel.kallsyms]", "", true, false}};
  const char* names[] = {"_start",
                         "__libc_start_main",
                         "main",
                         "event_loop",
                         "handle_request",
                         "parse_headers",
                         "std::vector<char, std::allocator<char> >::_M_realloc_insert",
                         "memcpy",
                         "send_response",
                         "__libc_write",
                         "compress_body",
                         "deflate",
                         "longest_match",
                         "lookup_route",
                         "std::_Hashtable<...>::find",
                         "do_syscall_64",
                         "ksys_write",
                         "tcp_sendmsg",
                         "epoll_wait",
                         "ep_poll",
                         "[unknown: no symbols in libjit.so]",
                         "hash_bytes"};
  for (const char* n : names) p.functions.push_back({n, n, ""});
  auto loc = [&](uint32_t f, bool kernel) {
    p.locations.push_back({0x400000 + p.locations.size() * 16,
                           kernel ? 2u : 1u,
                           kernel ? FrameKind::Kernel : FrameKind::User,
                           {{f, 0}}});
    return uint32_t(p.locations.size() - 1);
  };
  std::vector<uint32_t> L;
  for (uint32_t f = 0; f < std::size(names); ++f) L.push_back(loc(f, f >= 15 && f <= 19));
  // Stacks root first, as indices into names; counts.
  std::vector<std::pair<std::vector<uint32_t>, uint64_t>> stacks = {
      {{0, 1, 2, 3, 4, 5, 6, 7}, 120},
      {{0, 1, 2, 3, 4, 5, 21}, 60},
      {{0, 1, 2, 3, 4, 5}, 35},
      {{0, 1, 2, 3, 4, 13, 14, 21}, 90},
      {{0, 1, 2, 3, 4, 8, 10, 11, 12}, 260},
      {{0, 1, 2, 3, 4, 8, 10, 11}, 70},
      {{0, 1, 2, 3, 4, 8, 9, 15, 16, 17}, 180},
      {{0, 1, 2, 3, 18, 15, 19}, 140},
      {{0, 1, 2, 3, 20}, 25},
      {{0, 1, 2, 3, 4, 8, 10, 7}, 40}};
  pid_t pid = 4242;
  for (const auto& [path, count] : stacks) {
    ProfileSample s;
    for (auto it = path.rbegin(); it != path.rend(); ++it) s.locations.push_back(L[*it]);
    s.count = count;
    s.pid = pid;
    s.comm = "server";
    s.complete = true;
    p.samples.push_back(s);
  }
  p.frequency_hz = 99;
  p.duration_ns = 10'200'000'000;
  p.losses = {{"user_stack_failed", 3}};
  return p;
}

Pixels screenshot(const test::TempDir& dir, const std::string& url, const std::string& png) {
  std::string cmd =
      "timeout 120 chromium --headless --no-sandbox --disable-gpu "
      "--hide-scrollbars --user-data-dir=" +
      dir.str() + "/chromium --screenshot=" + png + " --window-size=1200,800 '" + url +
      "' >/dev/null 2>&1";
  std::system(cmd.c_str());
  return read_png(png);
}

bool warm(uint8_t r, uint8_t g, uint8_t b) {
  return r > 200 && g > 40 && g < 215 && b < 120;
}
bool blue(uint8_t r, uint8_t g, uint8_t b) {
  return b > 180 && r < 170 && g > 120;
}
bool dark(uint8_t r, uint8_t g, uint8_t b) {
  return r < 70 && g < 70 && b < 70;
}
bool button(uint8_t r, uint8_t g, uint8_t b) {
  return r < 90 && g < 120 && b > 110;
}
bool magenta(uint8_t r, uint8_t g, uint8_t b) {
  return r > 200 && g < 40 && b > 200;
}

TEST(profile_svg_render, chromium_draws_frames_text_and_runs_the_search_script) {
  test::TempDir dir;
  // USCOPE_SCREENSHOT_DIR=DIR keeps the SVG and the screenshots there, to look at them.
  const char* keep = std::getenv("USCOPE_SCREENSHOT_DIR");
  std::string out = keep != nullptr ? keep : dir.str();
  std::string svg = out + "/cpu.svg";
  std::ofstream(svg) << test::written(server_profile(), OutputFormat::Svg,
                                      {.title = "uscope profile -p 4242 (server)"});
  Pixels plain = screenshot(dir, "file://" + svg, out + "/plain.png");
  ASSERT_EQ(plain.width, 1200u) << "chromium wrote no screenshot";
  ASSERT_EQ(plain.height, 800u);
  std::set<uint32_t> colors;
  for (size_t i = 0; i + 2 < plain.rgb.size(); i += 3)
    colors.insert(plain.rgb[i] << 16 | plain.rgb[i + 1] << 8 | plain.rgb[i + 2]);
  EXPECT_GT(colors.size(), 50u);
  size_t all = size_t(plain.width) * plain.height;
  EXPECT_GT(plain.count(warm), all / 20) << "user frames are warm colors";
  EXPECT_GT(plain.count(blue), all / 200) << "kernel frames are blue";
  EXPECT_GT(plain.count(dark), 2000u) << "names and the title are drawn";
  EXPECT_EQ(plain.count(magenta), 0u);

  Pixels searched = screenshot(dir, "file://" + svg + "?s=deflate", out + "/search.png");
  ASSERT_EQ(searched.width, 1200u);
  EXPECT_GT(searched.count(magenta), 1000u) << "?s= highlights matches";

  // ?z= zooms into send_response: its callees widen, others hide, "Reset Zoom" shows top left.
  EXPECT_EQ(plain.count(button, 110, 80), 0u);
  Pixels zoomed = screenshot(
      dir,
      "file://" + svg +
          "?z=all;server;_start;__libc_start_main;main;event_loop;handle_request;send_response",
      out + "/zoom.png");
  ASSERT_EQ(zoomed.width, 1200u);
  EXPECT_GT(zoomed.count(button, 110, 80), 50u) << "Reset Zoom is shown";
}

}  // namespace
}  // namespace uscope
