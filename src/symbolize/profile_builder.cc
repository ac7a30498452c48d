#include "symbolize/profile_builder.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <tuple>
#include <unordered_map>
#include <unordered_set>

#include "bpf/profile.h"
#include "bpf/unwind.h"
#include "symbolize/frame_names.h"

namespace uscope {

bool is_thread_entry(std::string_view function) {
  // Where the walk from a leaf ends when nothing cut it short. glibc: the program's entry and
  // the start of every thread (clone3 since 2.34, clone before). The Go runtime: every goroutine
  // returns into goexit, the main one starts in runtime.main, threads in mstart (".abi0" is how
  // the symbol table names assembly functions). HotSpot: Java threads start in
  // thread_native_entry, the launcher's main thread in JavaMain. Other runtimes (CPython, V8,
  // Rust's std) start their threads through glibc's start_thread.
  static constexpr std::string_view kEntries[] = {
      "_start",
      "main",
      "__libc_start_main",
      "__libc_start_call_main",
      "start_thread",
      "clone",
      "__clone",
      "clone3",
      "__clone3",
      "__GI___clone",
      "__GI___clone3",
      "runtime.goexit",
      "runtime.goexit.abi0",
      "runtime.main",
      "runtime.mstart",
      "runtime.mstart.abi0",
      "runtime.rt0_go",
      "runtime.rt0_go.abi0",
      "thread_native_entry",
      "JavaMain",
  };
  return std::ranges::find(kEntries, function) != std::end(kEntries);
}

namespace {

// A location is one address of one process. An address sampled as the instruction pointer is
// looked up as it is, the same address as a return address one byte earlier (in the call), so
// the two are different locations: they can name different functions.
struct UserAddress {
  pid_t pid;
  uint64_t address;
  bool is_ip;
  bool operator==(const UserAddress&) const = default;
};
struct UserAddressHash {
  size_t operator()(const UserAddress& a) const {
    return std::hash<uint64_t>()(a.address * 31 + static_cast<uint64_t>(a.pid) * 2 + a.is_ip);
  }
};

// Every distinct user address symbolized once, a process's addresses in two calls.
std::unordered_map<UserAddress, Frame, UserAddressHash> symbolize_user(
    std::span<const StackSample> samples, Symbolizer& symbolizer) {
  std::map<pid_t, std::pair<std::set<uint64_t>, std::set<uint64_t>>> by_pid;  // IPs, returns
  auto add = [&](pid_t pid, const std::vector<uint64_t>& user) {
    if (user.empty()) return;
    auto& [ips, returns] = by_pid[pid];
    ips.insert(user.front());
    returns.insert(user.begin() + 1, user.end());
  };
  for (const StackSample& s : samples) {
    add(s.pid, s.user);
    add(s.waker_pid, s.waker_user);  // --wakers: the waker's, in its own process
  }
  std::unordered_map<UserAddress, Frame, UserAddressHash> frames;
  for (auto& [pid, addresses] : by_pid) {
    auto& [ips, returns] = addresses;
    // The Symbolizer takes only a stack's first address as an IP and looks the others up one
    // byte earlier: giving it IP + 1 as a return address looks the IP up as itself, and all of a
    // process's IPs go in one call (one maps refresh at most, not one per IP).
    std::vector<uint64_t> shifted, interpreted;
    for (uint64_t ip : ips)
      if (is_interpreter_frame(ip))
        interpreted.push_back(ip);  // no address: named as it is
      else if (ip != UINT64_MAX)
        shifted.push_back(ip + 1);
    std::vector<Frame> at = symbolizer.symbolize(pid, interpreted, false);
    for (Frame& f : at) {
      uint64_t ip = f.address;
      frames.emplace(UserAddress{pid, ip, true}, std::move(f));
    }
    std::vector<Frame> named = symbolizer.symbolize(pid, shifted, false);
    for (Frame& f : named) {
      f.address -= 1;
      if (!f.object.empty() && f.file_offset > 0) f.file_offset -= 1;
      if (f.miss == FrameMiss::None && f.function_offset > 0) f.function_offset -= 1;
      uint64_t ip = f.address;
      frames.emplace(UserAddress{pid, ip, true}, std::move(f));
    }
    if (ips.contains(UINT64_MAX))
      frames.emplace(UserAddress{pid, UINT64_MAX, true}, symbolizer.symbolize(pid, UINT64_MAX));
    std::vector<uint64_t> rets(returns.begin(), returns.end());
    std::vector<Frame> callers = symbolizer.symbolize(pid, rets, false);
    for (size_t i = 0; i < rets.size(); ++i)
      frames.emplace(UserAddress{pid, rets[i], false}, std::move(callers[i]));
  }
  return frames;
}

// Why a thread waited, as its off-CPU stacks' leaf frame names it.
const char* offcpu_reason_text(uint8_t reason) {
  switch (reason) {
    case OFFCPU_RUN_QUEUE:
      return "run queue";
    case OFFCPU_LOCK:
      return "lock";
    case OFFCPU_SLEEP:
      return "sleep";
    case OFFCPU_IO:
      return "I/O";
    case OFFCPU_DISK:
      return "uninterruptible (disk, page fault)";
    case OFFCPU_CHILD:
      return "child wait";
    case OFFCPU_GO_PARK:
      return "goroutine";
    default:
      return "other";
  }
}

FrameKind kind_of(const Frame& f) {
  switch (f.origin) {
    case SymbolOrigin::PerfMap:
      return FrameKind::Jit;
    case SymbolOrigin::Python:
      return FrameKind::Interpreted;
    case SymbolOrigin::V8:
      // Interpreted (Ignition) or not (JIT code, V8's builtins), as the walker saw.
      return V8_FRAME_KIND(f.address) == V8_KIND_INTERPRETED ? FrameKind::Interpreted
                                                             : FrameKind::Jit;
    case SymbolOrigin::Java:
      return f.java_kind == HotspotCodeKind::Interpreted ? FrameKind::Interpreted
             : f.java_kind == HotspotCodeKind::C1        ? FrameKind::JitC1
                                                         : FrameKind::Jit;
    default:
      return FrameKind::User;
  }
}

class ProfileInterner {
 public:
  explicit ProfileInterner(Profile& profile) : p_(profile) {}

