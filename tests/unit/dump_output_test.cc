// `uscope dump`'s text from a ThreadDump: the process and runtime lines, each thread's heading
// (runtime name, comm, state, GIL, JVM kind) and its frames or why its native frames were not read.
#include "sink/dump_output.h"

#include <gtest/gtest.h>

namespace uscope {
namespace {

TEST(dump_output, threads_with_their_names_state_and_frames) {
  ThreadDump d;
  d.pid = 42;
  d.command_line = "python3 app.py";
  d.runtimes = {"Python 3.11.2 (/usr/bin/python3.11)"};
  DumpedThread& main = d.threads.emplace_back();
  main.tid = 42;
  main.name = "MainThread";
  main.comm = "python3";
  main.state = "idle (sleeping, S)";
  main.holds_gil = true;
  main.frames = {"select+0x10 [libc.so.6]", "main (app.py:3)"};
  DumpedThread& busy = d.threads.emplace_back();
  busy.tid = 43;
  busy.comm = "worker";
  busy.state = "running";
  busy.kind = "JIT compiler thread";
  busy.native_not_read = true;
  busy.frames = {"spin (app.py:9)"};
  EXPECT_EQ(dump_text(d),
            "Process 42: python3 app.py\n"
            "Python 3.11.2 (/usr/bin/python3.11)\n"
            "\n"
            "Thread 42 \"MainThread\" (python3): idle (sleeping, S), holds the GIL\n"
            "    select+0x10 [libc.so.6]\n"
            "    main (app.py:3)\n"
            "\n"
            "Thread 43 (worker): running, JIT compiler thread\n"
            "    [native frames not read: the thread is running]\n"
            "    spin (app.py:9)\n");
}

}  // namespace
}  // namespace uscope
