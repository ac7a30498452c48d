// The symbolizer's back end: objects come from the shared ObjectStore, where libdwfl
// (discover/debug_info.h) finds what stripped objects lack (debug files by build-id and
// debuglink, MiniDebugInfo) and reads lines and inlined calls. Three things stay uscope's own:
// - the address -> symbol lookup (SymbolTable, sorted once): libdwfl's dwfl_module_addrinfo
//   scans the whole table per call, 3 ms a lookup in libjvm.so (bench/symbolize_bench);
// - which of several aliases at one address is shown: libdwfl returns the first in table order
//   (__libc_malloc for malloc's address in libc's debug file), users know malloc
//   (SymbolTable::preferred_alias); and a size-0 symbol (assembly without .size) is extended to
//   the next one within its section, where libdwfl would match it only at its own address;
// - normalization (normalize.h, from /proc/PID/maps): libdwfl's dwfl_linux_proc_report makes a
//   Dwfl per process with its own modules, where the store shares one object across processes.
#include "symbolize/symbolizer.h"

#include <elf.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <optional>
#include <set>
#include <utility>

#include <fmt/format.h>

#include "bpf/hotspot.h"
#include "discover/elf_file.h"
#include "discover/symbol_table.h"
#include "symbolize/perf_map.h"
#include "symbolize/vdso_image.h"

#include "discover/hotspot_runtime.h"