  uint32_t user_location(pid_t pid, bool is_ip, const Frame& f) {
    auto [it, fresh] = user_locations_.try_emplace(UserAddress{pid, f.address, is_ip}, 0);
    if (fresh) {
      it->second = add_location(f, user_mapping(pid, f), kind_of(f), unnamed_frame_text(f));
    }
    return it->second;
  }

  uint32_t kernel_location(uint64_t address, const KernelSymbols* kernel) {
    auto [it, fresh] = kernel_locations_.try_emplace(address, 0);
    if (fresh) {
      Frame f;
      f.address = address;
      f.miss = FrameMiss::NoSymbols;
      if (kernel) f = kernel->frame(address);
      std::string module =
          f.object.empty() || f.object == "kernel" ? "[kernel.kallsyms]" : "[" + f.object + "]";
      uint32_t mapping = mapping_for({-1, module, "", 0}, module, "", address);
      it->second = add_location(f, mapping, FrameKind::Kernel,
                                unnamed_kernel_frame_text(f.miss, kernel != nullptr));
    }
    return it->second;
  }

  // A frame that is no code but says something of the stack: why a thread was off its CPU
  // ("[off-CPU: lock]"), who woke it. No mapping; one location per text.
  uint32_t marker_location(const std::string& name) {
    auto [it, fresh] = marker_locations_.try_emplace(name, 0);
    if (fresh) {
      ProfileLocation loc;
      loc.lines.push_back({function(name, name, ""), 0});
      p_.locations.push_back(std::move(loc));
      it->second = static_cast<uint32_t>(p_.locations.size() - 1);
    }
    return it->second;
  }

