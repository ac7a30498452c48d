#include <fstream>

#include "discover/hotspot_read.h"
#include "discover/hotspot_runtime.h"

namespace uscope {
namespace {

constexpr uint32_t kMaxThreads = 1 << 16;

std::string task_comm(pid_t pid, pid_t tid) {
  std::ifstream in(fmt::format("/proc/{}/task/{}/comm", pid, tid));
  std::string s;
  std::getline(in, s);
  return s;
}

// UTF-8 of a java.lang.String's bytes: Latin-1 (coder 0) or UTF-16LE (coder 1).
std::string java_string_utf8(std::span<const uint8_t> bytes, uint8_t coder) {
  std::string s;
  auto put = [&](uint32_t c) {
    if (c < 0x80) {
      s.push_back(static_cast<char>(c));
    } else if (c < 0x800) {
      s.push_back(static_cast<char>(0xc0 | c >> 6));
      s.push_back(static_cast<char>(0x80 | (c & 0x3f)));
    } else {
      s.push_back(static_cast<char>(0xe0 | c >> 12));
      s.push_back(static_cast<char>(0x80 | (c >> 6 & 0x3f)));
      s.push_back(static_cast<char>(0x80 | (c & 0x3f)));
    }
  };
  if (coder == 0) {
    for (uint8_t b : bytes) put(b);
    return s;
  }
  for (size_t i = 0; i + 1 < bytes.size(); i += 2) {
    uint32_t c = bytes[i] | bytes[i + 1] << 8;
    put(c >= 0xd800 && c < 0xe000 ? '?' : c);  // a surrogate half: not worth pairing for a name
  }
  return s;
}

// The name of the java.lang.Thread a JavaThread runs (JavaThread::_threadObj -> the Thread's
// name -> its String's value bytes), or nullopt when any step cannot be read: the caller names
// the thread by its task instead. Object headers as HotSpot lays them out on x86_64: an array's
// length after the mark word and a compressed class pointer (12), its bytes from 16; with compact
// headers (JDK 24+), after the mark word alone (8) and from 12.
std::optional<std::string> java_thread_name(const HotspotRuntime& rt, const TargetMemory& mem,
                                            uint64_t java_thread) {
  const auto& n = rt.java_names;
  if (!n.thread_name_offset || !n.string_value_offset || !n.string_coder_offset ||
      !n.compressed_oops || !n.compressed_klass)
    return std::nullopt;
  auto thread_obj = rt.vm.offset("JavaThread", "_threadObj");
  auto handle_obj = rt.vm.offset("OopHandle", "_obj");
  // CompressedOops::_narrow_oop._base in JDK 17, CompressedOops::_base from JDK 21.
  auto base_addr = rt.vm.address("CompressedOops", "_narrow_oop._base");
  if (!base_addr) base_addr = rt.vm.address("CompressedOops", "_base");
  auto shift_addr = rt.vm.address("CompressedOops", "_narrow_oop._shift");
  if (!shift_addr) shift_addr = rt.vm.address("CompressedOops", "_shift");
  if (!thread_obj || !handle_obj || !base_addr || !shift_addr) return std::nullopt;
  auto name_off = hotspot_read::read_value<int32_t>(mem, n.thread_name_offset);
  auto value_off = hotspot_read::read_value<int32_t>(mem, n.string_value_offset);
  auto coder_off = hotspot_read::read_value<int32_t>(mem, n.string_coder_offset);
  auto coops = hotspot_read::read_value<uint8_t>(mem, n.compressed_oops);
  auto cklass = hotspot_read::read_value<uint8_t>(mem, n.compressed_klass);
  auto compact =
      n.compact_headers ? hotspot_read::read_value<uint8_t>(mem, n.compact_headers) : uint8_t{0};
  auto base = hotspot_read::read_value<uint64_t>(mem, *base_addr);
  auto shift = hotspot_read::read_value<int32_t>(mem, *shift_addr);
  if (!name_off || !value_off || !coder_off || !coops || !cklass || !compact || !base || !shift)
    return std::nullopt;
  for (int32_t off : {*name_off, *value_off, *coder_off})
    if (off < 8 || off > 4096) return std::nullopt;  // 0 before the JVM computed it
  if (*shift < 0 || *shift > 31) return std::nullopt;
  int length_at = 0, bytes_at = 0;
  if (*compact) {
    length_at = 8, bytes_at = 12;
  } else if (*cklass) {
    length_at = 12, bytes_at = 16;
  } else {
    return std::nullopt;  // not the default layout: not worth a guess for a name
  }
  // A reference field: a narrow oop (base + n << shift) with compressed oops, else a pointer.
  auto ref = [&](uint64_t at) -> std::optional<uint64_t> {
    if (!*coops) return hotspot_read::read_value<uint64_t>(mem, at);
    auto narrow = hotspot_read::read_value<uint32_t>(mem, at);
    if (!narrow) return std::nullopt;
    return *narrow ? *base + (uint64_t{*narrow} << *shift) : 0;
  };
  auto handle = hotspot_read::read_value<uint64_t>(mem, java_thread + *thread_obj + *handle_obj);
  if (!handle || !hotspot_read::plausible_pointer(*handle)) return std::nullopt;
  auto thread = hotspot_read::read_value<uint64_t>(mem, *handle);
  if (!thread || !hotspot_read::plausible_pointer(*thread)) return std::nullopt;
  auto string = ref(*thread + *name_off);
  if (!string || !hotspot_read::plausible_pointer(*string)) return std::nullopt;
  auto value = ref(*string + *value_off);
  auto coder = hotspot_read::read_value<uint8_t>(mem, *string + *coder_off);
  if (!value || !hotspot_read::plausible_pointer(*value) || !coder || *coder > 1)
    return std::nullopt;
  auto length = hotspot_read::read_value<int32_t>(mem, *value + length_at);
  if (!length || *length < 0 || *length > 4096) return std::nullopt;
  std::vector<uint8_t> bytes(*length);
  if (!bytes.empty() && !mem(*value + bytes_at, bytes)) return std::nullopt;
  return java_string_utf8(bytes, *coder);
}

}  // namespace

const char* hotspot_thread_kind_name(HotspotThreadKind kind) {
  switch (kind) {
    case HotspotThreadKind::Java:
      return "java";
    case HotspotThreadKind::Compiler:
      return "compiler";
    case HotspotThreadKind::Other:
      return "other";
    case HotspotThreadKind::Unknown:
      break;
  }
  return "unknown";
}

Result<std::vector<HotspotThread>> hotspot_threads(const HotspotRuntime& rt,
                                                   const TargetMemory& mem) {
  const auto& vm = rt.vm;
  auto list_addr = vm.need_address("ThreadsSMRSupport", "_java_thread_list");
  auto length = vm.need_offset("ThreadsList", "_length");
  auto array = vm.need_offset("ThreadsList", "_threads");
  auto osthread = vm.need_offset("JavaThread", "_osthread");
  auto thread_id = vm.need_offset("OSThread", "_thread_id");
  for (const auto* r : {&list_addr, &length, &array, &osthread, &thread_id})
    if (!*r) return with_context(rt.name(), r->error());
  auto list = hotspot_read::read_word(rt, mem, *list_addr, "ThreadsSMRSupport::_java_thread_list");
  if (!list) return tl::unexpected(list.error());
  if (*list == 0)
    return fail_errno(EAGAIN,
                      "{}: ThreadsSMRSupport::_java_thread_list reads 0: the JVM has no thread "
                      "list yet",
                      rt.name());
  if (!hotspot_read::plausible_pointer(*list))
    return fail("{}: ThreadsSMRSupport::_java_thread_list reads {:#x}, not a pointer", rt.name(),
                *list);
  auto n = hotspot_read::read_value<uint32_t>(mem, *list + *length);
  auto threads = hotspot_read::read_value<uint64_t>(mem, *list + *array);
  if (!n || !threads) return fail("{}: cannot read the ThreadsList at {:#x}", rt.name(), *list);
  if (*n > kMaxThreads)
    return fail("{}: ThreadsList::_length reads {}, more threads than uscope reads ({})", rt.name(),
                *n, kMaxThreads);
  std::vector<uint64_t> pointers(*n);
  if (*n > 0 && !mem(*threads, {reinterpret_cast<uint8_t*>(pointers.data()), 8 * pointers.size()}))
    return fail("{}: cannot read ThreadsList::_threads at {:#x}", rt.name(), *threads);
  std::vector<HotspotThread> out;
  for (uint64_t jt : pointers) {
    HotspotThread t;
    t.java_thread = jt;
    auto os = hotspot_read::read_word(rt, mem, jt + *osthread, "JavaThread::_osthread");
    if (!os) return tl::unexpected(os.error());
    // A thread that is starting or exiting has no OSThread: it has no task to name.
    if (*os == 0) continue;
    auto tid = hotspot_read::read_int(rt, mem, *os + *thread_id, "OSThread::_thread_id");
    if (!tid) return tl::unexpected(tid.error());
    t.tid = *tid;
    if (auto name = java_thread_name(rt, mem, jt)) {
      t.name = std::move(*name);
      t.java_name = true;
    } else {
      t.name = task_comm(rt.pid, t.tid);
    }
    if (rt.vtable_java_thread != 0) {
      auto vptr = hotspot_read::read_word(rt, mem, jt, "a JavaThread's vtable");
      if (!vptr) return tl::unexpected(vptr.error());
      t.kind = *vptr == rt.vtable_java_thread       ? HotspotThreadKind::Java
               : *vptr == rt.vtable_compiler_thread ? HotspotThreadKind::Compiler
                                                    : HotspotThreadKind::Other;
    }
    out.push_back(std::move(t));
  }
  return out;
}

}  // namespace uscope
