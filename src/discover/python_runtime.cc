#include "discover/python_runtime.h"

#include <dirent.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <regex>
#include <set>
#include <unordered_map>
#include <vector>

#include "discover/object_store.h"
#include "util/names.h"

namespace uscope {
namespace {

constexpr uint8_t kOwnedByGenerator = 1;
constexpr uint64_t kUserTop = 1ull << 47;

// "python3.11", "python3.11d", "libpython3.11.so.1.0", "libpython3.11d.so.1.0": {3, 11}, debug.
std::optional<std::pair<PythonVersion, bool>> version_from_name(const std::string& path) {
  static const std::regex re(R"(^(?:lib)?python(\d)\.(\d+)(d?)(?:m|dm)?(?:\.so.*)?$)");
  std::smatch m;
  std::string name(file_name(path));
  if (!std::regex_match(name, m, re)) return std::nullopt;
  PythonVersion v{static_cast<uint32_t>(std::stoul(m[1])), static_cast<uint32_t>(std::stoul(m[2])),
                  0};
  return std::pair{v, m[3].length() > 0};
}

}  // namespace

std::optional<PythonVersion> python_version_string(const ElfFile& elf,
                                                   std::optional<PythonVersion> named) {
  auto sec = elf.section(".rodata");
  if (!sec) return std::nullopt;
  auto data = elf.section_data(*sec);
  if (!data) return std::nullopt;
  static const std::regex re(R"(^3\.(\d{1,2})\.(\d{1,2})(?:(?:a|b|rc)\d+)?\+?$)");
  const auto* p = reinterpret_cast<const char*>(data->data());
  size_t n = data->size();
  for (size_t i = 1; i + 5 < n; ++i) {
    if (p[i - 1] != '\0' || p[i] != '3' || p[i + 1] != '.') continue;
    size_t end = i;
    while (end < n && end - i < 16 && p[end] != '\0') ++end;
    if (end >= n || p[end] != '\0') continue;
    std::string s(p + i, end - i);
    std::smatch m;
    if (!std::regex_match(s, m, re)) continue;
    PythonVersion v{3, static_cast<uint32_t>(std::stoul(m[1])),
                    static_cast<uint32_t>(std::stoul(m[2]))};
    if (v.minor < 6) continue;
    if (named && named->minor != v.minor) continue;
    return v;
  }
  return std::nullopt;
}

namespace {

template <class T>
std::optional<T> read_value(const TargetMemory& mem, uint64_t addr) {
  T v{};
  if (!mem(addr, {reinterpret_cast<uint8_t*>(&v), sizeof v})) return std::nullopt;
  return v;
}

bool plausible_pointer(uint64_t p) {
  return p >= 4096 && p < kUserTop && p % 8 == 0;
}

// The first frame of tstate's chain: through the _PyCFrame in 3.11 and 3.12.
Result<uint64_t> current_frame(const PythonRuntime& rt, const TargetMemory& mem, uint64_t tstate) {
  const auto& o = rt.layout.bpf;
  auto f = read_value<uint64_t>(mem, tstate + o.tstate_frame);
  if (!f) return fail("{}: cannot read PyThreadState at {:#x}", rt.name(), tstate);
  if (o.cframe_current_frame == PY_NO_OFFSET || *f == 0) return *f;
  auto cur = read_value<uint64_t>(mem, *f + o.cframe_current_frame);
  if (!cur) return fail("{}: cannot read _PyCFrame at {:#x}", rt.name(), *f);
  return *cur;
}

}  // namespace

TargetMemory process_target_memory(pid_t pid) {
  return [pid](uint64_t addr, std::span<uint8_t> out) {
    auto n = read_process_memory(pid, addr, out);
    return n && *n == out.size();
  };
}

namespace {

class PageCache {
 public:
  explicit PageCache(TargetMemory mem) : mem_(std::move(mem)) {}

