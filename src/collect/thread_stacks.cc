#include "collect/thread_stacks.h"

#include <fmt/core.h>

#include <utility>

#include "discover/object_store.h"

namespace uscope {

ThreadStacks::~ThreadStacks() = default;

ThreadStacks ThreadStacks::open(Process process, std::span<const ThreadRegs> threads) {
  const pid_t pid = process.pid();
  ThreadStacks s;
  s.process_.emplace(std::move(process));
  // Read once a page: the walks and the Python frames of 50 threads were ~7,000 reads of a few
  // bytes each (strace -c), now one read a page they touch.
  s.mem_ = page_cached(process_target_memory(pid));
  ThreadsByFsBase fs_bases;  // 3.8-3.10 name a thread state's thread only by pthread_self()
  for (const ThreadRegs& t : threads)
    if (t.fsbase) fs_bases.emplace(t.fsbase, t.tid);
  if (auto rt = find_python_runtime(*s.process_); !rt) {
    s.python_line_ = fmt::format("{}: native frames only", rt.error().message);
  } else if (*rt) {
    if (auto ok = validate_python_runtime(**rt, s.mem_, &fs_bases); !ok) {
      s.python_line_ = fmt::format("{}: native frames only", ok.error().message);
    } else {
      s.python_ = std::move(**rt);
      const auto& v = s.python_->object.version;
      s.python_line_ =
          fmt::format("Python {}.{}.{} ({})", v.major, v.minor, v.micro, s.python_->object_path);
      if (s.python_->layout.bpf.tstate_native_thread_id == PY_NO_OFFSET)
        s.python_line_ += "; threads told apart by their fs base";
      if (auto list = python_threads(*s.python_, s.mem_, &fs_bases))
        for (const PythonThread& t : *list)
          if (t.native_id) s.python_threads_[t.native_id] = t;
      if (auto holder = python_gil_holder(*s.python_, s.mem_); holder && *holder) s.gil_ = **holder;
    }
  }
  // A JVM: its code cache's frames are Java frames.
  if (auto rt = find_hotspot_runtime(*s.process_); !rt) {
    s.java_line_ = fmt::format("{}: native frames only", rt.error().message);
  } else if (*rt) {
    if (auto ok = validate_hotspot_runtime(**rt, s.mem_); !ok) {
      s.java_line_ = fmt::format("{}: native frames only", ok.error().message);
    } else {
      s.java_ = std::move(**rt);
      s.java_line_ = fmt::format("Java: HotSpot {} ({})", s.java_->version, s.java_->object_path);
      if (auto list = hotspot_threads(*s.java_, s.mem_))
        for (HotspotThread& t : *list) s.java_threads_[t.tid] = std::move(t);
    }
  }
  s.cache_ = std::make_unique<UnwindCache>(UnwindCache::open_default());
  s.walker_ = std::make_unique<UserWalker>(ObjectStore::shared(), s.cache_.get());
  return s;
}

const PythonThread* ThreadStacks::python_thread(pid_t tid) const {
  auto it = python_threads_.find(tid);
  return it != python_threads_.end() ? &it->second : nullptr;
}

const HotspotThread* ThreadStacks::java_thread(pid_t tid) const {
  auto it = java_threads_.find(tid);
  return it != java_threads_.end() ? &it->second : nullptr;
}

UserWalk ThreadStacks::walk(const ThreadRegs& t, bool native) {
  std::vector<PythonRawFrame> py;
  if (const PythonThread* pt = python_ ? python_thread(t.tid) : nullptr)
    if (auto frames = python_thread_frames(*python_, mem_, pt->tstate)) py = std::move(*frames);
  if (native && t.have_regs && !t.on_cpu)
    return walker_->walk(*process_, mem_, t.ip, t.sp, t.bp, python(), py,
                         java_ ? &java_->proc : nullptr, t.r13);
  UserWalk w;
  for (const PythonRawFrame& f : py) w.frames.push_back(PY_FRAME(f.code, f.instr));
  return w;
}

}  // namespace uscope
