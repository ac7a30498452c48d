#include "discover/process_events.h"

#include <linux/cn_proc.h>
#include <linux/connector.h>
#include <linux/netlink.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>

namespace uscope {
namespace {

// Subscribes (or unsubscribes) `fd`: one netlink message carrying one connector message whose
// data is the operation, laid out as the kernel reads it.
bool send_op(int fd, proc_cn_mcast_op op) {
  constexpr size_t kLen = NLMSG_LENGTH(sizeof(cn_msg) + sizeof(proc_cn_mcast_op));
  alignas(nlmsghdr) char buf[NLMSG_SPACE(sizeof(cn_msg) + sizeof(proc_cn_mcast_op))] = {};
  auto* nl = reinterpret_cast<nlmsghdr*>(buf);
  nl->nlmsg_len = kLen;
  nl->nlmsg_type = NLMSG_DONE;
  auto* cn = static_cast<cn_msg*>(NLMSG_DATA(nl));
  cn->id.idx = CN_IDX_PROC;
  cn->id.val = CN_VAL_PROC;
  cn->len = sizeof op;
  std::memcpy(cn->data, &op, sizeof op);
  return send(fd, buf, kLen, 0) == static_cast<ssize_t>(kLen);
}

}  // namespace

Result<std::unique_ptr<ProcessEvents>> ProcessEvents::open(bool threads) {
  std::unique_ptr<ProcessEvents> e(new ProcessEvents());
  e->threads_ = threads;
  e->fd_.reset(socket(AF_NETLINK, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, NETLINK_CONNECTOR));
  if (!e->fd_.valid())
    return fail_errno(errno, "cannot open the kernel's process events (netlink connector): {}",
                      std::strerror(errno));
  sockaddr_nl addr{};
  addr.nl_family = AF_NETLINK;
  addr.nl_groups = CN_IDX_PROC;
  addr.nl_pid = 0;  // the kernel assigns one
  if (bind(e->fd_.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0)
    return fail_errno(errno,
                      "cannot listen to the kernel's process events: {} (needs CAP_NET_ADMIN: "
                      "run as root)",
                      std::strerror(errno));
  // A larger buffer than the default: an exec storm must not overflow it between two reads.
  const int size = 4 << 20;
  setsockopt(e->fd_.get(), SOL_SOCKET, SO_RCVBUFFORCE, &size, sizeof size);
  if (!send_op(e->fd_.get(), PROC_CN_MCAST_LISTEN))
    return fail_errno(errno, "cannot subscribe to the kernel's process events: {}",
                      std::strerror(errno));
  return e;
}

ProcessEvents::~ProcessEvents() {
  if (!fd_.valid()) return;
  send_op(fd_.get(), PROC_CN_MCAST_IGNORE);
}

std::vector<ProcessEvent> ProcessEvents::read() {
  std::vector<ProcessEvent> out;
  alignas(nlmsghdr) char buf[16384];
  for (;;) {
    const ssize_t n = recv(fd_.get(), buf, sizeof buf, 0);
    if (n < 0) {
      if (errno == ENOBUFS) {
        ++overflows_;
        continue;
      }
      break;  // EAGAIN: nothing more now
    }
    // Each datagram holds netlink messages; each of ours one connector message and its event.
    int left = static_cast<int>(n);
    for (auto* h = reinterpret_cast<nlmsghdr*>(buf); NLMSG_OK(h, left); h = NLMSG_NEXT(h, left)) {
      if (h->nlmsg_type == NLMSG_ERROR || h->nlmsg_type == NLMSG_NOOP) continue;
      if (h->nlmsg_len < NLMSG_LENGTH(sizeof(cn_msg) + sizeof(proc_event))) continue;
      const auto* cn = static_cast<const cn_msg*>(NLMSG_DATA(h));
      if (cn->id.idx != CN_IDX_PROC || cn->id.val != CN_VAL_PROC) continue;
      proc_event ev;
      std::memcpy(&ev, cn->data, sizeof ev);
      const std::chrono::steady_clock::time_point at{std::chrono::nanoseconds(ev.timestamp_ns)};
      if (ev.what == proc_event::PROC_EVENT_EXEC &&
          ev.event_data.exec.process_pid == ev.event_data.exec.process_tgid) {
        out.push_back({ProcessEvent::Exec, ev.event_data.exec.process_tgid, at});
      } else if (ev.what == proc_event::PROC_EVENT_EXIT) {
        const auto& x = ev.event_data.exit;
        if (x.process_pid == x.process_tgid)
          out.push_back({ProcessEvent::Exit, x.process_tgid, at});
        else if (threads_)
          out.push_back({ProcessEvent::ThreadExit, x.process_tgid, at, x.process_pid});
      } else if (ev.what == proc_event::PROC_EVENT_FORK && threads_) {
        const auto& f = ev.event_data.fork;
        if (f.child_pid != f.child_tgid)
          out.push_back({ProcessEvent::ThreadStart, f.child_tgid, at, f.child_pid});
      }
    }
  }
  return out;
}

uint64_t ProcessEvents::take_overflows() {
  return std::exchange(overflows_, 0);
}

}  // namespace uscope