namespace uscope {

struct Symbolizer::ProcessState {
  Process maps;
  std::vector<std::shared_ptr<StoredObject>> held{};  // see remember()
  std::optional<PerfMap> perf_map{};                  // the copy read last, if any
  bool exited = false;  // maps adopted from its exit: /proc has nothing newer to say
  // Its Python interpreter, looked for at its first interpreter frame.
  bool python_looked = false;
  std::optional<PythonRuntime> python{};
  // Code objects of its stacks that did not read while it lived (read_runtime_code): freed
  // before then (a module's body, an exec()'d string, run once), not a process gone.
  std::set<uint64_t> python_unread{};
  // Its JVM's layout, looked for at its first Java frame, and again (its maps read afresh) while
  // not found: a stack announced early in the JVM's start may come before libjvm.so was in the
  // maps read, or before its code heaps were made.
  int hotspot_looks = 0;
  std::chrono::steady_clock::time_point hotspot_next_look{};
  std::optional<HotspotCodeLayout> hotspot{};
  uint64_t hotspot_code_start = 0;  // bpf/hotspot.h's hs_proc.code_start
  // Its V8, likewise.
  bool v8_looked = false;
  std::optional<V8Runtime> v8{};
};

namespace {

// How often, and how many times, a JVM whose layout was not found is looked at again (5 s: a
// JVM's start).
constexpr auto kHotspotLookInterval = std::chrono::milliseconds(100);
constexpr int kHotspotLooks = 50;

// True if `start` and `addr` lie in the same allocated section. Files without section headers
// (some stripped ones) give no bound, and the nearest symbol is the best guess there.
bool same_section(const ElfFile& elf, uint64_t start, uint64_t addr) {
  const auto& sections = elf.sections();
  bool any = false;
  for (const ElfSection& s : sections) {
    if (!(s.flags & SHF_ALLOC) || s.size == 0) continue;
    any = true;
    if (start >= s.addr && start - s.addr < s.size) return addr >= s.addr && addr - s.addr < s.size;
  }
  return !any;
}

// SymbolTable::containing() honours sizes, and matches a size-0 symbol only at its own address.
// Hand-written assembly often lacks .size, so a size-0 symbol is taken to extend to the next
// symbol within its section; a gap after a sized symbol (padding) stays unknown.
const FunctionSymbol* find_function(const ElfFile& elf, const SymbolTable& table, uint64_t addr) {
  const auto& fns = table.functions();
  const FunctionSymbol* found = table.containing(addr);
  if (found == nullptr) {
    auto next = std::upper_bound(fns.begin(), fns.end(), addr,
                                 [](uint64_t a, const FunctionSymbol& f) { return a < f.addr; });
    if (next == fns.begin()) return nullptr;
    const uint64_t start = std::prev(next)->addr;
    for (auto it = std::prev(next);; --it) {
      if (it->size != 0) return nullptr;
      found = &*it;
      if (it == fns.begin() || std::prev(it)->addr != start) break;
    }
    if (!same_section(elf, start, addr)) return nullptr;
  }
  return table.preferred_alias(*found, addr);
}

// The JVM of a process when the caller gave no source of its own.
std::optional<HotspotRuntime> default_hotspot_vm(const Process& p) {
  if (auto rt = find_hotspot_runtime(p); rt && *rt) return std::move(**rt);
  return std::nullopt;
}

// A read of a process's memory that fails: cached Java code is named without one.
bool no_memory(uint64_t, std::span<uint8_t>) {
  return false;
}

SymbolOrigin origin_of(SymbolSource s) {
  switch (s) {
    case SymbolSource::Symtab:
      return SymbolOrigin::Symtab;
    case SymbolSource::Dynsym:
      return SymbolOrigin::Dynsym;
    case SymbolSource::MiniDebugInfo:
      return SymbolOrigin::MiniDebugInfo;
    case SymbolSource::DebugFile:
      return SymbolOrigin::DebugFile;
    case SymbolSource::Gopclntab:
      return SymbolOrigin::Gopclntab;
  }
  return SymbolOrigin::None;
}

std::vector<Frame> fill(std::span<const uint64_t> addresses, FrameMiss miss) {
  std::vector<Frame> frames(addresses.size());
  for (size_t i = 0; i < addresses.size(); ++i) {
    frames[i].address = addresses[i];
    frames[i].miss = miss;
  }
  return frames;
}

// Return addresses are looked up one byte earlier: inside the call instruction, hence inside the
// calling function even when the call was its last instruction (a call to a noreturn function).
// The exception is a signal handler's return address: the first byte of the signal trampoline
// (glibc's __restore_rt), which no call precedes; its - 1 falls outside any symbol, and
// symbolize() then looks up the address itself.
uint64_t lookup_address(std::span<const uint64_t> addresses, size_t i, bool first_is_ip) {
  const bool is_return = i > 0 || !first_is_ip;
  return is_return && addresses[i] > 0 ? addresses[i] - 1 : addresses[i];
}

// The perf map of `pid`, nullopt when it writes none or it cannot be read (a process gone, a
// map in a mount namespace not reachable): either way there is nothing to name JIT code with.
std::optional<PerfMap> read_perf_map(pid_t pid) {
  auto map = PerfMap::read(pid);
  if (!map || !*map) return std::nullopt;
  return std::move(**map);
}

}  // namespace

const char* to_string(FrameMiss miss) {
  switch (miss) {
    case FrameMiss::None:
      return "resolved";
    case FrameMiss::Unmapped:
      return "unmapped";
    case FrameMiss::NoSymbols:
      return "no symbols";
    case FrameMiss::UnknownAddress:
      return "no symbol covers the address";
    case FrameMiss::ProcessGone:
      return "process gone";
    case FrameMiss::NoAccess:
      return "maps unreadable";
    case FrameMiss::Unreadable:
      return "object unreadable";
    case FrameMiss::NoPerfMap:
      return "JIT code without a perf map";
    case FrameMiss::InterpreterUnreadable:
      return "interpreter frame unreadable";
    case FrameMiss::CodeGone:
      return "code freed or unloaded before it was named";
  }
  return "?";
}

std::string Frame::describe() const {
  if (miss == FrameMiss::None) {
    std::string where =
        function_offset ? fmt::format("{}+{:#x}", function, function_offset) : function;
    return fmt::format("{} ({})", where, object);
  }
  if (!object.empty())
    return fmt::format("{:#x} ([unknown: {}] in {})", address, to_string(miss), object);
  return fmt::format("{:#x} [unknown: {}]", address, to_string(miss));
}

Symbolizer::Symbolizer(SymbolizerOptions options) : options_(std::move(options)) {
  const bool defaults = options_.debug.debug_roots == DebugSearchPaths{}.debug_roots &&
                        options_.debug.root_prefix.empty() &&
                        options_.max_objects == ObjectStore::kDefaultMaxObjects;
  store_ = options_.objects ? options_.objects
           : defaults       ? ObjectStore::shared()
                            : std::make_shared<ObjectStore>(options_.max_objects, options_.debug);
}
Symbolizer::Symbolizer(Symbolizer&&) noexcept = default;
Symbolizer& Symbolizer::operator=(Symbolizer&&) noexcept = default;
Symbolizer::~Symbolizer() = default;

std::shared_ptr<StoredObject> Symbolizer::load(const MappedObject& object) {
  ObjectSlot& slot = objects_[ObjectKey{object.dev_major, object.dev_minor, object.inode}];
  if (auto held = slot.object.lock()) return held;
  // Failures are kept too: an object that cannot be opened now (permissions, deleted and
  // unreachable) will not become openable on the next frame, and retrying would cost a syscall
  // per frame of every stack through it.
  if (slot.unreadable) return nullptr;
  auto opened = store_->open(object.open_path, object.path);
  if (!opened && !object.deleted && !object.path.empty() && object.path != object.open_path) {
    // When a process has exited, /proc/PID/map_files and /proc/PID/root are gone with it, but
    // the file may still be at its mapped path (same mount namespace). Only a file with the same
    // device and inode is the one that was mapped.
    struct stat st;
    if (::stat(object.path.c_str(), &st) == 0 && st.st_ino == object.inode &&
        major(st.st_dev) == object.dev_major && minor(st.st_dev) == object.dev_minor)
      opened = store_->open(object.path, object.path);
  }
  if (!opened) {
    slot.unreadable = true;
    return nullptr;
  }
  slot.object = *opened;
  return *opened;
}

void Symbolizer::add_go_frames(Frame& f, const GoPclntab& table, uint64_t link_address) {
  std::vector<GoFrame> frames = table.frames_at(link_address);
  if (frames.empty()) return;
  f.file = frames.back().file;
  f.line = frames.back().line;
  for (size_t i = 0; i + 1 < frames.size(); ++i)
    f.inlined.push_back({std::move(frames[i].function), std::move(frames[i].file), frames[i].line});
}

void Symbolizer::add_lines(Frame& f, StoredObject& object, uint64_t link_address) {
  DebugInfo* debug = object.debug_info();
  if (debug == nullptr) return;
  std::optional<SourcePosition> pos = debug->source_at(link_address);
  if (!pos) return;
  f.file = std::move(pos->file);
  f.line = pos->line;
  for (auto& call : pos->inlined)
    f.inlined.push_back({std::move(call.function), std::move(call.file), call.line});
}

Frame Symbolizer::resolve(const NormalizedAddress& n, uint64_t address, uint64_t lookup,
                          ProcessState* state, bool& perf_map_reread) {
  Frame f;
  f.address = address;
  f.object = n.name;
  f.miss = n.miss;
  if (n.object == nullptr && n.name == "[vdso]") {
    // No file, but the same image in every process: uscope's own (vdso_image.h).
    std::shared_ptr<StoredObject> vdso = own_vdso(n.mapping_size, store_->debug_paths());
    if (!vdso) return f;
    f.file_offset = n.file_offset + (address - lookup);
    f = name_in(std::move(f), *vdso, n.file_offset, address, lookup);
    // Its exports come in pairs (clock_gettime, __vdso_clock_gettime): the vdso's own name, as
    // perf shows it, tells it apart from libc's wrapper of the same name that called it.
    if (f.miss == FrameMiss::None && !f.function.starts_with("__vdso_")) {
      const std::optional<uint64_t> link = vdso->elf().offset_to_vaddr(n.file_offset);
      const uint64_t start = *link - (f.function_offset - (address - lookup));
      for (const FunctionSymbol& alias : (*vdso->symbols())->functions())
        if (alias.addr == start && alias.name == "__vdso_" + f.function) f.function = alias.name;
    }
    return f;
  }
  if (n.object == nullptr) {
    if (n.miss != FrameMiss::NoSymbols || state == nullptr) return f;
    // Memory no file backs: JIT code, named by the process's perf map. A miss re-reads the map
    // once per call (the JIT may have written the line since); a process that exited keeps the
    // copy read while it lived.
    const PerfMapSymbol* sym = state->perf_map ? state->perf_map->find(lookup) : nullptr;
    if (sym == nullptr && !perf_map_reread && process_alive(state->maps.pid())) {
      perf_map_reread = true;
      if (auto fresh = read_perf_map(state->maps.pid())) state->perf_map = std::move(fresh);
      sym = state->perf_map ? state->perf_map->find(lookup) : nullptr;
    }
    if (sym == nullptr) {
      if (state->perf_map)
        f.miss = FrameMiss::UnknownAddress;
      else if (n.executable && n.name == "[anon]")
        f.miss = FrameMiss::NoPerfMap;
      return f;
    }
    f.function = demangle(sym->name);
    if (f.function != sym->name) f.mangled = sym->name;
    f.function_offset = address - sym->start;
    f.origin = SymbolOrigin::PerfMap;
    f.miss = FrameMiss::None;
    return f;
  }
  // Report the offset of the address as given; the lookup address is at most one byte before.
  f.file_offset = n.file_offset + (address - lookup);
  f.started_as = n.object->started_as;

  std::shared_ptr<StoredObject> o = load(*n.object);
  if (!o) {
    f.miss = FrameMiss::Unreadable;
    return f;
  }
  return name_in(std::move(f), *o, n.file_offset, address, lookup);
}

Frame Symbolizer::name_in(Frame f, StoredObject& object, uint64_t file_offset, uint64_t address,
                          uint64_t lookup) {
  StoredObject* o = &object;
  f.build_id = o->build_id();
  auto symbols = o->symbols();
  if (!symbols || (*symbols)->functions().empty()) {
    f.miss = FrameMiss::NoSymbols;
    return f;
  }
  std::optional<uint64_t> link = o->elf().offset_to_vaddr(file_offset);
  const FunctionSymbol* fn = link ? find_function(o->elf(), **symbols, *link) : nullptr;
  if (fn == nullptr) {
    f.miss = FrameMiss::UnknownAddress;
    return f;
  }
  f.function = fn->demangled();
  // "memcpy@@GLIBC_2.14" is memcpy: a symbol version is no mangling.
  if (std::string plain = fn->name.substr(0, fn->name.find('@')); plain != f.function)
    f.mangled = std::move(plain);
  f.function_offset = (*link - fn->addr) + (address - lookup);
  f.origin = origin_of(fn->source);
  f.miss = FrameMiss::None;
  // Go: the inline tree says which functions inlined into this one ran at the address; like
  // `go tool pprof`, they are frames of their own, with or without --lines.
  if (const GoPclntab* go = o->go_pclntab()) {
    add_go_frames(f, *go, *link);
    return f;
  }
  if (options_.lines) add_lines(f, *o, *link);
  return f;
}

Symbolizer::ProcessState* Symbolizer::cached(pid_t pid) {
  auto it = processes_.find(pid);
  return it == processes_.end() ? nullptr : it->second.get();
}

std::vector<Frame> Symbolizer::symbolize(pid_t pid, std::span<const uint64_t> addresses,
                                         bool first_is_ip) {
  ProcessState* state = cached(pid);
  bool refreshed = false;  // maps read during this call: re-reading again would change nothing
  if (state == nullptr) {
    auto p = open_process(pid);
    // A zombie's maps read empty: it has exited as surely as a reaped process. So has one past
    // exit_mm() that is no zombie yet (its maps read empty, or not at all): its maps as it
    // exited are on their way (caught_up), where /proc has nothing left to say.
    const bool exited = p ? p->mappings().empty() && process_exiting(pid)
                          : !process_alive(pid) || p.error().errnum == ESRCH ||
                                p.error().errnum == ENOENT || process_exiting(pid);
    if (p && !exited) {
      state = processes_.emplace(pid, std::make_unique<ProcessState>(ProcessState{std::move(*p)}))
                  .first->second.get();
    } else {
      state = exited ? caught_up(pid) : nullptr;
      if (state == nullptr)
        return fill(addresses, exited ? FrameMiss::ProcessGone : FrameMiss::NoAccess);
    }
    refreshed = true;
  }

  bool gone = false;  // a refresh found the process exited; its later misses say so too
  bool perf_map_reread = false;
  std::vector<Frame> frames;
  frames.reserve(addresses.size());
  for (size_t i = 0; i < addresses.size(); ++i) {
    if (is_interpreter_frame(addresses[i])) {
      frames.push_back(tagged_frame(pid, state, addresses[i]));
      continue;
    }
    const uint64_t lookup = lookup_address(addresses, i, first_is_ip);
    NormalizedAddress n = normalize(state->maps, lookup);
    if (n.miss == FrameMiss::Unmapped && !refreshed && !state->exited) {
      // Most likely a library dlopen()ed after the maps were cached. Earlier frames are already
      // copied out, so replacing the snapshot under them is safe.
      refreshed = true;
      auto p = open_process(pid);
      if (p && !(p->mappings().empty() && process_exiting(pid))) {
        state->maps = std::move(*p);
      } else if (caught_up(pid) == nullptr) {
        gone = !process_alive(pid) || process_exiting(pid);
      }
      n = normalize(state->maps, lookup);
    }
    if (n.miss == FrameMiss::Unmapped && gone) n.miss = FrameMiss::ProcessGone;
    frames.push_back(resolve(n, addresses[i], lookup, state, perf_map_reread));
    if (frames.back().miss == FrameMiss::UnknownAddress && lookup != addresses[i])
      if (Frame at = resolve(normalize(state->maps, addresses[i]), addresses[i], addresses[i],
                             state, perf_map_reread);
          at.miss == FrameMiss::None)
        frames.back() = std::move(at);  // a signal trampoline: see lookup_address()
  }
  return frames;
}

Frame Symbolizer::symbolize(pid_t pid, uint64_t address) {
  return symbolize(pid, std::span<const uint64_t>(&address, 1), true).front();
}

std::vector<Frame> Symbolizer::symbolize(const Process& process,
                                         std::span<const uint64_t> addresses, bool first_is_ip) {
  std::vector<Frame> frames;
  frames.reserve(addresses.size());
  ProcessState* state = cached(process.pid());
  bool perf_map_reread = false;
  for (size_t i = 0; i < addresses.size(); ++i) {
    if (is_interpreter_frame(addresses[i])) {
      frames.push_back(tagged_frame(process.pid(), state, addresses[i]));
      continue;
    }
    const uint64_t lookup = lookup_address(addresses, i, first_is_ip);
    frames.push_back(
        resolve(normalize(process, lookup), addresses[i], lookup, state, perf_map_reread));
  }
  return frames;
}

void Symbolizer::hold_code_objects(ProcessState& state) {
  // Opened now, while /proc/PID/map_files reaches them; held so that neither the process's exit
  // nor the store's eviction loses them before its stacks are symbolized. A thousand processes
  // of one binary hold one object.
  for (const MappedObject& o : state.maps.objects()) {
    const bool code = std::any_of(o.mappings.begin(), o.mappings.end(),
                                  [](const Mapping& m) { return m.executable(); });
    if (!code) continue;
    if (auto object = load(o)) state.held.push_back(std::move(object));
  }
}

void Symbolizer::remember(pid_t pid) {
  if (processes_.contains(pid)) return;
  auto p = open_process(pid);
  if (!p) return;
  auto state = std::make_unique<ProcessState>(ProcessState{std::move(*p)});
  hold_code_objects(*state);
  state->perf_map = read_perf_map(pid);
  processes_.emplace(pid, std::move(state));
}

void Symbolizer::adopt(Process last) {
  auto& slot = processes_[last.pid()];
  if (auto hint = started_as_.find(last.pid()); hint != started_as_.end())
    last.name_started_as(hint->second);
  if (slot && slot->maps.main_object() != nullptr)
    last.name_started_as(slot->maps.main_object()->started_as);
  if (!slot) slot = std::make_unique<ProcessState>(ProcessState{Process{}});
  if (!slot->exited) exited_.push_back(last.pid());
  slot->maps = std::move(last);
  slot->exited = true;
  hold_code_objects(*slot);
  if (exited_.size() > kMaxExited) {
    processes_.erase(exited_.front());
    exited_.pop_front();
  }
}

void Symbolizer::started_as(pid_t pid, std::string path) {
  started_as_[pid] = std::move(path);
}

Result<Process> Symbolizer::open_process(pid_t pid) const {
  auto p = Process::open(pid);
  if (p)
    if (auto hint = started_as_.find(pid); hint != started_as_.end())
      p->name_started_as(hint->second);
  return p;
}

Symbolizer::ProcessState* Symbolizer::caught_up(pid_t pid) {
  if (!options_.catch_up) return nullptr;
  options_.catch_up();
  ProcessState* state = cached(pid);
  return state != nullptr && state->exited ? state : nullptr;
}

void Symbolizer::forget(pid_t pid) {
  processes_.erase(pid);
  python_codes_.forget(pid);
  v8_functions_.forget(pid);
  java_codes_.forget(pid);
}

std::vector<std::pair<std::string, uint64_t>> Symbolizer::losses() const {
  std::vector<std::pair<std::string, uint64_t>> out;
  if (uint64_t n = java_codes_.code_gone()) out.emplace_back("java_code_gone", n);
  if (uint64_t n = java_codes_.methods_reused()) out.emplace_back("java_method_reused", n);
  if (python_code_gone_) out.emplace_back("python_code_gone", python_code_gone_);
  return out;
}

const PythonRuntime* Symbolizer::python_runtime(ProcessState* state) {
  if (state == nullptr) return nullptr;
  if (!state->python_looked) {
    state->python_looked = true;
    if (auto rt = find_python_runtime(state->maps); rt && *rt) state->python = std::move(**rt);
  }
  return state->python ? &*state->python : nullptr;
}

Frame Symbolizer::python_frame(pid_t pid, ProcessState* state, uint64_t value) {
  Frame f;
  f.address = value;
  f.object = "[python]";
  const uint64_t code = PY_FRAME_CODE(value);
  const PythonCode* c = python_codes_.find(pid, code);
  if (c == nullptr) {
    if (const PythonRuntime* rt = python_runtime(state); rt && !state->exited) {
      if (auto got = python_codes_.get(*rt, process_target_memory(pid), code)) c = *got;
    }
  }
  if (c == nullptr) {
    f.miss = state != nullptr && state->python_unread.contains(code) ? FrameMiss::CodeGone
             : state == nullptr || state->exited                     ? FrameMiss::ProcessGone
                                                 : FrameMiss::InterpreterUnreadable;
    return f;
  }
  f.function = c->qualname;
  f.file = c->filename;
  const uint32_t instr = PY_FRAME_INSTR(value);
  if (instr != PY_INSTR_UNKNOWN) f.line = c->line_of(instr);
  if (f.line <= 0) f.line = c->first_line;
  f.origin = SymbolOrigin::Python;
  return f;
}

Frame Symbolizer::tagged_frame(pid_t pid, ProcessState* state, uint64_t value) {
  if (UNWIND_FRAME_TAG(value) == UNWIND_FRAME_TAG_PYTHON) return python_frame(pid, state, value);
  if (UNWIND_FRAME_TAG(value) == UNWIND_FRAME_TAG_V8) return v8_frame(pid, state, value);
  if (UNWIND_FRAME_TAG(value) == UNWIND_FRAME_TAG_HS_RETURN ||
      UNWIND_FRAME_TAG(value) == UNWIND_FRAME_TAG_HS_PC ||
      UNWIND_FRAME_TAG(value) == UNWIND_FRAME_TAG_HS_INTERP)
    return java_frame(pid, state, value);
  Frame f;  // a runtime this symbolizer does not name yet
  f.address = value;
  f.miss = FrameMiss::InterpreterUnreadable;
  return f;
}

const HotspotCodeLayout* Symbolizer::hotspot_layout(pid_t pid, ProcessState* state) {
  if (state == nullptr) return nullptr;
  const auto now = std::chrono::steady_clock::now();
  if (!state->hotspot && !state->exited && state->hotspot_looks < kHotspotLooks &&
      now >= state->hotspot_next_look) {
    if (state->hotspot_looks++ > 0)
      if (auto p = open_process(pid); p && !p->mappings().empty()) state->maps = std::move(*p);
    state->hotspot_next_look = now + kHotspotLookInterval;
    auto rt = options_.hotspot ? options_.hotspot(state->maps) : default_hotspot_vm(state->maps);
    if (rt) {
      TargetMemory mem = process_target_memory(pid);
      if (auto l = hotspot_code_layout(rt->vm, &mem)) {
        state->hotspot = *l;
        state->hotspot_code_start = rt->proc.code_start;
      }
    }
  }
  return state->hotspot ? &*state->hotspot : nullptr;
}

Frame Symbolizer::java_frame(pid_t pid, ProcessState* state, uint64_t value) {
  Frame f;
  f.address = value;
  f.object = "[java]";
  // What is cached names the frame even once the process is gone (or its JVM unreadable).
  static const HotspotCodeLayout kNoLayout;
  const HotspotCodeLayout* layout = hotspot_layout(pid, state);
  const bool live = layout != nullptr && !state->exited;
  const TargetMemory mem = live ? process_target_memory(pid) : TargetMemory(no_memory);
  const HotspotCodeLayout& l = layout ? *layout : kNoLayout;
  const uint64_t tag = UNWIND_FRAME_TAG(value);
  // Code frames record their blob from the code cache's start (read with the layout).
  const uint64_t code_start = layout ? state->hotspot_code_start : 0;
  auto name =
      tag == UNWIND_FRAME_TAG_HS_INTERP
          ? java_codes_.interpreted_frame(pid, l, mem, HS_FRAME_METHOD(value), HS_FRAME_BCI(value))
          : java_codes_.code_frame(pid, l, mem, HS_FRAME_BLOB(value, code_start),
                                   HS_FRAME_GEN(value), HS_FRAME_OFFSET(value),
                                   tag == UNWIND_FRAME_TAG_HS_RETURN);
  if (!name) {
    f.miss = name.error().errnum == ESTALE       ? FrameMiss::CodeGone
             : state == nullptr || state->exited ? FrameMiss::ProcessGone
                                                 : FrameMiss::InterpreterUnreadable;
    return f;
  }
  f.origin = SymbolOrigin::Java;
  f.java_kind = name->kind;
  f.comp_level = name->comp_level;
  if (name->methods.empty()) {  // a stub, the interpreter, an adapter
    f.function = fmt::format("[jvm stub: {}]", name->blob_name);
    return f;
  }
  const HotspotNamedMethod& holder = name->methods.back();
  f.function = holder.name;
  f.mangled = holder.name + holder.signature;  // overloads apart: "HotLoop.work(I)J"
  f.file = holder.file;
  f.line = std::max(holder.line, 0);
  for (size_t i = 0; i + 1 < name->methods.size(); ++i) {
    const HotspotNamedMethod& m = name->methods[i];
    f.inlined.push_back({m.name, m.file, std::max(m.line, 0)});
  }
  return f;
}

const V8Runtime* Symbolizer::v8_runtime(ProcessState* state) {
  if (state == nullptr) return nullptr;
  if (!state->v8_looked) {
    state->v8_looked = true;
    if (auto rt = find_v8_runtime(state->maps); rt && *rt) state->v8 = std::move(**rt);
  }
  return state->v8 ? &*state->v8 : nullptr;
}

Frame Symbolizer::v8_frame(pid_t pid, ProcessState* state, uint64_t value) {
  Frame f;
  f.address = value;
  f.object = "[v8]";
  const uint64_t sfi = V8_FRAME_SFI(value);
  const V8Function* fn = v8_functions_.find(pid, sfi);
  if (fn == nullptr) {
    if (const V8Runtime* rt = v8_runtime(state); rt && !state->exited) {
      if (auto got = v8_functions_.get(*rt, process_target_memory(pid), sfi)) fn = *got;
    }
  }
  if (fn == nullptr) {
    f.miss = state == nullptr || state->exited ? FrameMiss::ProcessGone
                                               : FrameMiss::InterpreterUnreadable;
    return f;
  }
  // As node's own stack traces name them: an anonymous function is "(anonymous)".
  f.function = fn->name.empty() ? "(anonymous)" : fn->name;
  f.file = fn->script;
  f.line = fn->line;
  f.origin = SymbolOrigin::V8;
  return f;
}

void Symbolizer::read_runtime_code(pid_t pid, std::span<const uint64_t> addresses) {
  ProcessState* state = nullptr;
  for (uint64_t a : addresses) {
    if (!is_interpreter_frame(a)) continue;
    const uint64_t tag = UNWIND_FRAME_TAG(a);
    const bool python = tag == UNWIND_FRAME_TAG_PYTHON, v8 = tag == UNWIND_FRAME_TAG_V8;
    if (python && python_codes_.find(pid, PY_FRAME_CODE(a))) continue;
    if (v8 && v8_functions_.find(pid, V8_FRAME_SFI(a))) continue;
    if (state == nullptr) {
      state = cached(pid);
      if (state == nullptr) {
        remember(pid);
        state = cached(pid);
      }
    }
    if (v8) {
      if (const V8Runtime* rt = v8_runtime(state))
        (void)v8_functions_.get(*rt, process_target_memory(pid), V8_FRAME_SFI(a));
      continue;
    }
    if (!python) {
      (void)tagged_frame(pid, state, a);  // fills the Java code cache
      continue;
    }
    const PythonRuntime* rt = python_runtime(state);
    if (rt == nullptr) continue;
    if (!python_codes_.get(*rt, process_target_memory(pid), PY_FRAME_CODE(a)) &&
        state->python_unread.insert(PY_FRAME_CODE(a)).second)
      ++python_code_gone_;
  }
}

}  // namespace uscope