  // Mapping offsets follow from the ranges, known only once every address is in.
  void finish() {
    for (size_t i = 0; i < p_.mappings.size(); ++i)
      if (biases_[i]) p_.mappings[i].file_offset = p_.mappings[i].start - *biases_[i];
  }

 private:
  // (pid, file, build-id, load bias): one mapped object of one process; pid -1 for the kernel.
  using MappingKey = std::tuple<pid_t, std::string, std::string, uint64_t>;

  // pprof mappings are address ranges of a process. The range here covers the addresses the
  // profile holds in one object, not the whole mapping: /proc/PID/maps may be gone by now, and
  // an address A maps to file offset A - start + file_offset either way. A file's mappings share
  // one load bias (address - file offset); memory no file backs ([vdso], JIT code) is one
  // mapping per name and process, at offset 0.
  uint32_t user_mapping(pid_t pid, const Frame& f) {
    if (f.object.empty()) return 0;  // unmapped, or the process was gone
    const bool file = f.object.front() == '/';
    const uint64_t bias = file ? f.address - f.file_offset : 0;
    return mapping_for({pid, f.object, f.build_id, bias}, f.object, f.build_id, f.address,
                       file ? std::optional(bias) : std::nullopt);
  }

  uint32_t mapping_for(const MappingKey& key, const std::string& file, const std::string& build_id,
                       uint64_t address, std::optional<uint64_t> bias = std::nullopt) {
    auto [it, fresh] = mappings_.try_emplace(key, 0);
    if (fresh) {
      ProfileMapping m;
      m.start = address;
      m.limit = address + 1;
      m.file = file;
      m.build_id = build_id;
      p_.mappings.push_back(std::move(m));
      biases_.push_back(bias);
      it->second = static_cast<uint32_t>(p_.mappings.size());
    }
    ProfileMapping& m = p_.mappings[it->second - 1];
    m.start = std::min(m.start, address);
    m.limit = std::max(m.limit, address == UINT64_MAX ? address : address + 1);
    return it->second;
  }

  uint32_t function(const std::string& name, const std::string& system_name,
                    const std::string& file) {
    auto [it, fresh] = functions_.try_emplace({name, system_name, file}, 0);
    if (fresh) {
      p_.functions.push_back({name, system_name, file});
      it->second = static_cast<uint32_t>(p_.functions.size() - 1);
    }
    return it->second;
  }

  uint32_t add_location(const Frame& f, uint32_t mapping, FrameKind kind,
                        const std::string& unnamed) {
    ProfileLocation loc;
    loc.address = f.address;
    loc.mapping = mapping;
    loc.kind = kind;
    if (f.miss == FrameMiss::None && !f.function.empty()) {
      for (const InlinedCall& call : f.inlined)
        loc.lines.push_back({function(call.function, call.function, call.file), call.line});
      loc.lines.push_back(
          {function(f.function, f.mangled.empty() ? f.function : f.mangled, f.file), f.line});
      if (mapping) {
        ProfileMapping& m = p_.mappings[mapping - 1];
        m.has_functions = true;
        for (const ProfileLine& l : loc.lines) m.has_lines |= l.line > 0;
      }
    } else {
      loc.lines.push_back({function(unnamed, unnamed, ""), 0});
    }
    p_.locations.push_back(std::move(loc));
    return static_cast<uint32_t>(p_.locations.size() - 1);
  }

