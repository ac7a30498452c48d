#include "collect/thread_regs.h"

#include <bpf/bpf.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>

#include "bpf/task_regs.h"
#include "collect/task_regs_loader.h"
#include "util/unique_fd.h"

namespace uscope {

Result<std::vector<ThreadRegs>> read_thread_regs(pid_t pid) {
  task_regs* raw = nullptr;
  if (int err = task_regs_load(static_cast<uint32_t>(pid), &raw); err < 0)
    return fail_errno(-err, "cannot load the thread reader (a BPF task iterator): {}",
                      std::strerror(-err));
  std::unique_ptr<task_regs, decltype(&task_regs_unload)> skel(raw, task_regs_unload);
  // Only the process's own threads (Linux 6.1+), not every task of the system; an older kernel
  // refuses the filter, and the program's own check on the tgid does the same work.
  union bpf_iter_link_info info = {};
  info.task.pid = static_cast<uint32_t>(pid);
  LIBBPF_OPTS(bpf_link_create_opts, opts, .iter_info = &info, .iter_info_len = sizeof info);
  const int program = task_regs_program_fd(skel.get());
  UniqueFd link(bpf_link_create(program, 0, BPF_TRACE_ITER, &opts));
  if (link.get() < 0 && errno == EINVAL)
    link = UniqueFd(bpf_link_create(program, 0, BPF_TRACE_ITER, nullptr));
  if (link.get() < 0)
    return fail_errno(errno, "cannot attach the task iterator: {}", std::strerror(errno));
  UniqueFd iter(bpf_iter_create(link.get()));
  const int err = errno;
  link = UniqueFd();  // the iterator's fd keeps what it reads alive
  if (iter.get() < 0)
    return fail_errno(err, "cannot open the task iterator: {}", std::strerror(err));
  std::vector<ThreadRegs> out;
  std::vector<char> buf;
  char chunk[4096];
  for (;;) {
    ssize_t n = read(iter.get(), chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return fail_errno(errno, "cannot read the task iterator: {}", std::strerror(errno));
    if (n == 0) break;
    buf.insert(buf.end(), chunk, chunk + n);
  }
  for (size_t at = 0; at + sizeof(task_regs_record) <= buf.size(); at += sizeof(task_regs_record)) {
    task_regs_record r;
    std::memcpy(&r, buf.data() + at, sizeof r);
    ThreadRegs t;
    t.tid = static_cast<pid_t>(r.tid);
    t.comm.assign(r.comm, strnlen(r.comm, sizeof r.comm));
    t.state = r.state;
    t.on_cpu = r.on_cpu != 0;
    t.have_regs = r.have_regs != 0;
    t.ip = r.ip;
    t.sp = r.sp;
    t.bp = r.bp;
    t.r13 = r.r13;
    t.fsbase = r.fsbase;
    t.syscall = r.syscall;
    t.switches = r.switches;
    t.kernel.assign(r.kernel_stack,
                    r.kernel_stack + std::min<uint32_t>(r.kernel_frames, TASK_REGS_KERNEL_FRAMES));
    out.push_back(std::move(t));
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.tid < b.tid; });
  return out;
}

}  // namespace uscope
