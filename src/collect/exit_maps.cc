#include "collect/exit_maps.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "bpf/exit_maps.h"
#include "collect/percpu_sum.h"
#include "exit_maps.skel.h"

namespace uscope {

namespace {

// The ring's size: it is mapped twice (a BPF ring buffer is, so that records never wrap), and all
// of it counts in uscope's resident memory from the start. A record is ~1.1 KiB (one executable
// mapping), and the ring is drained at every wake-up: 4 MiB for every process on a host (many
// exits at once), 512 KiB (~470 mappings, a big process's several times over) for given PIDs.
constexpr uint32_t kRingEveryProcess = 4u << 20;
constexpr uint32_t kRingTargets = 512u << 10;

// "/usr/lib/x86_64-linux-gnu/libc.so.6" from its components, innermost first.
std::string joined_path(const exit_mapping& r) {
  std::string path;
  for (uint32_t i = r.count; i-- > 0;) {
    path += '/';
    path += std::string(r.names[i], strnlen(r.names[i], EXIT_MAPS_NAME));
  }
  return path.empty() ? "/" : path;
}

}  // namespace

ExitMaps::~ExitMaps() {
  if (link_ != nullptr) bpf_link__destroy(link_);
}

Result<void> ExitMaps::configure(BpfObject& object, const std::vector<pid_t>& pids) {
  if (auto r = object.set_rodata("exit_every_process", static_cast<uint32_t>(pids.empty())); !r)
    return r;
  if (auto r = object.set_rodata("exit_reader_tgid", static_cast<uint32_t>(getpid())); !r) return r;
  return object.set_max_entries("exit_records", pids.empty() ? kRingEveryProcess : kRingTargets);
}

Result<std::unique_ptr<ExitMaps>> ExitMaps::attach(const BpfObject& object,
                                                   const std::vector<pid_t>& pids,
                                                   Handler handler) {
  std::unique_ptr<ExitMaps> maps(new ExitMaps(object, std::move(handler)));
  for (pid_t pid : pids)
    if (auto r = maps->watch(pid); !r) return tl::unexpected(r.error());
  auto ring = RingReader::open(object.map_fd("exit_records"),
                               [m = maps.get()](const void* d, size_t n) { m->on_record(d, n); });
  if (!ring) return tl::unexpected(ring.error());
  maps->ring_.emplace(std::move(*ring));
  maps->link_ = bpf_program__attach(object.program("exit_maps"));
  if (maps->link_ == nullptr)
    return fail_errno(errno, "cannot attach the sched_process_exit tracepoint: {}",
                      std::strerror(errno));
  return maps;
}

Result<std::unique_ptr<ExitMaps>> ExitMaps::start(const std::vector<pid_t>& pids, Handler handler) {
  auto object = BpfObject::open(exit_maps__open, exit_maps__destroy, "the exit-maps program");
  if (!object) return tl::unexpected(object.error());
  if (auto r = configure(*object, pids); !r) return tl::unexpected(r.error());
  if (auto r = object->load(); !r) return tl::unexpected(r.error());
  // Moved into the heap before attach() takes its address: ExitMaps is not movable.
  auto own = std::make_unique<BpfObject>(std::move(*object));
  auto maps = attach(*own, pids, std::move(handler));
  if (!maps) return maps;
  (*maps)->owned_ = std::move(own);
  return maps;
}

Result<void> ExitMaps::watch(pid_t pid) {
  auto key = static_cast<uint32_t>(pid);
  uint8_t one = 1;
  if (bpf_map_update_elem(targets_fd_, &key, &one, BPF_ANY) != 0)
    return fail_errno(errno, "cannot watch PID {} for its exit: {}", pid, std::strerror(errno));
  return {};
}

void ExitMaps::on_record(const void* data, size_t size) {
  if (size < sizeof(exit_mapping)) return;
  const auto* r = static_cast<const exit_mapping*>(data);
  auto tgid = static_cast<pid_t>(r->tgid);
  if (r->kind == EXIT_MAPPING_END) {
    auto node = pending_.extract(tgid);
    std::vector<Mapping> mappings =
        node.empty() ? std::vector<Mapping>{} : std::move(node.mapped());
    // Records lost on the way, a walk the kernel could not make (its mm stayed locked) or cut
    // short, or no executable mapping at all (never a real process): a partial picture would
    // misname its addresses, none says "process gone".
    if (r->unread != EXIT_UNREAD_NONE || mappings.empty() || mappings.size() != r->count) {
      ++incomplete_;
      return;
    }
    handler_(Process::from_mappings(tgid, std::move(mappings)));
    return;
  }
  Mapping m;
  m.start = r->start;
  m.end = r->end;
  m.offset = r->offset;
  m.perms = "r-xp";
  if (r->kind == EXIT_MAPPING_VDSO) {
    m.path = "[vdso]";
  } else {
    // The kernel's dev_t (MINORBITS 20), not glibc's.
    m.dev_major = r->dev >> 20;
    m.dev_minor = r->dev & 0xfffff;
    m.inode = r->ino;
    m.path = r->cut ? "" : joined_path(*r);  // a cut path names no file: the object stays unnamed
  }
  pending_[tgid].push_back(std::move(m));
}

void ExitMaps::catch_up() {
  if (ring_) (void)ring_->consume_all();
}

uint64_t ExitMaps::lost() const {
  PerCpuSum sum(lost_fd_);
  auto v = sum.sum(0);
  return (v ? *v : 0) + incomplete_;
}

}  // namespace uscope
