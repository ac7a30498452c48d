#include "discover/hotspot_runtime.h"

#include <dirent.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <set>

#include "discover/hotspot_read.h"
#include "discover/object_store.h"
#include "util/names.h"

namespace uscope {
namespace {

// Itanium C++ ABI: an object's vtable pointer is the vtable symbol plus two words (offset to top,
// typeinfo).
constexpr uint64_t kVtableAddressPoint = 16;

// x86_64 interpreter frame slots in words from rbp (src/hotspot/cpu/x86/frame_x86.hpp, JDK 9 to
// 25): used when VMStructs does not list them (JDK 17 lists only the sender sp).
constexpr int32_t kInterpSenderSp = -1;
constexpr int32_t kInterpMethod = -3;
constexpr int32_t kInterpMirror = -4;  // the holder's java.lang.Class (JDK 9+)
constexpr int32_t kInterpBcp = -8;

// Every field the walker reads, or the first one this JDK does not list.
Result<hs_offsets> walker_offsets(const HotspotVmStructs& vm) {
  hs_offsets off{};
  // An offset or size of a JVM structure the walker reads fits in 16 bits; a wider one is a
  // table that does not make sense (hs_offsets keeps 32).
  auto u32 = [](Result<uint64_t> r, __u32& out) -> Result<void> {
    if (!r) return tl::unexpected(r.error());
    if (*r > 0xffff) return fail("libjvm.so lists an offset or size of {}, past any structure", *r);
    out = static_cast<__u32>(*r);
    return {};
  };
  for (auto r : {u32(vm.need_type_size("HeapBlock"), off.heapblock_size),
                 u32(vm.need_offset("CodeBlob", "_name"), off.blob_name),
                 u32(vm.need_offset("CodeBlob", "_frame_size"), off.blob_frame_size),
                 u32(vm.need_offset("CodeBlob", "_frame_complete_offset"), off.blob_frame_complete),
                 u32(vm.need_offset("Method", "_constMethod"), off.method_const),
                 u32(vm.need_type_size("ConstMethod"), off.constmethod_size)})
    if (!r) return tl::unexpected(r.error());
  // JDK 23 keeps the code's offset from the blob (an int) where older ones keep its address.
  if (auto begin = vm.offset("CodeBlob", "_code_begin")) {
    if (auto r = u32(*begin, off.blob_code_begin); !r) return tl::unexpected(r.error());
  } else if (auto offset = vm.offset("CodeBlob", "_code_offset")) {
    if (auto r = u32(*offset, off.blob_code_begin); !r) return tl::unexpected(r.error());
    off.code_begin_is_offset = 1;
  } else {
    return fail("libjvm.so lists neither CodeBlob::_code_begin nor CodeBlob::_code_offset");
  }
  // nmethod::_compile_id (CompiledMethod's in some JDKs): an nmethod's generation in a frame.
  auto compile_id = vm.offset("nmethod", "_compile_id");
  if (!compile_id) compile_id = vm.offset("CompiledMethod", "_compile_id");
  if (!compile_id) return fail("libjvm.so lists no nmethod::_compile_id");
  if (auto r = u32(*compile_id, off.nm_compile_id); !r) return tl::unexpected(r.error());
  auto slot = [&](const char* name, int32_t fallback) {
    auto v = vm.int_constant(name);
    return v ? static_cast<__s32>(*v) : fallback;
  };
  off.interp_sender_sp = slot("frame::interpreter_frame_sender_sp_offset", kInterpSenderSp);
  off.interp_method = slot("frame::interpreter_frame_method_offset", kInterpMethod);
  off.interp_mirror = slot("frame::interpreter_frame_mirror_offset", kInterpMirror);
  off.interp_bcp = slot("frame::interpreter_frame_bcp_offset", kInterpBcp);
  return off;
}

// CodeCache::_heaps: a GrowableArray<CodeHeap*>* (GrowableArrayBase::_len and the data pointer
// VMStructs lists as GrowableArray<int>::_data: every GrowableArray keeps them alike).
Result<std::vector<uint64_t>> code_heaps(const HotspotRuntime& rt, const TargetMemory& mem) {
  const auto& vm = rt.vm;
  auto heaps_addr = vm.need_address("CodeCache", "_heaps");
  if (!heaps_addr) return with_context(rt.name(), heaps_addr.error());
  auto len_off = vm.offset("GrowableArrayBase", "_len");
  if (!len_off) len_off = vm.offset("GenericGrowableArray", "_len");  // JDK 15 and before
  if (!len_off) return fail("{}: libjvm.so lists no GrowableArrayBase::_len", rt.name());
  auto data_off = vm.need_offset("GrowableArray<int>", "_data");
  if (!data_off) return with_context(rt.name(), data_off.error());
  auto array = hotspot_read::read_word(rt, mem, *heaps_addr, "CodeCache::_heaps");
  if (!array) return tl::unexpected(array.error());
  if (*array == 0)
    return fail_errno(EAGAIN,
                      "{}: CodeCache::_heaps reads 0: the JVM has not made its code cache yet",
                      rt.name());
  if (!hotspot_read::plausible_pointer(*array))
    return fail("{}: CodeCache::_heaps reads {:#x}, not a pointer", rt.name(), *array);
  auto len = hotspot_read::read_int(rt, mem, *array + *len_off, "CodeCache::_heaps->_len");
  if (!len) return tl::unexpected(len.error());
  if (*len < 1 || *len > HS_MAX_HEAPS)
    return fail("{}: CodeCache::_heaps->_len reads {}: uscope reads 1 to {} code heaps", rt.name(),
                *len, HS_MAX_HEAPS);
  auto data = hotspot_read::read_word(rt, mem, *array + *data_off, "CodeCache::_heaps->_data");
  if (!data) return tl::unexpected(data.error());
  std::vector<uint64_t> heaps;
  for (int i = 0; i < *len; ++i) {
    auto h = hotspot_read::read_word(rt, mem, *data + 8 * i, "CodeCache::_heaps->_data[i]");
    if (!h) return tl::unexpected(h.error());
    heaps.push_back(*h);
  }
  return heaps;
}

Result<hs_heap> read_heap(const HotspotRuntime& rt, const TargetMemory& mem, uint64_t heap) {
  const auto& vm = rt.vm;
  uint64_t memory = 0, segmap = 0, shift = 0, low_b = 0, high_b = 0, low = 0;
  for (auto [out, r] : {std::pair{&memory, vm.need_offset("CodeHeap", "_memory")},
                        std::pair{&segmap, vm.need_offset("CodeHeap", "_segmap")},
                        std::pair{&shift, vm.need_offset("CodeHeap", "_log2_segment_size")},
                        std::pair{&low_b, vm.need_offset("VirtualSpace", "_low_boundary")},
                        std::pair{&high_b, vm.need_offset("VirtualSpace", "_high_boundary")},
                        std::pair{&low, vm.need_offset("VirtualSpace", "_low")}}) {
    if (!r) return with_context(rt.name(), r.error());
    *out = *r;
  }
  hs_heap h{};
  auto l =
      hotspot_read::read_word(rt, mem, heap + memory + low_b, "CodeHeap::_memory._low_boundary");
  auto hi =
      hotspot_read::read_word(rt, mem, heap + memory + high_b, "CodeHeap::_memory._high_boundary");
  auto map = hotspot_read::read_word(rt, mem, heap + segmap + low, "CodeHeap::_segmap._low");
  auto s = hotspot_read::read_int(rt, mem, heap + shift, "CodeHeap::_log2_segment_size");
  for (const auto* e : {&l, &hi, &map})
    if (!*e) return tl::unexpected(e->error());
  if (!s) return tl::unexpected(s.error());
  h.low = *l;
  h.high = *hi;
  h.segmap = *map;
  h.shift = static_cast<__u32>(*s);
  return h;
}

// The JDK's version: the VM's release string when the process holds it, else the JDK directory
// libjvm.so is in (/usr/lib/jvm/java-17-openjdk-amd64/lib/server/libjvm.so).
void read_version(HotspotRuntime& rt, const TargetMemory& mem) {
  if (auto addr = rt.vm.address("Abstract_VM_Version", "_s_vm_release")) {
    auto p = hotspot_read::read_value<uint64_t>(mem, *addr);
    if (p && hotspot_read::plausible_pointer(*p))
      if (auto s = hotspot_read::read_cstring(mem, *p, 128); s && !s->empty()) {
        rt.version = *s;
        rt.version_source = "Abstract_VM_Version::_s_vm_release";
        return;
      }
  }
  std::string dir = rt.object_path;
  for (const char* tail : {"/lib/server/libjvm.so", "/jre/lib/amd64/server/libjvm.so"})
    if (dir.size() > strlen(tail) && dir.ends_with(tail)) {
      rt.version = file_name(dir.substr(0, dir.size() - strlen(tail)));
      rt.version_source = "libjvm.so path";
      return;
    }
  rt.version = "unknown";
  rt.version_source = "none";
}

// What find_hotspot_runtime takes from libjvm.so's symbols, in one pass over them (.symtab holds
// some 60,000), at link-time addresses.
struct LibjvmSymbols {
  VmStructsSymbols vmstructs;  // the exported tables and layout globals
  uint64_t vtable_java_thread = 0, vtable_compiler_thread = 0;
  HotspotRuntime::JavaNameSymbols java_names;
};

std::optional<LibjvmSymbols> libjvm_symbols(const ElfFile& libjvm) {
  using Names = HotspotRuntime::JavaNameSymbols;
  static const std::map<std::string_view, uint64_t Names::*> java_name_symbols{
      {"_ZN16java_lang_Thread12_name_offsetE", &Names::thread_name_offset},
      {"_ZN16java_lang_String13_value_offsetE", &Names::string_value_offset},
      {"_ZN16java_lang_String13_coder_offsetE", &Names::string_coder_offset},
      {"UseCompressedOops", &Names::compressed_oops},
      {"UseCompressedClassPointers", &Names::compressed_klass},
      {"UseCompactObjectHeaders", &Names::compact_headers}};
  auto syms = libjvm.symbols();
  if (!syms) return std::nullopt;
  LibjvmSymbols out;
  VmStructsSymbols& s = out.vmstructs;
  for (const auto& sym : *syms) {
    if (!sym.defined || sym.addr == 0) continue;
    if (sym.name.starts_with("gHotSpotVM")) {
      if (sym.name == "gHotSpotVMStructs")
        s.structs = sym.addr;
      else if (sym.name == "gHotSpotVMTypes")
        s.types = sym.addr;
      else if (sym.name == "gHotSpotVMIntConstants")
        s.int_constants = sym.addr;
      else if (sym.name == "gHotSpotVMLongConstants")
        s.long_constants = sym.addr;
      else
        s.layout.emplace(sym.name, sym.addr);
    } else if (sym.name == "_ZTV10JavaThread") {
      out.vtable_java_thread = sym.addr + kVtableAddressPoint;
    } else if (sym.name == "_ZTV14CompilerThread") {
      out.vtable_compiler_thread = sym.addr + kVtableAddressPoint;
    } else if (auto it = java_name_symbols.find(sym.name); it != java_name_symbols.end()) {
      out.java_names.*(it->second) = sym.addr;
    }
  }
  if (s.structs == 0) return std::nullopt;
  return out;
}

}  // namespace

std::string HotspotRuntime::name() const {
  return fmt::format("java (pid {})", pid);
}

Result<HotspotRuntime> read_hotspot_runtime(pid_t pid, const std::string& object_path,
                                            uint64_t load_bias, const VmStructsSymbols& symbols,
                                            const TargetMemory& mem) {
  HotspotRuntime rt;
  rt.pid = pid;
  rt.object_path = object_path;
  rt.load_bias = load_bias;
  auto vm = read_vmstructs(symbols, mem);
  if (!vm) return with_context(rt.name(), vm.error());
  rt.vm = std::move(*vm);
  read_version(rt, mem);

  auto off = walker_offsets(rt.vm);
  if (!off) return with_context(rt.name(), off.error());
  rt.proc.off = *off;
  for (const auto& f : rt.vm.fields())
    if (f.type == "CodeBlob" && f.field == "_frame_complete_offset" &&
        (f.type_string == "int16_t" || f.type_string == "short" || f.type_string == "u2"))
      rt.blob_frame_complete_bytes = 2;
  rt.proc.off.frame_complete_bytes = rt.blob_frame_complete_bytes;

  auto heaps = code_heaps(rt, mem);
  if (!heaps) return tl::unexpected(heaps.error());
  rt.proc.code_start = ~0ull;
  for (size_t i = 0; i < heaps->size(); ++i) {
    auto h = read_heap(rt, mem, (*heaps)[i]);
    if (!h) return tl::unexpected(h.error());
    rt.proc.heaps[i] = *h;
    rt.proc.code_start = std::min<uint64_t>(rt.proc.code_start, h->low);
    rt.proc.code_end = std::max<uint64_t>(rt.proc.code_end, h->high);
  }
  if (rt.proc.code_end - rt.proc.code_start > HS_CODE_CACHE_MAX)
    return fail(
        "{}: the code heaps span [{:#x}, {:#x}), more than the 2 GiB a Java frame records a blob "
        "in (HotSpot's own limit of ReservedCodeCacheSize)",
        rt.name(), rt.proc.code_start, rt.proc.code_end);

  // The template interpreter: AbstractInterpreter::_code, a StubQueue of its codelets.
  const auto& v = rt.vm;
  auto code = v.need_address("AbstractInterpreter", "_code");
  auto buffer = v.need_offset("StubQueue", "_stub_buffer");
  auto limit = v.need_offset("StubQueue", "_buffer_limit");
  for (const auto* r : {&code, &buffer, &limit})
    if (!*r) return with_context(rt.name(), r->error());
  auto queue = hotspot_read::read_word(rt, mem, *code, "AbstractInterpreter::_code");
  if (!queue) return tl::unexpected(queue.error());
  if (*queue == 0)
    return fail_errno(EAGAIN,
                      "{}: AbstractInterpreter::_code reads 0: the JVM has not generated its "
                      "interpreter yet",
                      rt.name());
  if (!hotspot_read::plausible_pointer(*queue))
    return fail("{}: AbstractInterpreter::_code reads {:#x}, not a pointer", rt.name(), *queue);
  auto start = hotspot_read::read_word(rt, mem, *queue + *buffer, "StubQueue::_stub_buffer");
  auto size = hotspot_read::read_int(rt, mem, *queue + *limit, "StubQueue::_buffer_limit");
  if (!start) return tl::unexpected(start.error());
  if (!size) return tl::unexpected(size.error());
  rt.proc.interp_start = *start;
  rt.proc.interp_end = *start + static_cast<uint32_t>(*size);
  return rt;
}

Result<std::optional<HotspotRuntime>> find_hotspot_runtime(pid_t pid) {
  auto p = Process::open(pid);
  if (!p) return tl::unexpected(p.error());
  return find_hotspot_runtime(*p);
}

Result<std::optional<HotspotRuntime>> find_hotspot_runtime(const Process& process) {
  for (const auto& o : process.objects()) {
    if (file_name(o.path) != "libjvm.so") continue;
    auto stored = ObjectStore::shared()->open(o.open_path, o.path);
    if (!stored)
      return fail("java (pid {}): cannot open {}: {}", process.pid(), o.path,
                  stored.error().message);
    const ElfFile& elf = (*stored)->elf();
    auto found = libjvm_symbols(elf);
    if (!found) continue;  // a libjvm.so that is no HotSpot (no Serviceability Agent tables)
    auto bias = load_bias(o, elf);
    if (!bias)
      return fail("java (pid {}): {} is mapped without its code, so its addresses are unknown",
                  process.pid(), o.path);
    auto rebase = [&](uint64_t& addr) {
      if (addr) addr += *bias;
    };
    VmStructsSymbols& symbols = found->vmstructs;
    for (uint64_t* a :
         {&symbols.structs, &symbols.types, &symbols.int_constants, &symbols.long_constants,
          &found->vtable_java_thread, &found->vtable_compiler_thread})
      rebase(*a);
    for (auto& [name, addr] : symbols.layout) rebase(addr);
    auto& n = found->java_names;
    for (uint64_t* a : {&n.thread_name_offset, &n.string_value_offset, &n.string_coder_offset,
                        &n.compressed_oops, &n.compressed_klass, &n.compact_headers})
      rebase(*a);
    auto rt = read_hotspot_runtime(process.pid(), o.path, *bias, symbols,
                                   process_target_memory(process.pid()));
    if (!rt) return tl::unexpected(rt.error());
    rt->vtable_java_thread = found->vtable_java_thread;
    rt->vtable_compiler_thread = found->vtable_compiler_thread;
    rt->java_names = found->java_names;
    return std::optional<HotspotRuntime>(std::move(*rt));
  }
  return std::optional<HotspotRuntime>();
}

Result<std::optional<uint64_t>> hotspot_blob_at(const HotspotRuntime& rt, const TargetMemory& mem,
                                                uint64_t pc) {
  for (const auto& h : rt.proc.heaps) {
    if (h.high == 0 || pc < h.low || pc >= h.high) continue;
    uint64_t idx = (pc - h.low) >> h.shift;
    // Each byte says how many segments back the block's first one is (or more hops); 0: this is
    // the first; HS_SEGMAP_FREE: unused.
    for (int hop = 0; hop < 4096; ++hop) {
      auto b = hotspot_read::read_value<uint8_t>(mem, h.segmap + idx);
      if (!b) return fail("{}: cannot read the segment map at {:#x}", rt.name(), h.segmap + idx);
      if (*b == HS_SEGMAP_FREE) return std::optional<uint64_t>();
      if (*b == 0) {
        uint64_t block = h.low + (idx << h.shift);
        if (auto used_off = rt.vm.offset("HeapBlock::Header", "_used")) {
          auto header = rt.vm.offset("HeapBlock", "_header").value_or(0);
          auto used = hotspot_read::read_value<uint8_t>(mem, block + header + *used_off);
          if (!used) return fail("{}: cannot read a HeapBlock at {:#x}", rt.name(), block);
          if (!*used) return std::optional<uint64_t>();
        }
        return std::optional<uint64_t>(block + rt.proc.off.heapblock_size);
      }
      if (*b > idx) break;
      idx -= *b;
    }
    return fail("{}: the segment map of the heap at {:#x} leads nowhere from {:#x}", rt.name(),
                h.low, pc);
  }
  return std::optional<uint64_t>();
}

Result<std::string> hotspot_blob_name(const HotspotRuntime& rt, const TargetMemory& mem,
                                      uint64_t blob) {
  auto p = hotspot_read::read_word(rt, mem, blob + rt.proc.off.blob_name, "CodeBlob::_name");
  if (!p) return tl::unexpected(p.error());
  auto s = hotspot_read::read_cstring(mem, *p, 256);
  if (!s) return fail("{}: cannot read the name of the code blob at {:#x}", rt.name(), blob);
  return *s;
}

Result<void> validate_hotspot_runtime(const HotspotRuntime& rt) {
  return validate_hotspot_runtime(rt, process_target_memory(rt.pid));
}

Result<void> validate_hotspot_runtime(const HotspotRuntime& rt, const TargetMemory& mem) {
  const auto& p = rt.proc;
  std::string misfit =
      fmt::format("the JVM's structures ({}) do not read as uscope expects", rt.version);
  int heaps = 0;
  for (const auto& h : p.heaps) {
    if (h.high == 0) continue;
    ++heaps;
    if (h.low >= h.high || !hotspot_read::plausible_pointer(h.low) ||
        h.high > hotspot_read::kUserTop)
      return fail("{}: a code heap reads [{:#x}, {:#x}), not a range: {}", rt.name(), h.low, h.high,
                  misfit);
    if (h.shift < 5 || h.shift > 12)
      return fail(
          "{}: CodeHeap::_log2_segment_size reads {}, not a segment of 32 to 4096 bytes: {}",
          rt.name(), h.shift, misfit);
    // Only the part of the map for the heap's committed part is: its first byte.
    if (!hotspot_read::read_value<uint8_t>(mem, h.segmap))
      return fail("{}: the segment map of the code heap at {:#x} is unreadable at {:#x}", rt.name(),
                  h.low, h.segmap);
  }
  if (heaps == 0) return fail("{}: CodeCache::_heaps holds no heap: {}", rt.name(), misfit);
  const auto& o = p.off;
  if (o.heapblock_size < 8 || o.heapblock_size > 64 || o.heapblock_size % 8 != 0)
    return fail("{}: sizeof(HeapBlock) reads {}: {}", rt.name(), o.heapblock_size, misfit);
  for (auto [name, at, width] :
       {std::tuple{"CodeBlob::_name", o.blob_name, 8u},
        std::tuple{"CodeBlob::_frame_size", o.blob_frame_size, 4u},
        std::tuple{"CodeBlob::_frame_complete_offset", o.blob_frame_complete, 4u},
        std::tuple{"CodeBlob::_code_begin", o.blob_code_begin, 4u}})
    if (uint64_t{at} + width > HS_BLOB_READ)
      return fail("{}: {} is at offset {}, past the {} bytes of a blob the walker reads", rt.name(),
                  name, at, HS_BLOB_READ);
  // The interpreter: in a heap, and its blob found as the walker finds blobs.
  bool inside = false;
  for (const auto& h : p.heaps)
    inside |= h.high != 0 && p.interp_start >= h.low && p.interp_end <= h.high;
  if (p.interp_start >= p.interp_end || !inside)
    return fail("{}: the interpreter reads [{:#x}, {:#x}), not inside a code heap: {}", rt.name(),
                p.interp_start, p.interp_end, misfit);
  auto blob = hotspot_blob_at(rt, mem, p.interp_start);
  if (!blob) return tl::unexpected(blob.error());
  if (!*blob)
    return fail("{}: the segment map finds no blob at the interpreter's {:#x}: {}", rt.name(),
                p.interp_start, misfit);
  auto name = hotspot_blob_name(rt, mem, **blob);
  if (!name) return tl::unexpected(name.error());
  if (!name->starts_with("Interpreter"))
    return fail("{}: the blob at the interpreter's {:#x} is named \"{}\", not Interpreter: {}",
                rt.name(), p.interp_start, *name, misfit);
  // The JavaThreads' tasks are tasks of the process. Compiler threads come and go while the JVM
  // runs (UseDynamicNumberOfCompilerThreads): one that ended between the two reads is no misfit,
  // a list whose ids are mostly not tasks is.
  auto threads = hotspot_threads(rt, mem);
  if (!threads) return tl::unexpected(threads.error());
  if (threads->empty()) return fail("{}: the JVM lists no Java thread: {}", rt.name(), misfit);
  std::set<pid_t> tids = process_task_ids(rt.pid);
  const HotspotThread* stray = nullptr;
  size_t tasks = 0;
  for (const auto& t : *threads) {
    if (tids.contains(t.tid))
      ++tasks;
    else if (!stray)
      stray = &t;
  }
  if (stray && 2 * tasks <= threads->size())
    return fail(
        "{}: OSThread::_thread_id of the JavaThread at {:#x} reads {}, not a thread of "
        "the process ({} of {} JavaThreads are): {}",
        rt.name(), stray->java_thread, stray->tid, tasks, threads->size(), misfit);
  return {};
}

}  // namespace uscope
