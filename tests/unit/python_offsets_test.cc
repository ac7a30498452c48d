// CPython's offsets: the 3.11 row against offsetof in the installed headers (python3.11-dev, and
// python3.11-dbg's Py_DEBUG headers), the rows' own consistency, and _Py_DebugOffsets (3.13+)
// parsed from a hand-made image and refused when it is not one.
#include "discover/python_offsets.h"

#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "tool_output.h"

namespace uscope {
namespace {

// "name value" lines of a fixture built against a Python's headers (tests/fixtures/python).
std::map<std::string, uint32_t> header_offsets(const std::string& build) {
  std::istringstream in(
      test::command_output(std::string(USCOPE_FIXTURE_DIR) + "/python/" + build + "_offsets"));
  std::map<std::string, uint32_t> m;
  std::string name;
  uint32_t v = 0;
  while (in >> name >> v) m[name] = v;
  return m;
}

void expect_row_matches_headers(const std::string& build, bool debug) {
  auto h = header_offsets(build);
  ASSERT_EQ(h.size(), 40u) << build;
  auto row = python_layout_for({3, 11, 2}, debug);
  ASSERT_TRUE(row);
  const auto& b = row->bpf;
  EXPECT_EQ(b.version, 0x30bu);
  EXPECT_EQ(b.frame_model, static_cast<uint32_t>(PY_FRAMES_IS_ENTRY));
  EXPECT_EQ(b.runtime_interp_head, h["runtime_interp_head"]);
  EXPECT_EQ(b.interp_threads_head, h["interp_threads_head"]);
  EXPECT_EQ(b.tstate_next, h["tstate_next"]);
  EXPECT_EQ(b.tstate_native_thread_id, h["tstate_native_thread_id"]);
  EXPECT_EQ(b.tstate_frame, h["tstate_frame"]);
  EXPECT_EQ(b.cframe_current_frame, h["cframe_current_frame"]);
  EXPECT_EQ(b.frame_code, h["frame_code"]);
  EXPECT_EQ(b.frame_previous, h["frame_previous"]);
  EXPECT_EQ(b.frame_instr, h["frame_instr"]);
  EXPECT_EQ(b.frame_entry, h["frame_entry"]);
  EXPECT_EQ(b.code_adaptive, h["code_adaptive"]);
  EXPECT_EQ(b.frame_read_size, h["frame_read_size"]);
  EXPECT_EQ(row->interp_next, h["interp_next"]);
  EXPECT_EQ(row->tstate_interp, h["tstate_interp"]);
  EXPECT_EQ(row->bpf.tstate_thread_id, h["tstate_thread_id"]);
  EXPECT_EQ(row->runtime_tstate_current, h["runtime_tstate_current"]);
  EXPECT_EQ(row->frame_owner, h["frame_owner"]);
  EXPECT_EQ(row->code_filename, h["code_filename"]);
  EXPECT_EQ(row->code_name, h["code_name"]);
  EXPECT_EQ(row->code_qualname, h["code_qualname"]);
  EXPECT_EQ(row->code_firstlineno, h["code_firstlineno"]);
  EXPECT_EQ(row->code_linetable, h["code_linetable"]);
  EXPECT_EQ(row->code_first_traceable, h["code_first_traceable"]);
  EXPECT_EQ(row->unicode_length, h["unicode_length"]);
  EXPECT_EQ(row->unicode_ascii_size, h["unicode_ascii_size"]);
  EXPECT_EQ(row->unicode_compact_size, h["unicode_compact_size"]);
  EXPECT_EQ(row->bytes_size, h["bytes_size"]);
  EXPECT_EQ(row->bytes_data, h["bytes_data"]);
  EXPECT_EQ(row->interp_modules, h["interp_modules"]);
  EXPECT_EQ(row->module_dict, h["module_dict"]);
  EXPECT_EQ(row->type_flags, h["type_flags"]);
  EXPECT_EQ(row->heap_type_cached_keys, h["heap_type_cached_keys"]);
  EXPECT_EQ(row->dict_keys, h["dict_keys"]);
  EXPECT_EQ(row->dict_values, h["dict_values"]);
  EXPECT_EQ(row->keys_log2_index_bytes, h["keys_log2_index_bytes"]);
  EXPECT_EQ(row->keys_kind, h["keys_kind"]);
  EXPECT_EQ(row->keys_nentries, h["keys_nentries"]);
  EXPECT_EQ(row->keys_indices, h["keys_indices"]);
  EXPECT_EQ(row->long_size, h["long_size"]);
  EXPECT_EQ(row->long_digits, h["long_digits"]);
}

TEST(python_offsets, row_3_11_is_what_the_installed_headers_say) {
  expect_row_matches_headers("python3.11", false);
}

TEST(python_offsets, row_3_11_fits_the_debug_build_too) {
  expect_row_matches_headers("python3.11d", true);
}

TEST(python_offsets, rows_cover_3_8_to_3_12_and_no_other) {
  for (uint32_t minor : {8u, 9u, 10u, 11u, 12u}) {
    auto row = python_layout_for({3, minor, 0});
    ASSERT_TRUE(row) << minor;
    const auto& b = row->bpf;
    EXPECT_EQ(b.version, 0x300u | minor);
    EXPECT_FALSE(python_layout_source({3, minor, 0}).empty());
    // The walker reads frame_read_size bytes and finds every frame field in them.
    EXPECT_LE(b.frame_code + 8, b.frame_read_size) << minor;
    EXPECT_LE(b.frame_previous + 8, b.frame_read_size) << minor;
    EXPECT_LE(b.frame_instr + (minor <= 10 ? 4 : 8), b.frame_read_size) << minor;
    if (b.frame_entry != PY_NO_OFFSET) {
      EXPECT_LT(b.frame_entry, b.frame_read_size) << minor;
    }
    EXPECT_EQ(b.frame_model, minor <= 10   ? PY_FRAMES_PER_EVAL
                             : minor == 11 ? PY_FRAMES_IS_ENTRY
                                           : PY_FRAMES_OWNER);
    EXPECT_EQ(b.owner_cstack, static_cast<uint32_t>(PY_OWNED_BY_CSTACK));
    // A kernel tid per thread state from 3.11; before, only pthread_t.
    EXPECT_EQ(b.tstate_native_thread_id == PY_NO_OFFSET, minor <= 10) << minor;
    EXPECT_EQ(row->code_qualname == PY_NO_OFFSET, minor <= 10) << minor;
  }
  EXPECT_FALSE(python_layout_for({3, 7, 9}));
  EXPECT_FALSE(python_layout_for({3, 13, 0}));  // from its _Py_DebugOffsets instead
  EXPECT_FALSE(python_layout_for({2, 7, 18}));
}

// A _Py_DebugOffsets image laid out as CPython's Include/internal/pycore_runtime.h (3.13) and
// pycore_debug_offsets.h (3.14, 3.15 as of this writing) declare it: cookie, version,
// free_threaded, then sections (runtime 3 words; interpreter 13, 16 from 3.14; thread 9, 15 and
// an exception item from 3.15; frame 6, 8 from 3.14; code 10, 11 from 3.14; object 2; ...), with
// values as a 3.13 build would hold. `interp_words` below the release's stands for a build whose
// interpreter section says less (no GIL fields).
std::vector<uint8_t> debug_offsets_image(uint32_t minor, size_t interp_words = 0,
                                         uint64_t free_threaded = 0) {
  std::vector<uint64_t> w = {0, 0x030000f0ull | minor << 16 | 1 << 8, free_threaded};
  for (uint64_t v : {166000, 1824, 40}) w.push_back(v);  // runtime: size, finalizing, head
  // size, id, next, threads_head, [threads_main], gc, modules, sysdict, builtins, ceval_gil,
  // gil_runtime_state, gil enabled, gil locked, gil holder, [2 generations]
  std::vector<uint64_t> interp = {12000, 16,   8,    7344, 3000, 5000, 6000,
                                  6008,  9000, 9100, 0,    9108, 9116};
  if (minor >= 14) {
    interp.insert(interp.begin() + 4, 7352);
    interp.insert(interp.end(), {9200, 9208});
  }
  if (interp_words) interp.resize(interp_words);
  w.insert(w.end(), interp.begin(), interp.end());
  if (minor >= 15) {  // ..., current_frame, base_frame, last_profiled_frame, thread_id, ...
    for (uint64_t v : {400, 0, 8, 16, 72, 80, 88, 152, 160, 176, 184, 190, 191, 96, 120, 0})
      w.push_back(v);
  } else {
    for (uint64_t v : {400, 0, 8, 16, 72, 152, 160, 176, 184}) w.push_back(v);
  }
  for (uint64_t v : {80, 8, 0, 56, 72, 70}) w.push_back(v);  // frame
  if (minor >= 14) w.insert(w.end(), {64, 76});
  for (uint64_t v : {208, 112, 120, 128, 136, 68, 52, 96, 104, 200}) w.push_back(v);  // code
  if (minor >= 14) w.push_back(204);
  for (uint64_t v : {16, 8}) w.push_back(v);              // object
  for (uint64_t v : {416, 24, 128, 168}) w.push_back(v);  // type object
  w.resize(120, 0);
  std::vector<uint8_t> bytes(w.size() * 8);
  std::memcpy(bytes.data(), w.data(), bytes.size());
  std::memcpy(bytes.data(), "xdebugpy", 8);
  return bytes;
}

TEST(python_offsets, parses_debug_offsets_of_3_13_and_later) {
  struct Case {
    uint32_t minor;
    size_t interp_words;
    bool gil;
  };
  for (Case c : {Case{13, 0, true}, Case{13, 8, false}, Case{14, 0, true}, Case{15, 0, true}}) {
    SCOPED_TRACE(fmt::format("3.{} with {} interpreter words", c.minor, c.interp_words));
    auto bytes = debug_offsets_image(c.minor, c.interp_words);
    auto v = python_debug_offsets_version(bytes);
    ASSERT_TRUE(v);
    EXPECT_EQ(*v, (PythonVersion{3, c.minor, 1}));
    auto l = parse_python_debug_offsets(bytes);
    ASSERT_TRUE(l) << l.error().message;
    const auto& b = l->bpf;
    EXPECT_EQ(b.version, 0x300u | c.minor);
    EXPECT_EQ(b.frame_model, static_cast<uint32_t>(PY_FRAMES_OWNER));
    EXPECT_EQ(b.runtime_interp_head, 40u);
    EXPECT_EQ(b.interp_threads_head, 7344u);
    EXPECT_EQ(b.tstate_next, 8u);
    EXPECT_EQ(b.tstate_native_thread_id, 160u);
    EXPECT_EQ(b.tstate_frame, 72u);
    EXPECT_EQ(b.cframe_current_frame, PY_NO_OFFSET);
    EXPECT_EQ(b.frame_code, 0u);
    EXPECT_EQ(b.frame_previous, 8u);
    EXPECT_EQ(b.frame_instr, 56u);
    EXPECT_EQ(b.frame_entry, 70u);
    EXPECT_EQ(b.code_adaptive, 200u);
    EXPECT_EQ(b.frame_read_size, 72u);
    EXPECT_EQ(l->interp_next, 8u);
    EXPECT_EQ(l->tstate_interp, 16u);
    EXPECT_EQ(l->bpf.tstate_thread_id, 152u);
    EXPECT_EQ(l->code_filename, 112u);
    EXPECT_EQ(l->code_qualname, 128u);
    EXPECT_EQ(l->code_linetable, 136u);
    EXPECT_EQ(l->code_firstlineno, 68u);
    EXPECT_EQ(l->unicode_ascii_size, 40u);
    EXPECT_EQ(b.owner_cstack, c.minor >= 14 ? 4u : 3u);
    if (c.gil) {
      EXPECT_EQ(l->interp_ceval_gil, 9000u);
      EXPECT_EQ(l->gil_locked, 8u);
      EXPECT_EQ(l->gil_last_holder, 16u);
    } else {
      EXPECT_EQ(l->interp_ceval_gil, PY_NO_OFFSET);
    }
  }
}

TEST(python_offsets, refuses_what_is_not_debug_offsets) {
  auto bytes = debug_offsets_image(13);
  auto no_cookie = bytes;
  no_cookie[0] = 'X';
  EXPECT_FALSE(python_debug_offsets_version(no_cookie));
  auto e = parse_python_debug_offsets(no_cookie);
  ASSERT_FALSE(e);
  EXPECT_NE(e.error().message.find("xdebugpy"), std::string::npos) << e.error().message;

  auto old = parse_python_debug_offsets(debug_offsets_image(12));
  ASSERT_FALSE(old);
  EXPECT_NE(old.error().message.find("3.12.1"), std::string::npos) << old.error().message;

  auto ft = parse_python_debug_offsets(debug_offsets_image(13, 0, 1));
  ASSERT_FALSE(ft);
  EXPECT_NE(ft.error().message.find("free-threaded"), std::string::npos) << ft.error().message;

  // A thread section that does not open with prev, next, interp: nothing is taken for it.
  auto shifted = bytes;
  uint64_t bad = 24;
  std::memcpy(shifted.data() + 8 * (6 + 13 + 2), &bad, 8);
  auto lost = parse_python_debug_offsets(shifted);
  ASSERT_FALSE(lost);
  EXPECT_NE(lost.error().message.find("sections"), std::string::npos) << lost.error().message;

  EXPECT_FALSE(parse_python_debug_offsets(std::span(bytes).first(40)));
}

}  // namespace
}  // namespace uscope
