#include "collect/thread_regs.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "attach/bpf_loader.h"
#include "bpf/task_regs.h"
#include "task_regs.skel.h"
#include "util/unique_fd.h"

namespace uscope {

Result<std::vector<ThreadRegs>> read_thread_regs(pid_t pid) {
  auto object = BpfObject::open(task_regs__open, task_regs__destroy, "the thread reader");
  if (!object) return tl::unexpected(object.error());
  if (auto r = object->set_rodata("target_tgid", static_cast<uint32_t>(pid)); !r)
    return tl::unexpected(r.error());
  if (auto r = object->load(); !r) return tl::unexpected(r.error());
  // Only the process's own threads (Linux 6.1+), not every task of the system; an older kernel
  // refuses the filter, and the program's own check on the tgid does the same work.
  union bpf_iter_link_info info = {};
  info.task.pid = static_cast<uint32_t>(pid);
  LIBBPF_OPTS(bpf_iter_attach_opts, opts, .link_info = &info, .link_info_len = sizeof info);
  bpf_link* link = bpf_program__attach_iter(object->program("dump_task"), &opts);
  if (link == nullptr && errno == EINVAL)
    link = bpf_program__attach_iter(object->program("dump_task"), nullptr);
  if (link == nullptr)
    return fail_errno(errno, "cannot attach the task iterator: {}", std::strerror(errno));
  UniqueFd iter(bpf_iter_create(bpf_link__fd(link)));
  const int err = errno;
  bpf_link__destroy(link);  // the iterator's fd keeps what it reads alive
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
    out.push_back(std::move(t));
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.tid < b.tid; });
  return out;
}

}  // namespace uscope