  Profile& p_;
  std::vector<std::optional<uint64_t>> biases_;  // per mapping: load bias of file mappings
  std::map<MappingKey, uint32_t> mappings_;      // -> index + 1
  std::map<std::tuple<std::string, std::string, std::string>, uint32_t> functions_;
  std::unordered_map<UserAddress, uint32_t, UserAddressHash> user_locations_;
  std::unordered_map<uint64_t, uint32_t> kernel_locations_;
  std::unordered_map<std::string, uint32_t> marker_locations_;
};

// A stack the BPF walker took is complete when its walk reached the frame CFI marks as the
// thread's entry; a frame-pointer walk (the walker's, without CFI, or the kernel's) when it
// passed a function that is one.
bool walk_complete(int user_end, bool named_entry) {
  if (user_end == UNWIND_END_ENTRY) return true;
  if (user_end < 0 || user_end == UNWIND_END_FP_ZERO) return named_entry;
  return false;
}

bool has_frames(StackStatus status) {
  return status == StackStatus::Ok || status == StackStatus::Truncated;
}

}  // namespace

Profile build_profile(std::span<const StackSample> samples, Symbolizer& user,
                      const KernelSymbols* kernel) {
  Profile profile;
  auto user_frames = symbolize_user(samples, user);
  ProfileInterner interner(profile);
  for (const StackSample& s : samples) {
    ProfileSample out;
    out.count = s.count;
    out.blocks = s.blocks;
    out.pid = s.pid;
    out.tid = s.tid;
    out.comm = s.comm;
    out.user_stack_missing =
        s.user_status == StackStatus::Failed || s.user_status == StackStatus::Collided;
    out.kernel_stack_missing =
        s.kernel_status == StackStatus::Failed || s.kernel_status == StackStatus::Collided;
    // --wakers, as bcc's offwaketime stacks them: above the wait, who ended it, then its stack
    // upside down (its innermost frame next to the wait, its outermost on top).
    if (s.waker_tid != 0) {
      for (size_t i = s.waker_user.size(); i-- > 0;) {
        const Frame& f = user_frames.at(UserAddress{s.waker_pid, s.waker_user[i], i == 0});
        out.locations.push_back(interner.user_location(s.waker_pid, i == 0, f));
      }
      for (auto it = s.waker_kernel.rbegin(); it != s.waker_kernel.rend(); ++it)
        out.locations.push_back(interner.kernel_location(*it, kernel));
      out.locations.push_back(interner.marker_location(
          s.waker_tid < 0
              ? std::string("[woken by an interrupt]")
              : fmt::format("[woken by {}-{}/{}]", s.waker_comm.empty() ? "?" : s.waker_comm,
                            s.waker_pid, s.waker_tid)));
    }
    // A goroutine's wait says why as Go does: "[off-CPU: goroutine chan receive]".
    if (s.reason != OFFCPU_ON_CPU)
      out.locations.push_back(interner.marker_location(
          s.wait.empty() ? fmt::format("[off-CPU: {}]", offcpu_reason_text(s.reason))
                         : fmt::format("[off-CPU: {} {}]", offcpu_reason_text(s.reason), s.wait)));
    if (has_frames(s.kernel_status))
      for (uint64_t a : s.kernel) out.locations.push_back(interner.kernel_location(a, kernel));
    if (has_frames(s.user_status)) {
      bool named_entry = false;
      for (size_t i = 0; i < s.user.size(); ++i) {
        const Frame& f = user_frames.at(UserAddress{s.pid, s.user[i], i == 0});
        out.locations.push_back(interner.user_location(s.pid, i == 0, f));
        // Any entry point, not only the outermost named frame: a frame-pointer walk that leaves
        // main goes on through glibc's __libc_start_call_main, built without frame pointers, and
        // reads one more "return address" from whatever its rbp held. Every frame up to an entry
        // point was reached by an unbroken walk, so the stack is complete there.
        named_entry = named_entry || (f.miss == FrameMiss::None && is_thread_entry(f.function));
      }
      out.complete = walk_complete(s.user_end, named_entry);
    }
    profile.samples.push_back(std::move(out));
  }
  interner.finish();
  return profile;
}

}  // namespace uscope
