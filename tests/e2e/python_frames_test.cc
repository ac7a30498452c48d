// The user-space half of Python frames, on a live python3.11 (and its Py_DEBUG build): the
// interpreter found in the process and checked against it, its threads, which one holds the GIL,
// and the frame chain of the spinning thread named and lined, compared with what the script's own
// Python says of itself (sys._getframe(), threading.get_native_id()).
#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "discover/python_runtime.h"
#include "e2e_support.h"
#include "symbolize/python_code.h"

namespace uscope::e2e {
namespace {

struct ScriptReport {
  std::map<std::string, pid_t> threads;  // name -> native id
  std::vector<std::string> frames;       // "qualname file line", innermost first
};

ScriptReport read_report(const std::string& path) {
  ScriptReport r;
  std::ifstream in(path);
  std::string kind, line;
  while (std::getline(in, line)) {
    std::istringstream words(line);
    words >> kind;
    if (kind == "thread") {
      std::string name;
      pid_t tid = 0;
      words >> name >> tid;
      r.threads[name] = tid;
    } else if (kind == "frame") {
      r.frames.push_back(line.substr(6));
    }
  }
  return r;
}

// Runs nested_spin.py under `python` until it spins, then checks everything uscope reads of it;
// the interpreter is in `object`.
void check_live_python(const std::string& python, bool debug, const std::string& object) {
  std::string report_path = fmt::format("/tmp/uscope_python_frames_{}.txt", getpid());
  GatedProcess py({python, fixture("python/nested_spin.py"), report_path});
  ASSERT_TRUE(py.wait_for_line("ready"));
  ScriptReport expected = read_report(report_path);
  unlink(report_path.c_str());
  ASSERT_EQ(expected.threads.size(), 2u);
  ASSERT_EQ(expected.frames.size(), 5u);

  auto found = find_python_runtime(py.pid());
  ASSERT_TRUE(found) << found.error().message;
  ASSERT_TRUE(found->has_value()) << "python not found in " << python;
  const PythonRuntime& rt = **found;
  EXPECT_EQ(rt.object_path, object);
  EXPECT_EQ(rt.object.version.major, 3u);
  EXPECT_EQ(rt.object.version.minor, 11u);
  EXPECT_EQ(rt.object.debug, debug);
  EXPECT_EQ(rt.proc.off.version, 0x30bu);
  // The eval function (and, where a debug file names it, its .cold part: not in the -O0 debug
  // build) lies in the object's code as /proc/PID/maps shows it.
  auto process = Process::open(py.pid());
  ASSERT_TRUE(process) << process.error().message;
  for (int i = 0; i < PY_EVAL_RANGES; ++i) {
    if (i == 1 && debug) {
      EXPECT_EQ(rt.proc.eval_start[1], 0u);
      continue;
    }
    const auto* o = process->object_containing(rt.proc.eval_start[i]);
    ASSERT_NE(o, nullptr) << i;
    EXPECT_EQ(o->path, object);
    EXPECT_EQ(o->offset_of_address(rt.proc.eval_start[i]),
              o->offset_of_address(rt.proc.eval_end[i] - 1).value_or(0) -
                  (rt.proc.eval_end[i] - 1 - rt.proc.eval_start[i]));
  }
  EXPECT_EQ(process->object_containing(rt.proc.runtime)->path, object);
  auto valid = validate_python_runtime(rt);
  ASSERT_TRUE(valid) << valid.error().message;

  auto mem = process_target_memory(py.pid());
  auto threads = python_threads(rt, mem);
  ASSERT_TRUE(threads) << threads.error().message;
  ASSERT_EQ(threads->size(), 2u);
  std::map<pid_t, PythonThread> by_tid;
  for (const auto& t : *threads) by_tid[t.native_id] = t;
  ASSERT_TRUE(by_tid.contains(expected.threads["MainThread"]));
  ASSERT_TRUE(by_tid.contains(expected.threads["worker"]));
  const PythonThread& main_thread = by_tid[expected.threads["MainThread"]];
  // The worker waits on a lock without the GIL and nothing else asks for it: the spinning main
  // thread keeps it.
  EXPECT_TRUE(main_thread.holds_gil);
  EXPECT_FALSE(by_tid[expected.threads["worker"]].holds_gil);
  auto holder = python_gil_holder(rt, mem);
  ASSERT_TRUE(holder) << holder.error().message;
  EXPECT_EQ(holder->value_or(0), main_thread.tstate);

  PythonCodeCache cache;
  auto frames = python_thread_named_frames(rt, mem, cache, main_thread.tstate);
  ASSERT_TRUE(frames) << frames.error().message;
  std::vector<std::string> got;
  for (const auto& f : *frames)
    got.push_back(fmt::format("{} {} {}", f.qualname, f.filename, f.line));
  EXPECT_EQ(got, expected.frames);
  EXPECT_EQ(cache.size(), 5u);

  // The same chain, raw: one eval call runs all five (3.11 inlines Python-to-Python calls), so
  // only the outermost is an entry frame.
  auto raw = python_thread_frames(rt, mem, main_thread.tstate);
  ASSERT_TRUE(raw) << raw.error().message;
  ASSERT_EQ(raw->size(), 5u);
  for (size_t i = 0; i + 1 < raw->size(); ++i) EXPECT_FALSE((*raw)[i].entry) << i;
  EXPECT_TRUE(raw->back().entry);
  // As the BPF walker will put them in a stack (PY_FRAME), and back.
  for (size_t i = 0; i < raw->size(); ++i) {
    uint64_t tagged = PY_FRAME((*raw)[i].code, (*raw)[i].instr);
    ASSERT_EQ(UNWIND_FRAME_TAG(tagged), UNWIND_FRAME_TAG_PYTHON);
    auto f = python_named_frame(rt, mem, cache, PY_FRAME_CODE(tagged), PY_FRAME_INSTR(tagged));
    ASSERT_TRUE(f) << f.error().message;
    EXPECT_EQ(fmt::format("{} {} {}", f->qualname, f->filename, f->line), expected.frames[i]);
  }

  // Offsets that do not fit are said so, naming the field.
  PythonRuntime wrong = rt;
  wrong.layout.bpf.tstate_native_thread_id += 8;
  auto refused = validate_python_runtime(wrong);
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().message.find("PyThreadState.native_thread_id reads"), std::string::npos)
      << refused.error().message;
  EXPECT_NE(refused.error().message.find("the offsets of 3.11 do not fit"), std::string::npos)
      << refused.error().message;
}

TEST(python_frames, python3_11_threads_gil_and_frames_match_the_script) {
  USCOPE_REQUIRE_ROOT();
  check_live_python("/usr/bin/python3.11", false, "/usr/bin/python3.11");
}

TEST(python_frames, python3_11_debug_build_reads_the_same) {
  USCOPE_REQUIRE_ROOT();
  check_live_python("/usr/bin/python3.11d", true, "/usr/bin/python3.11d");
}

TEST(python_frames, libpython_in_a_program_of_another_name) {
  USCOPE_REQUIRE_ROOT();
  check_live_python(fixture("python/embed_python"), false,
                    "/usr/lib/x86_64-linux-gnu/libpython3.11.so.1.0");
}

TEST(python_frames, a_process_that_is_not_python_is_said_so_without_error) {
  USCOPE_REQUIRE_ROOT();
  GatedProcess sleeper({"/bin/sleep", "60"});
  auto found = find_python_runtime(sleeper.pid());
  ASSERT_TRUE(found) << found.error().message;
  EXPECT_FALSE(found->has_value());
}

}  // namespace
}  // namespace uscope::e2e
