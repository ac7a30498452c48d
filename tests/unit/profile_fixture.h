#pragma once
// Hand-built profiles the profile sink tests write in every format: inlined frames, kernel and
// JIT frames, an unnamed frame, recursion, a C++ name with <>, two processes, and losses.
#include <cstdio>
#include <cstdlib>
#include <string>

#include "model/profile.h"
#include "sink/profile_sink.h"

namespace uscope::test {

// Locations (leaf first in samples):
//   L0 app main   L1 app inner inlined into outer   L2 kernel do_syscall_64   L3 JIT Interpreter
//   L4 libfoo.so unnamed   L5 app _start   L6 app std::vector<int>::push_back   L7 app recurse
// Samples: app (pid 42): _start;main;outer;inner;do_syscall_64_[k] x5 (complete),
//          _start;main;outer;inner x3 (complete), [unknown];Interpreter_[j] x2 (cut);
//          worker (pid 43): _start;main;recurse;recurse;recurse x1, _start;main;push_back x1.
inline Profile sample_profile() {
  Profile p;
  p.mappings = {
      {0x1000, 0x2000, 0, "/usr/bin/app", "abcd01", true, true},
      {0xffffffff81000000, 0xffffffff82000000, 0, "[kernel.kallsyms]", "", true, false},
      {0x7f0000000000, 0x7f0000010000, 0, "//anon", "", true, false},
      {0x7f1000000000, 0x7f1000010000, 0, "/usr/lib/libfoo.so", "", false, false},
  };
  p.functions = {
      {"main", "main", "app.c"},
      {"outer", "outer", "app.c"},
      {"inner", "inner", "app.h"},
      {"do_syscall_64", "do_syscall_64", ""},
      {"Interpreter", "Interpreter", ""},
      {"[unknown: no symbols in libfoo.so]", "[unknown: no symbols in libfoo.so]", ""},
      {"_start", "_start", ""},
      {"std::vector<int>::push_back(int&&)", "_ZNSt6vectorIiSaIiEE9push_backEOi", "vector.h"},
      {"recurse", "recurse", "app.c"},
  };
  auto loc = [](uint64_t addr, uint32_t mapping, FrameKind kind, std::vector<ProfileLine> lines) {
    return ProfileLocation{addr, mapping, kind, std::move(lines)};
  };
  p.locations = {
      loc(0x1010, 1, FrameKind::User, {{0, 10}}),
      loc(0x1100, 1, FrameKind::User, {{2, 20}, {1, 30}}),
      loc(0xffffffff81000100, 2, FrameKind::Kernel, {{3, 0}}),
      loc(0x7f0000001000, 3, FrameKind::Jit, {{4, 0}}),
      loc(0x7f1000000100, 4, FrameKind::User, {{5, 0}}),
      loc(0x1004, 1, FrameKind::User, {{6, 0}}),
      loc(0x1200, 1, FrameKind::User, {{7, 40}}),
      loc(0x1300, 1, FrameKind::User, {{8, 50}}),
  };
  auto sample = [](std::vector<uint32_t> locs, uint64_t count, pid_t pid, std::string comm,
                   bool complete) {
    ProfileSample s;
    s.locations = std::move(locs);
    s.count = count;
    s.pid = pid;
    s.comm = std::move(comm);
    s.complete = complete;
    return s;
  };
  p.samples = {
      sample({2, 1, 0, 5}, 5, 42, "app", true), sample({1, 0, 5}, 3, 42, "app", true),
      sample({3, 4}, 2, 42, "app", false),      sample({7, 7, 7, 0, 5}, 1, 43, "worker", true),
      sample({6, 0, 5}, 1, 43, "worker", true),
  };
  p.frequency_hz = 49;
  p.start_unix_ns = 1'700'000'000'000'000'000;
  p.duration_ns = 10'000'000'000;
  p.losses = {{"user_stack_failed", 2}, {"stack_collided", 0}};
  return p;
}

// What write_profile() writes, as bytes.
inline std::string written(const Profile& p, OutputFormat format,
                           const ProfileSinkOptions& options = {}) {
  char* buf = nullptr;
  size_t size = 0;
  std::FILE* f = open_memstream(&buf, &size);
  auto r = write_profile(p, format, f, options);
  std::fclose(f);
  std::string out(buf, size);
  std::free(buf);
  return r ? out : "error: " + r.error().message;
}

// print_profile_summary()'s line without "uscope: " and the newline.
inline std::string written_summary(const Profile& p) {
  char* buf = nullptr;
  size_t size = 0;
  std::FILE* f = open_memstream(&buf, &size);
  print_profile_summary(p, f);
  std::fclose(f);
  std::string line(buf, size);
  std::free(buf);
  if (line.starts_with("uscope: ")) line.erase(0, 8);
  if (line.ends_with("\n")) line.pop_back();
  return line;
}

}  // namespace uscope::test
