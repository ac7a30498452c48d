#include "attach/unwind_maps.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <elf.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <set>

#include "attach/task_fsbase.h"
#include "attach/unwind_encoding.h"
#include "discover/hotspot_runtime.h"
#include "discover/object_store.h"
#include "discover/object_unwind_table.h"
#include "discover/process.h"
#include "discover/python_runtime.h"
#include "discover/v8_runtime.h"
#include "unwind_maps.skel.h"

namespace uscope {

namespace {

constexpr size_t kMaxErrorsKept = 8;
// A JVM found while it starts has no code heaps yet: looked for again this often, this many times.
constexpr auto kRuntimeRetry = std::chrono::milliseconds(100);
constexpr int kRuntimeTries = 100;
// The maps every walking object shares (unwind_maps.bpf.h); unwind_scratch stays its own.
constexpr const char* kSharedMaps[] = {"unwind_tables",     "unwind_rules",    "unwind_mappings",
                                       "unwind_procs",      "unwind_requests", "unwind_stats",
                                       "unwind_generation", "python_procs",    "python_threads",
                                       "hotspot_procs",     "v8_procs"};

// The vDSO as this process has it: the kernel maps the same image into every process.
Result<ElfFile> own_vdso() {
  auto base = getauxval(AT_SYSINFO_EHDR);
  if (base == 0) return fail("the kernel gave this process no vDSO");
  auto proc = Process::open(getpid());
  if (!proc) return tl::unexpected(proc.error());
  for (const Mapping& m : proc->mappings())
    if (m.path == "[vdso]" && m.start == base) {
      const auto* p = reinterpret_cast<const uint8_t*>(m.start);
      return ElfFile::from_memory(std::vector<uint8_t>(p, p + (m.end - m.start)), "[vdso]");
    }
  return fail("no [vdso] mapping at {:#x} in /proc/self/maps", base);
}

// Where the segment at file offset 0 is linked: the vDSO is mapped from its ELF header on.
uint64_t first_segment_vaddr(const ElfFile& elf) {
  for (const ElfSegment& s : elf.segments())
    if (s.type == PT_LOAD) return s.vaddr - s.offset;
  return 0;
}

bool same_key(const unwind_mapping_key& a, const unwind_mapping_key& b) {
  return a.prefixlen == b.prefixlen && a.tgid == b.tgid && a.address == b.address;
}

}  // namespace

UnwindMaps::UnwindMaps(BpfObject object, std::shared_ptr<ObjectStore> store,
                       std::optional<UnwindCache> cache)
    : object_(std::move(object)), store_(std::move(store)), cache_(std::move(cache)) {}

UnwindMaps::~UnwindMaps() {
  for (bpf_link* l : links_) bpf_link__destroy(l);
  if (generation_ != nullptr) munmap(const_cast<uint64_t*>(generation_), generation_bytes_);
}

void UnwindMaps::changed() {
  // Atomic, like the BPF side's increments on exec and exit: none is lost.
  __atomic_fetch_add(generation_, 1, __ATOMIC_SEQ_CST);
}

Result<std::unique_ptr<UnwindMaps>> UnwindMaps::create(std::shared_ptr<ObjectStore> store,
                                                       std::optional<UnwindCache> cache) {
  auto object = BpfObject::open(unwind_maps__open, unwind_maps__destroy, "the unwinder's maps");
  if (!object) return tl::unexpected(object.error());
  if (auto r = object->load(); !r) return tl::unexpected(r.error());
  std::unique_ptr<UnwindMaps> maps(
      new UnwindMaps(std::move(*object), std::move(store), std::move(cache)));
  maps->generation_bytes_ = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  void* generation = mmap(nullptr, maps->generation_bytes_, PROT_READ | PROT_WRITE, MAP_SHARED,
                          maps->object_.map_fd("unwind_generation"), 0);
  if (generation == MAP_FAILED)
    return fail_errno(errno, "cannot map the unwinder's generation counter: {}",
                      std::strerror(errno));
  maps->generation_ = static_cast<uint64_t*>(generation);
  for (const char* name : {"unwind_on_exec", "unwind_on_exit"}) {
    bpf_link* link = bpf_program__attach(maps->object_.program(name));
    if (link == nullptr)
      return fail_errno(errno, "cannot attach the unwinder's {} tracepoint: {}", name + 10,
                        std::strerror(errno));
    maps->links_.push_back(link);
  }
  return maps;
}

Result<void> UnwindMaps::share_with(BpfObject& object) const {
  for (const char* name : kSharedMaps) {
    bpf_map* map = bpf_object__find_map_by_name(object.object(), name);
    if (map == nullptr) continue;  // a program that does not walk stacks
    if (int err = bpf_map__reuse_fd(map, object_.map_fd(name)); err)
      return fail_errno(-err, "cannot share the unwinder's map {}: {}", name, std::strerror(-err));
  }
  return {};
}

Result<void> UnwindMaps::leave_unused(BpfObject& object) {
  for (const char* name : {"unwind_tables", "unwind_rules", "unwind_mappings", "unwind_procs",
                           "python_procs", "python_threads", "hotspot_procs", "v8_procs"})
    if (auto r = object.set_max_entries(name, 1); !r) return r;
  return {};
}

int UnwindMaps::request_ring_fd() const {
  return object_.map_fd("unwind_requests");
}
int UnwindMaps::stats_map_fd() const {
  return object_.map_fd("unwind_stats");
}

std::optional<uint32_t> UnwindMaps::rule_index(const UnwindRule& rule) {
  if (auto it = rules_.find(rule); it != rules_.end()) return it->second;
  if (rules_.size() >= UNWIND_MAX_RULES) return std::nullopt;
  auto index = static_cast<uint32_t>(rules_.size());
  unwind_rule r{};
  r.cfa_kind = static_cast<__u8>(rule.cfa);
  r.rbp_kind = static_cast<__u8>(rule.rbp);
  r.ra_offset = rule.ra_offset;
  r.cfa_offset = rule.cfa_offset;
  r.rbp_offset = rule.rbp_offset;
  if (bpf_map_update_elem(object_.map_fd("unwind_rules"), &index, &r, BPF_ANY)) return std::nullopt;
  rules_.emplace(rule, index);
  stats_.rules = rules_.size();
  return index;
}

namespace {

// Puts one encoded table into a new inner map of exactly its size.
Result<int> create_table_map(const EncodedUnwindTable& encoded) {
  LIBBPF_OPTS(bpf_map_create_opts, opts, .map_flags = BPF_F_INNER_MAP | BPF_F_MMAPABLE);
  auto n = static_cast<uint32_t>(encoded.entries.size());
  int fd = bpf_map_create(BPF_MAP_TYPE_ARRAY, "unwind_table", sizeof(uint32_t), sizeof(uint64_t), n,
                          &opts);
  if (fd < 0) return fail_errno(errno, "cannot create its table map: {}", std::strerror(errno));
  size_t bytes = n * sizeof(uint64_t);
  size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  size_t mapped = (bytes + page - 1) / page * page;
  void* mem = mmap(nullptr, mapped, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (mem == MAP_FAILED) {
    int err = errno;
    close(fd);
    return fail_errno(err, "cannot map its table map: {}", std::strerror(err));
  }
  std::memcpy(mem, encoded.entries.data(), bytes);
  munmap(mem, mapped);
  return fd;
}

}  // namespace

UnwindMaps::Table UnwindMaps::failed(const std::string& what, const Error& e) {
  ++stats_.failed;
  if (stats_.errors.size() < kMaxErrorsKept)
    stats_.errors.push_back(fmt::format("{}: {}", what, e.message));
  return Table{UNWIND_TABLE_PENDING, 0, 0};
}

UnwindMaps::Table UnwindMaps::install(const UnwindTable& table, const std::string& what) {
  if (table.rows.empty()) {
    ++stats_.frame_pointer_objects;
    return Table{};  // no CFI: frame pointers
  }
  if (stats_.tables >= UNWIND_MAX_TABLES)
    return failed(what, Error{fmt::format("no room: {} tables loaded", UNWIND_MAX_TABLES)});
  auto encoded = encode_unwind_table(table, [this](const UnwindRule& r) { return rule_index(r); });
  if (!encoded) return failed(what, encoded.error());
  auto fd = create_table_map(*encoded);
  if (!fd) return failed(what, fd.error());
  auto id = static_cast<uint32_t>(stats_.tables);
  int err = bpf_map_update_elem(object_.map_fd("unwind_tables"), &id, &*fd, BPF_ANY) ? errno : 0;
  close(*fd);  // the outer map holds it now
  if (err) return failed(what, Error{fmt::format("cannot load its table: {}", std::strerror(err))});
  ++stats_.tables;
  stats_.rows += encoded->rows();
  stats_.table_bytes += encoded->entries.size() * sizeof(uint64_t);
  return Table{id, encoded->base, static_cast<uint32_t>(encoded->pages())};
}

UnwindMaps::Table UnwindMaps::table_of(StoredObject& object, const std::string& display_path) {
  if (auto it = tables_.find(object.key()); it != tables_.end()) return it->second;
  auto got = unwind_table_of(object, cache_ ? &*cache_ : nullptr);
  if (!got) return tables_[object.key()] = failed(display_path, got.error());
  auto us = std::chrono::duration_cast<std::chrono::microseconds>(got->elapsed);
  if (got->from_cache) {
    ++stats_.from_cache;
    stats_.cache_time += us;
  } else {
    ++stats_.built;
    stats_.build_time += us;
  }
  if (got->cache_error && stats_.errors.size() < kMaxErrorsKept)
    stats_.errors.push_back(
        fmt::format("{}: not cached: {}", display_path, got->cache_error->message));
  Table t = install(*got->table, display_path);
  return tables_[object.key()] = t;
}

void UnwindMaps::remove_keys(pid_t pid) {
  auto it = keys_.find(pid);
  if (it == keys_.end()) return;
  for (const auto& k : it->second) bpf_map_delete_elem(object_.map_fd("unwind_mappings"), &k);
  stats_.mapping_keys -= it->second.size();
  keys_.erase(it);
}

Result<void> UnwindMaps::load_process(pid_t pid) {
  auto proc = Process::open(pid);
  if (!proc) {
    forget(pid);
    return tl::unexpected(proc.error());
  }
  std::vector<std::pair<unwind_mapping_key, unwind_mapping>> entries;
  for (const Mapping& m : proc->mappings()) {
    if (!m.executable() || m.path == "[vsyscall]") continue;
    unwind_mapping value{};
    value.start = m.start;
    value.end = m.end;
    value.table = UNWIND_TABLE_FP;  // JIT code, anonymous memory, objects without CFI
    if (m.path == "[vdso]") {
      const Table& t = vdso_table();
      value.table = t.id;
      value.pages = t.pages;
      value.bias = m.start - vdso_link_base_ + t.base;
    } else if (const MappedObject* o = proc->object_containing(m.start); o && m.is_file()) {
      auto object = store_->open(o->open_path, o->path);
      auto bias = object ? load_bias(*o, (*object)->elf()) : std::nullopt;
      if (object && bias) {
        Table t = table_of(**object, o->path);
        value.table = t.id;
        value.pages = t.pages;
        value.bias = *bias + t.base;
      }
    }
    for (const auto& k : lpm_keys(static_cast<uint32_t>(pid), m.start, m.end))
      entries.emplace_back(k, value);
  }
  // New keys first, then the old ones no longer used: a walk never finds the process empty.
  int trie = object_.map_fd("unwind_mappings");
  std::vector<unwind_mapping_key> keys;
  for (const auto& [k, v] : entries) {
    if (bpf_map_update_elem(trie, &k, &v, BPF_ANY)) {
      int err = errno;
      changed();
      // What went in stays known, so that forget() removes it; the walker asks again later.
      auto& known = keys_[pid];
      for (const auto& k : keys) {
        bool had = false;
        for (const auto& o : known) had = had || same_key(k, o);
        if (!had) {
          known.push_back(k);
          ++stats_.mapping_keys;
        }
      }
      return fail_errno(err, "cannot add PID {}'s mappings to the unwinder: {}", pid,
                        std::strerror(err));
    }
    keys.push_back(k);
  }
  if (auto it = keys_.find(pid); it != keys_.end()) {
    for (const auto& old : it->second) {
      bool kept = false;
      for (const auto& k : keys) kept = kept || same_key(k, old);
      if (!kept) bpf_map_delete_elem(trie, &old);
    }
    stats_.mapping_keys -= it->second.size();
  }
  stats_.mapping_keys += keys.size();
  keys_[pid] = std::move(keys);
  unwind_proc state{};
  state.state = UNWIND_PROC_LOADED;
  auto tgid = static_cast<uint32_t>(pid);
  int err = bpf_map_update_elem(object_.map_fd("unwind_procs"), &tgid, &state, BPF_ANY) ? errno : 0;
  changed();
  if (err)
    return fail_errno(err, "cannot mark PID {} loaded for the unwinder: {}", pid,
                      std::strerror(err));
  stats_.processes = keys_.size();
  load_python(*proc);
  load_hotspot(*proc);
  load_v8(*proc);
  return {};
}

void UnwindMaps::load_python(const Process& process) {
  const pid_t pid = process.pid();
  // USCOPE_NO_PYTHON=1: native frames only, the baseline bench/python_profile.py compares with.
  static const bool disabled = std::getenv("USCOPE_NO_PYTHON") != nullptr;
  if (disabled) return;
  // Only a process that maps an object named for Python (python3.11, libpython3.11.so) is looked
  // at: the interpreter's symbols are read once per process, not for every process of -a.
  const MappedObject* named = nullptr;
  for (const MappedObject& o : process.objects())
    if (std::filesystem::path(o.path).filename().string().find("python") != std::string::npos) {
      named = &o;
      break;
    }
  const uint64_t where = named && !named->mappings.empty() ? named->mappings.front().start : 0;
  if (auto it = python_looked_.find(pid); it != python_looked_.end() && it->second == where) return;
  python_looked_[pid] = where;
  auto tgid = static_cast<uint32_t>(pid);
  int map = object_.map_fd("python_procs");
  bpf_map_delete_elem(map, &tgid);
  if (named == nullptr) return;
  auto note = [&](const std::string& line) {
    if (on_runtime_) on_runtime_(pid, line);
  };
  auto rt = find_python_runtime(process);
  if (!rt) return note(fmt::format("{}: native frames only", rt.error().message));
  if (!*rt) return;
  if (auto ok = validate_python_runtime(**rt); !ok)
    return note(fmt::format("{}: native frames only", ok.error().message));
  if ((*rt)->proc.off.tstate_native_thread_id == PY_NO_OFFSET) {
    // 3.8-3.10: a thread state names its thread only by pthread_self(), the thread's fs base.
    auto fsbase = task_fsbase_offset();
    if (!fsbase)
      return note(
          fmt::format("{}: its threads are told apart by their fs base, but {}: native "
                      "frames only",
                      (*rt)->name(), fsbase.error().message));
    (*rt)->proc.task_fsbase = *fsbase;
  }
  if (bpf_map_update_elem(map, &tgid, &(*rt)->proc, BPF_ANY))
    return note(fmt::format("{}: cannot load its interpreter for the walker: {}", (*rt)->name(),
                            std::strerror(errno)));
  changed();
  ++stats_.python_processes;
  const auto& v = (*rt)->object.version;
  note(fmt::format("{}: Python {}.{}.{} frames ({}{})", (*rt)->name(), v.major, v.minor, v.micro,
                   (*rt)->object_path,
                   (*rt)->proc.task_fsbase ? "; threads told apart by their fs base" : ""));
}

void UnwindMaps::load_hotspot(const Process& process) {
  const pid_t pid = process.pid();
  // USCOPE_NO_JAVA=1: JIT code walked by frame pointer, the baseline bench/jvm_profile.py
  // compares with.
  static const bool disabled = std::getenv("USCOPE_NO_JAVA") != nullptr;
  if (disabled) return;
  const MappedObject* jvm = nullptr;
  for (const MappedObject& o : process.objects())
    if (std::filesystem::path(o.path).filename() == "libjvm.so") {
      jvm = &o;
      break;
    }
  const uint64_t where = jvm && !jvm->mappings.empty() ? jvm->mappings.front().start : 0;
  if (auto it = hotspot_looked_.find(pid); it != hotspot_looked_.end() && it->second == where)
    return;
  auto tgid = static_cast<uint32_t>(pid);
  int map = object_.map_fd("hotspot_procs");
  auto settle = [&] {
    hotspot_looked_[pid] = where;
    hotspot_retry_.erase(pid);
  };
  if (jvm == nullptr) {
    bpf_map_delete_elem(map, &tgid);
    return settle();
  }
  auto note = [&](const std::string& line) {
    if (on_runtime_) on_runtime_(pid, line);
  };
  // A JVM early in its start has mapped libjvm.so before it made its code heaps: not an answer
  // yet. Asked again (retry_runtimes) until it is, or for ~kRuntimeTries * kRuntimeRetry.
  auto not_yet = [&](const std::string& why) {
    RuntimeRetry& r = hotspot_retry_[pid];
    if (++r.tries < kRuntimeTries) {
      r.next = std::chrono::steady_clock::now() + kRuntimeRetry;
      return;
    }
    settle();
    note(fmt::format("{}: native frames only", why));
  };
  auto rt = find_hotspot_runtime(process);
  if (!rt && rt.error().errnum != EAGAIN) {  // a JVM uscope cannot read: said once
    settle();
    return note(fmt::format("{}: native frames only", rt.error().message));
  }
  if (!rt) return not_yet(rt.error().message);
  if (!*rt) return settle();  // a libjvm.so that is no HotSpot
  if (auto ok = validate_hotspot_runtime(**rt); !ok) return not_yet(ok.error().message);
  settle();
  if (bpf_map_update_elem(map, &tgid, &(*rt)->proc, BPF_ANY))
    return note(fmt::format("{}: cannot load its JVM for the walker: {}", (*rt)->name(),
                            std::strerror(errno)));
  changed();
  ++stats_.java_processes;
  note(fmt::format("{}: Java frames (HotSpot {}, {})", (*rt)->name(), (*rt)->version,
                   (*rt)->object_path));
}

void UnwindMaps::retry_runtimes() {
  const auto now = std::chrono::steady_clock::now();
  std::vector<pid_t> due;
  for (const auto& [pid, r] : hotspot_retry_)
    if (now >= r.next) due.push_back(pid);
  for (pid_t pid : due) {
    auto p = Process::open(pid);
    if (!p) {
      hotspot_retry_.erase(pid);  // gone: its exit forgets the rest
      continue;
    }
    load_hotspot(*p);
  }
}

void UnwindMaps::load_v8(const Process& process) {
  const pid_t pid = process.pid();
  // Only a process that maps an object named for node (node, libnode.so.108) is looked at, again
  // when those objects change: Debian's node maps libnode.so after its exec, and the maps may be
  // read between the two.
  uint64_t where = 0;
  for (const MappedObject& o : process.objects())
    if (v8_named(o) && !o.mappings.empty()) where = where * 31 + o.mappings.front().start;
  if (auto it = v8_looked_.find(pid); it != v8_looked_.end() && it->second == where) return;
  v8_looked_[pid] = where;
  auto tgid = static_cast<uint32_t>(pid);
  int map = object_.map_fd("v8_procs");
  bpf_map_delete_elem(map, &tgid);
  if (where == 0) return;
  auto note = [&](const std::string& line) {
    if (on_runtime_) on_runtime_(pid, line);
  };
  auto rt = find_v8_runtime(process);
  if (!rt) return note(fmt::format("{}: JavaScript frames not named", rt.error().message));
  if (!*rt) return;
  if (bpf_map_update_elem(map, &tgid, &(*rt)->proc, BPF_ANY))
    return note(fmt::format("{}: cannot load its V8 layout for the walker: {}", (*rt)->name(),
                            std::strerror(errno)));
  changed();
  ++stats_.v8_processes;
  note(fmt::format("{}: JavaScript frames named from V8's metadata ({} v8dbg constants in {})",
                   (*rt)->name(), (*rt)->constants, (*rt)->object_path));
}

Result<void> UnwindMaps::expect_exec(pid_t pid, std::span<const std::string> files) {
  for (const auto& path : files)
    if (auto object = store_->open(path, path)) (void)table_of(**object, path);
  if (!files.empty()) (void)vdso_table();
  unwind_proc state{};
  state.state = UNWIND_PROC_STALE;
  auto tgid = static_cast<uint32_t>(pid);
  int err = bpf_map_update_elem(object_.map_fd("unwind_procs"), &tgid, &state, BPF_ANY) ? errno : 0;
  changed();
  if (err)
    return fail_errno(err, "cannot watch PID {} for the unwinder: {}", pid, std::strerror(err));
  return {};
}

void UnwindMaps::forget(pid_t pid) {
  remove_keys(pid);
  auto tgid = static_cast<uint32_t>(pid);
  bpf_map_delete_elem(object_.map_fd("unwind_procs"), &tgid);
  bpf_map_delete_elem(object_.map_fd("python_procs"), &tgid);
  bpf_map_delete_elem(object_.map_fd("hotspot_procs"), &tgid);
  python_looked_.erase(pid);
  hotspot_looked_.erase(pid);
  hotspot_retry_.erase(pid);
  bpf_map_delete_elem(object_.map_fd("v8_procs"), &tgid);
  v8_looked_.erase(pid);
  changed();
  stats_.processes = keys_.size();
}

const UnwindMaps::Table& UnwindMaps::vdso_table() {
  if (vdso_) return *vdso_;
  auto elf = own_vdso();
  if (!elf) return *(vdso_ = failed("[vdso]", elf.error()));
  vdso_link_base_ = first_segment_vaddr(*elf);
  auto table = build_unwind_table(*elf);
  return *(vdso_ = table ? install(*table, "[vdso]") : failed("[vdso]", table.error()));
}

}  // namespace uscope