  bool read(uint64_t addr, std::span<uint8_t> out) {
    size_t done = 0;
    while (done < out.size()) {
      uint64_t at = addr + done;
      uint64_t page = at & ~(kPage - 1);
      size_t n = std::min<uint64_t>(out.size() - done, kPage - (at - page));
      const std::vector<uint8_t>* bytes = cached(page);
      if (bytes) {
        std::memcpy(out.data() + done, bytes->data() + (at - page), n);
      } else if (!mem_(at, out.subspan(done, n))) {
        return false;
      }
      done += n;
    }
    return true;
  }

 private:
  static constexpr uint64_t kPage = 4096;
  static constexpr size_t kMaxCachedPages = 4096;

  const std::vector<uint8_t>* cached(uint64_t page) {
    if (auto it = pages_.find(page); it != pages_.end())
      return it->second.empty() ? nullptr : &it->second;
    if (pages_.size() >= kMaxCachedPages) return nullptr;
    std::vector<uint8_t> bytes(kPage);
    if (!mem_(page, bytes)) bytes.clear();
    auto& kept = pages_[page] = std::move(bytes);
    return kept.empty() ? nullptr : &kept;
  }

  TargetMemory mem_;
  std::unordered_map<uint64_t, std::vector<uint8_t>> pages_;
};

}  // namespace

TargetMemory page_cached(TargetMemory mem) {
  auto cache = std::make_shared<PageCache>(std::move(mem));
  return [cache](uint64_t addr, std::span<uint8_t> out) { return cache->read(addr, out); };
}

std::string PythonRuntime::name() const {
  return fmt::format("python{}.{}{} (pid {})", object.version.major, object.version.minor,
                     object.debug ? "d" : "", pid);
}

Result<std::optional<PythonObjectInfo>> python_object_info(const ElfFile& elf,
                                                           const SymbolTableSource& source) {
  auto syms = elf.symbols();
  if (!syms) return tl::unexpected(syms.error());
  PythonObjectInfo info;
  std::optional<uint64_t> py_version_addr;
  bool ref_total = false;
  for (const auto& s : *syms) {
    if (!s.defined || s.addr == 0) continue;
    if (s.name == "_PyRuntime" && s.kind == SymbolKind::Object) {
      info.runtime_addr = s.addr;
    } else if (s.name == "_PyEval_EvalFrameDefault" && s.kind == SymbolKind::Function) {
      info.eval_start[0] = s.addr;
      info.eval_end[0] = s.addr + s.size;
    } else if (s.name == "Py_Version" && s.kind == SymbolKind::Object) {
      py_version_addr = s.addr;
    } else if (s.name == "PyCode_Type" && s.kind == SymbolKind::Object) {
      info.code_type_addr = s.addr;
    } else if (s.name == "_Py_RefTotal") {
      ref_total = true;
    }
  }
  if (info.runtime_addr == 0 || info.eval_start[0] == 0) return std::nullopt;

  auto named = version_from_name(elf.display_path());
  if (py_version_addr) {
    if (auto b = elf.allocated_bytes(*py_version_addr, 4)) {
      uint32_t hex = 0;
      std::memcpy(&hex, b->data(), 4);  // PY_VERSION_HEX: 0x030b02f0 for 3.11.2
      info.version = {hex >> 24 & 0xff, hex >> 16 & 0xff, hex >> 8 & 0xff};
      info.version_source = "Py_Version";
    }
  }
  if (info.version_source.empty()) {
    if (auto v = python_version_string(elf, named ? std::optional(named->first) : std::nullopt)) {
      info.version = *v;
      info.version_source = "PY_VERSION string";
    } else if (named) {
      info.version = named->first;
      info.version_source = "file name";
    } else {
      return fail(
          "{} holds a Python interpreter (_PyRuntime, _PyEval_EvalFrameDefault) but "
          "neither Py_Version, a PY_VERSION string nor its name says which version",
          elf.display_path());
    }
  }
  info.debug = ref_total || (named && named->second);

  // The eval function's cold part (GCC's hot/cold split) is a local symbol: in .symtab, or in a
  // debug file found by build-id.
  std::optional<Result<SymbolTable>> loaded;
  const SymbolTable* symbols = source ? source() : nullptr;
  if (!source) {
    loaded = SymbolTable::load(elf);
    if (*loaded) symbols = &**loaded;
  }
  if (symbols) {
    for (const auto* f : symbols->find("_PyEval_EvalFrameDefault.cold")) {
      if (f->addr == info.eval_start[0]) continue;
      info.eval_start[1] = f->addr;
      info.eval_end[1] = f->addr + f->size;
      break;
    }
  }
  return info;
}

Result<std::optional<PythonRuntime>> find_python_runtime(pid_t pid) {
  auto p = Process::open(pid);
  if (!p) return tl::unexpected(p.error());
  return find_python_runtime(*p);
}

Result<std::optional<PythonRuntime>> find_python_runtime(const Process& process) {
  // The interpreter lives in an object named for it (python3.X, libpython3.X.so), or is linked
  // into the main executable (an embedding program); other libraries are not opened.
  std::vector<const MappedObject*> candidates;
  for (const auto& o : process.objects())
    if (file_name(o.path).find("python") != std::string::npos) candidates.push_back(&o);
  if (const auto* main = process.main_object();
      main && std::find(candidates.begin(), candidates.end(), main) == candidates.end())
    candidates.push_back(main);

  for (const auto* o : candidates) {
    auto stored = ObjectStore::shared()->open(o->open_path, o->path);
    if (!stored) continue;  // not ELF, unreadable: not where an interpreter can be read from
    const ElfFile* elf = &(*stored)->elf();
    auto info = python_object_info(*elf, [&]() -> const SymbolTable* {
      auto symbols = (*stored)->symbols();
      return symbols ? *symbols : nullptr;
    });
    if (!info) return with_context(fmt::format("pid {}", process.pid()), info.error());
    if (!*info) continue;
    PythonRuntime rt;
    rt.pid = process.pid();
    rt.object_path = o->path;
    rt.object = **info;
    auto bias = load_bias(*o, *elf);
    if (!bias)
      return fail("{}: {} is mapped without its code, so its addresses are unknown", rt.name(),
                  o->path);
    rt.load_bias = *bias;
    const auto& v = rt.object.version;
    if (v.major == 3 && v.minor >= 13) {
      // _PyRuntime's initializer holds _Py_DebugOffsets: read it from the file, else from the
      // process.
      std::vector<uint8_t> bytes(python_debug_offsets_size());
      if (auto b = elf->allocated_bytes(rt.object.runtime_addr, bytes.size())) {
        std::copy(b->begin(), b->end(), bytes.begin());
      } else if (!process_target_memory(rt.pid)(rt.object.runtime_addr + rt.load_bias, bytes)) {
        return fail("{}: cannot read _Py_DebugOffsets at the start of _PyRuntime", rt.name());
      }
      auto layout = parse_python_debug_offsets(bytes);
      if (!layout) return with_context(rt.name(), layout.error());
      rt.layout = *layout;
    } else if (auto layout = python_layout_for(v, rt.object.debug)) {
      rt.layout = *layout;
    } else {
      return fail(
          "{}: no table of offsets for Python {}.{} (uscope reads 3.8 to 3.12 from its "
          "table, 3.13+ from the interpreter's _Py_DebugOffsets)",
          rt.name(), v.major, v.minor);
    }
    // USCOPE_PYTHON_THREADS_BY_FS_BASE=1: thread states are told apart as 3.8-3.10's are, by
    // thread_id (pthread_self() in every version) against each thread's fs base, also where
    // native_thread_id says it: the tests run that path on the python3.11 they have.
    static const bool by_fs_base = std::getenv("USCOPE_PYTHON_THREADS_BY_FS_BASE") != nullptr;
    if (by_fs_base) rt.layout.bpf.tstate_native_thread_id = PY_NO_OFFSET;
    rt.layout.bpf.version = v.code();
    rt.proc.runtime = rt.object.runtime_addr + rt.load_bias;
    for (int i = 0; i < PY_EVAL_RANGES; ++i) {
      if (rt.object.eval_start[i] == 0) continue;
      rt.proc.eval_start[i] = rt.object.eval_start[i] + rt.load_bias;
      rt.proc.eval_end[i] = rt.object.eval_end[i] + rt.load_bias;
    }
    rt.proc.off = rt.layout.bpf;
    return std::optional<PythonRuntime>(std::move(rt));
  }
  return std::optional<PythonRuntime>();
}

Result<std::vector<PythonThread>> python_threads(const PythonRuntime& rt, const TargetMemory& mem,
                                                 const ThreadsByFsBase* fs_bases) {
  const auto& l = rt.layout;
  const auto& o = l.bpf;
  std::vector<PythonThread> threads;
  auto interp = read_value<uint64_t>(mem, rt.proc.runtime + o.runtime_interp_head);
  if (!interp) return fail("{}: cannot read _PyRuntime at {:#x}", rt.name(), rt.proc.runtime);
  auto gil = python_gil_holder(rt, mem);
  std::set<uint64_t> seen;
  for (int ni = 0; *interp != 0 && ni < 64 && seen.insert(*interp).second; ++ni) {
    auto ts = read_value<uint64_t>(mem, *interp + o.interp_threads_head);
    if (!ts) return fail("{}: cannot read PyInterpreterState at {:#x}", rt.name(), *interp);
    for (int n = 0; *ts != 0 && n < PY_MAX_THREADS && seen.insert(*ts).second; ++n) {
      PythonThread t;
      t.tstate = *ts;
      auto ip = read_value<uint64_t>(mem, *ts + l.tstate_interp);
      auto tid = read_value<uint64_t>(mem, *ts + o.tstate_thread_id);
      if (!ip || !tid) return fail("{}: cannot read PyThreadState at {:#x}", rt.name(), *ts);
      t.interp = *ip;
      t.thread_id = *tid;
      if (o.tstate_native_thread_id != PY_NO_OFFSET) {
        auto native = read_value<uint64_t>(mem, *ts + o.tstate_native_thread_id);
        if (!native) return fail("{}: cannot read PyThreadState at {:#x}", rt.name(), *ts);
        t.native_id = static_cast<pid_t>(*native);
      } else if (fs_bases) {
        if (auto it = fs_bases->find(t.thread_id); it != fs_bases->end()) t.native_id = it->second;
      }
      t.holds_gil = gil && *gil && **gil == *ts;
      threads.push_back(t);
      ts = read_value<uint64_t>(mem, *ts + o.tstate_next);
      if (!ts) return fail("{}: cannot read PyThreadState.next", rt.name());
    }
    interp = read_value<uint64_t>(mem, *interp + l.interp_next);
    if (!interp) return fail("{}: cannot read PyInterpreterState.next", rt.name());
  }
  return threads;
}

Result<std::optional<uint64_t>> python_gil_holder(const PythonRuntime& rt,
                                                  const TargetMemory& mem) {
  const auto& l = rt.layout;
  if (l.runtime_tstate_current != PY_NO_OFFSET) {
    auto t = read_value<uint64_t>(mem, rt.proc.runtime + l.runtime_tstate_current);
    if (!t) return fail("{}: cannot read _PyRuntime.gilstate.tstate_current", rt.name());
    return std::optional<uint64_t>(*t);
  }
  if (l.interp_ceval_gil == PY_NO_OFFSET) return std::optional<uint64_t>();
  // 3.12+: the main interpreter's GIL (the first in the list is the newest; the GIL of
  // subinterpreters with their own is theirs).
  auto interp = read_value<uint64_t>(mem, rt.proc.runtime + l.bpf.runtime_interp_head);
  auto gil = interp ? read_value<uint64_t>(mem, *interp + l.interp_ceval_gil) : std::nullopt;
  auto locked = gil ? read_value<int32_t>(mem, *gil + l.gil_locked) : std::nullopt;
  auto holder = gil ? read_value<uint64_t>(mem, *gil + l.gil_last_holder) : std::nullopt;
  if (!locked || !holder) return fail("{}: cannot read the interpreter's GIL", rt.name());
  return std::optional<uint64_t>(*locked ? *holder : 0);
}

Result<void> validate_python_runtime(const PythonRuntime& rt) {
  return validate_python_runtime(rt, process_target_memory(rt.pid));
}

namespace {

Result<void> validate_once(const PythonRuntime& rt, const TargetMemory& mem,
                           const ThreadsByFsBase* fs_bases) {
  const auto& o = rt.layout.bpf;
  std::string misfit = fmt::format("the offsets of {}.{} do not fit", rt.object.version.major,
                                   rt.object.version.minor);
  auto head = read_value<uint64_t>(mem, rt.proc.runtime + o.runtime_interp_head);
  if (!head) return fail("{}: cannot read _PyRuntime at {:#x}", rt.name(), rt.proc.runtime);
  if (!plausible_pointer(*head))
    return fail("{}: _PyRuntime.interpreters.head reads {:#x}, not a pointer: {}", rt.name(), *head,
                misfit);
  auto threads = python_threads(rt, mem, fs_bases);
  if (!threads) return tl::unexpected(threads.error());
  if (threads->empty())
    return fail("{}: the main interpreter has no thread state (not initialized, or finalizing)",
                rt.name());
  std::set<pid_t> tids = process_task_ids(rt.pid);
  for (const auto& t : *threads) {
    if (!plausible_pointer(t.interp))
      return fail("{}: PyThreadState.interp reads {:#x}, not a pointer: {}", rt.name(), t.interp,
                  misfit);
    if (t.thread_id == 0) return fail("{}: PyThreadState.thread_id reads 0: {}", rt.name(), misfit);
    if (o.tstate_native_thread_id != PY_NO_OFFSET && !tids.empty() && !tids.contains(t.native_id))
      return fail("{}: PyThreadState.native_thread_id reads {}, not a thread of the process: {}",
                  rt.name(), t.native_id, misfit);
    if (o.tstate_native_thread_id == PY_NO_OFFSET && !plausible_pointer(t.thread_id))
      return fail("{}: PyThreadState.thread_id reads {:#x}, not a pointer (pthread_self()): {}",
                  rt.name(), t.thread_id, misfit);
  }
  if (o.tstate_native_thread_id == PY_NO_OFFSET && fs_bases && !fs_bases->empty() &&
      std::none_of(threads->begin(), threads->end(),
                   [](const PythonThread& t) { return t.native_id != 0; }))
    return fail(
        "{}: no PyThreadState.thread_id (the first reads {:#x}) is the fs base (pthread_self()) "
        "of a thread of the process: {}",
        rt.name(), threads->front().thread_id, misfit);
  if (threads->front().interp != *head)
    return fail(
        "{}: PyThreadState.interp reads {:#x}, not the interpreter {:#x} whose list holds "
        "it: {}",
        rt.name(), threads->front().interp, *head, misfit);
  // A frame's code object is a code object.
  if (rt.object.code_type_addr == 0) return {};
  uint64_t code_type = rt.object.code_type_addr + rt.load_bias;
  for (const auto& t : *threads) {
    auto frames = python_thread_frames(rt, mem, t.tstate, 8);
    if (!frames) return tl::unexpected(frames.error());
    for (const auto& f : *frames) {
      auto type = read_value<uint64_t>(mem, f.code + 8);
      if (!type || *type != code_type)
        return fail("{}: a frame's code object at {:#x} has type {:#x}, not PyCode_Type {:#x}: {}",
                    rt.name(), f.code, type.value_or(0), code_type, misfit);
    }
  }
  return {};
}

}  // namespace

// The threads run while they are read: a running thread's _PyCFrame, read from its thread state,
// may be a local of an eval call that has returned by the time the _PyCFrame itself is read, its
// stack slot reused (a ctypes callback enters and leaves the eval function ~100,000 times a second;
// `uscope dump` of one failed validation 2 times in 30 so, and a profile that failed it had no
// Python frames for its whole session). Offsets that do not fit fail every read; a torn read
// fails once: the check is read again, afresh (mem may be a page cache that holds the torn read),
// and fails only when every read does.
Result<void> validate_python_runtime(const PythonRuntime& rt, const TargetMemory& mem,
                                     const ThreadsByFsBase* fs_bases) {
  constexpr int kReads = 5;
  auto ok = validate_once(rt, mem, fs_bases);
  for (int i = 1; i < kReads && !ok; ++i)
    ok = validate_once(rt, process_target_memory(rt.pid), fs_bases);
  return ok;
}

Result<std::vector<PythonRawFrame>> python_thread_frames(const PythonRuntime& rt,
                                                         const TargetMemory& mem, uint64_t tstate,
                                                         size_t max_frames) {
  const auto& l = rt.layout;
  const auto& o = l.bpf;
  std::vector<PythonRawFrame> frames;
  auto first = current_frame(rt, mem, tstate);
  if (!first) return tl::unexpected(first.error());
  uint64_t frame = *first;
  std::set<uint64_t> seen;
  std::vector<uint8_t> buf(std::max<uint32_t>(o.frame_read_size, 8));
  while (frame != 0 && frames.size() < max_frames) {
    if (!seen.insert(frame).second)
      return fail("{}: the frame chain of thread state {:#x} loops at {:#x}", rt.name(), tstate,
                  frame);
    if (!mem(frame, buf)) return fail("{}: cannot read a frame at {:#x}", rt.name(), frame);
    auto ptr = [&](uint32_t off) {
      uint64_t v = 0;
      if (off + 8 <= buf.size()) std::memcpy(&v, buf.data() + off, 8);
      return v;
    };
    auto byte = [&](uint32_t off) { return off < buf.size() ? buf[off] : uint8_t{0}; };
    // 3.14's f_executable is a stack reference whose low bits are tags; objects are aligned.
    uint64_t code = ptr(o.frame_code) & ~uint64_t{7};
    uint64_t previous = ptr(o.frame_previous);
    PythonRawFrame f;
    f.code = code;
    bool shown = true;
    if (o.frame_model == PY_FRAMES_PER_EVAL) {
      int32_t lasti = 0;
      if (o.frame_instr + 4 <= buf.size()) std::memcpy(&lasti, buf.data() + o.frame_instr, 4);
      // f_lasti counts bytes before 3.10, code units from 3.10; -1 before the first.
      if (lasti >= 0) f.instr = rt.object.version.minor <= 9 ? lasti / 2 : lasti;
      f.entry = true;
    } else {
      uint8_t owner = byte(l.frame_owner);
      if (o.frame_model == PY_FRAMES_OWNER && owner == o.owner_cstack) {
        // A shim: the frame before it is the first its eval call ran.
        if (!frames.empty()) frames.back().entry = true;
        shown = false;
      } else if (o.frame_model == PY_FRAMES_OWNER && o.owner_cstack > PY_OWNED_BY_CSTACK &&
                 owner >= PY_OWNED_BY_CSTACK) {
        shown = false;  // 3.14+: owned by the interpreter (its base frame), no function's
      }
      uint64_t instr = ptr(o.frame_instr);
      uint64_t code_start = code + o.code_adaptive;
      if (shown && instr >= code_start && (instr - code_start) / 2 < PY_INSTR_UNKNOWN)
        f.instr = static_cast<uint32_t>((instr - code_start) / 2);
      if (shown && owner != kOwnedByGenerator && l.code_first_traceable != PY_NO_OFFSET) {
        // Not started yet (_PyFrame_IsIncomplete): traceback does not show it.
        auto first_traceable = read_value<int32_t>(mem, code + l.code_first_traceable);
        if (!first_traceable)
          return fail("{}: cannot read a code object at {:#x}", rt.name(), code);
        if (instr < code_start + 2 * static_cast<int64_t>(*first_traceable)) shown = false;
      }
      if (o.frame_model == PY_FRAMES_IS_ENTRY) f.entry = byte(o.frame_entry) != 0;
    }
    if (shown) {
      if (!plausible_pointer(code))
        return fail("{}: a frame at {:#x} has code {:#x}, not a pointer", rt.name(), frame, code);
      frames.push_back(f);
    }
    frame = previous;
  }
  return frames;
}

}  // namespace uscope
