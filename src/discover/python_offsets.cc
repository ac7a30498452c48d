#include "discover/python_offsets.h"

#include <array>
#include <cstring>
#include <vector>

namespace uscope {
namespace {

// The frame-walking fields of one row, named as bpf/python.h names them.
struct BpfRow {
  uint32_t frame_model, runtime_interp_head, interp_threads_head, tstate_next,
      tstate_native_thread_id, tstate_frame, cframe_current_frame, frame_code, frame_previous,
      frame_instr, frame_entry, code_adaptive, frame_read_size;
};

py_offsets to_bpf(PythonVersion v, const BpfRow& r) {
  py_offsets o{};
  o.version = v.code();
  o.frame_model = r.frame_model;
  o.runtime_interp_head = r.runtime_interp_head;
  o.interp_threads_head = r.interp_threads_head;
  o.tstate_next = r.tstate_next;
  o.tstate_native_thread_id = r.tstate_native_thread_id;
  o.tstate_frame = r.tstate_frame;
  o.cframe_current_frame = r.cframe_current_frame;
  o.frame_code = r.frame_code;
  o.frame_previous = r.frame_previous;
  o.frame_instr = r.frame_instr;
  o.frame_entry = r.frame_entry;
  o.code_adaptive = r.code_adaptive;
  o.frame_read_size = r.frame_read_size;
  // 3.14 put FRAME_OWNED_BY_INTERPRETER (3) before FRAME_OWNED_BY_CSTACK (4):
  // enum _frameowner in Include/internal/pycore_frame.h (3.12, 3.13) and in 3.14.
  o.owner_cstack = v.major == 3 && v.minor >= 14 ? 4 : PY_OWNED_BY_CSTACK;
  return o;
}

constexpr uint32_t NO = PY_NO_OFFSET;

// Rows other than 3.11's (which tests/unit/python_offsets_test.cc checks against the installed
// headers) were read off the tagged headers and checked field by field against two public
// readers of these structs: bloomberg/pystack's copies of them per version and the offsets
// grafana/pyroscope's ebpf/python table says its build of each release has.
//
// x86-64, release and Py_DEBUG builds alike (neither changes these structs; Py_TRACE_REFS, which
// would, is not implied by Py_DEBUG since 3.8 and no distribution builds with it).
// threading's thread names in 3.8-3.10: sys.modules, dicts as Objects/dict-common.h has them
// (struct _dictkeysobject {dk_refcnt 0, dk_size 8, dk_lookup 16, dk_usable 24, dk_nentries 32,
// dk_indices 40}; not an installed header), and an instance's dict at its type's tp_dictoffset
// (PyTypeObject, Include/cpython/object.h: tp_flags 168, tp_dictoffset 288).
void pre_3_11_names(PythonLayout& l, uint32_t interp_modules) {
  l.interp_modules = interp_modules;
  l.type_dictoffset = 288;
  l.keys_size = 8;
  l.keys_nentries = 32;
  l.keys_indices = 40;
}

PythonLayout row_3_8_or_3_9(PythonVersion v) {
  // v3.8.0 Include/internal/pycore_pystate.h (_PyRuntimeState, PyInterpreterState),
  // Include/cpython/pystate.h (PyThreadState), Include/frameobject.h (PyFrameObject),
  // Include/code.h (PyCodeObject); v3.9.0 the same fields in Include/internal/pycore_runtime.h,
  // pycore_interp.h, cpython/pystate.h, cpython/frameobject.h, cpython/code.h.
  PythonLayout l;
  // _PyRuntimeState: 4 ints, finalizing (16), interpreters {mutex 24, head 32}.
  // PyInterpreterState {next 0, tstate_head 8}. PyThreadState {prev 0, next 8, interp 16,
  // frame 24, ...}; no native_thread_id before 3.11. PyFrameObject {VAR_HEAD, f_back 24,
  // f_code 32, ..., f_lasti 104 (bytes)}.
  l.bpf = to_bpf(v, {PY_FRAMES_PER_EVAL, 32, 8, 8, NO, 24, NO, 32, 24, 104, NO, NO, 108});
  l.interp_next = 0;
  l.tstate_interp = 16;
  l.bpf.tstate_thread_id = 176;
  // gilstate at 1360 (3.8: the gc state sits before it) or 560 (3.9); tstate_current is its
  // second member, after an int.
  l.runtime_tstate_current = v.minor == 8 ? 1368 : 568;
  // PyCodeObject {HEAD, 7 ints from co_argcount (16) to co_firstlineno (40), co_code 48, ...,
  // co_filename 104, co_name 112, co_lnotab 120}.
  l.code_filename = 104;
  l.code_name = 112;
  l.code_firstlineno = 40;
  l.code_linetable = 120;
  // PyInterpreterState.modules: 3.8 (Include/internal/pycore_pystate.h) {next 0, tstate_head 8,
  // id 16, id_refcount 24, requires_idref 32, id_mutex 40, finalizing 48, modules 56}; 3.9 as
  // 3.10 (row_3_10): 856.
  pre_3_11_names(l, v.minor == 8 ? 56 : 856);
  return l;
}

PythonLayout row_3_10(PythonVersion v) {
  // v3.10.0 Include/internal/pycore_runtime.h, pycore_interp.h, Include/cpython/pystate.h
  // (PyThreadState: use_tracing replaced by cframe at 48; frame still at 24),
  // Include/cpython/frameobject.h (f_lasti 96, in code units from 3.10), Include/cpython/code.h
  // (co_linetable where co_lnotab was).
  PythonLayout l;
  l.bpf = to_bpf(v, {PY_FRAMES_PER_EVAL, 32, 8, 8, NO, 24, NO, 32, 24, 96, NO, NO, 100});
  l.interp_next = 0;
  l.tstate_interp = 16;
  l.bpf.tstate_thread_id = 176;
  l.runtime_tstate_current = 568;
  l.code_filename = 104;
  l.code_name = 112;
  l.code_firstlineno = 40;
  l.code_linetable = 120;
  // PyInterpreterState.modules (Include/internal/pycore_interp.h, 3.9 and 3.10): next 0,
  // tstate_head 8, runtime 16, id 24, id_refcount 32, requires_idref 40, id_mutex 48,
  // finalizing 56, ceval 64 (struct _ceval_state: 3 ints (4 in 3.9), then _pending_calls at 16:
  // lock, calls_to_do, async_exc, 32 calls of 16 bytes from 16, first, last: 536 bytes; 552),
  // gc 616 (struct _gc_runtime_state, pycore_gc.h: 240 bytes, as in row_3_12's comment),
  // modules 856. offsetof with pyenv's 3.9.18 and 3.10.13 headers gives 856, and 56 with 3.8.18.
  pre_3_11_names(l, 856);
  return l;
}

PythonLayout row_3_11(PythonVersion v) {
  // v3.11.0 Include/internal/pycore_runtime.h (_PyRuntimeState: _initialized first, so
  // interpreters.head at 40; gilstate.tstate_current 576), Include/internal/pycore_interp.h
  // (PyInterpreterState.threads.head 16), Include/cpython/pystate.h (PyThreadState: cframe 56,
  // thread_id 152, native_thread_id 160; _PyCFrame {use_tracing, current_frame 8}),
  // Include/internal/pycore_frame.h (_PyInterpreterFrame: f_code 32, previous 48,
  // prev_instr 56, is_entry 68, owner 69), Include/cpython/code.h (PyCodeObject: co_firstlineno
  // 72, co_filename 112, co_name 120, co_qualname 128, co_linetable 136, _co_firsttraceable
  // 168, co_code_adaptive 184). Checked by tests/unit/python_offsets_test.cc against offsetof
  // in the installed headers.
  PythonLayout l;
  l.bpf = to_bpf(v, {PY_FRAMES_IS_ENTRY, 40, 16, 8, 160, 56, 8, 32, 48, 56, 68, 184, 72});
  l.interp_next = 0;
  l.tstate_interp = 16;
  l.bpf.tstate_thread_id = 152;
  l.runtime_tstate_current = 576;
  l.frame_owner = 69;
  l.code_filename = 112;
  l.code_name = 120;
  l.code_qualname = 128;
  l.code_firstlineno = 72;
  l.code_linetable = 136;
  l.code_first_traceable = 168;
  // PyInterpreterState.modules 888 (pycore_interp.h), PyHeapTypeObject.ht_cached_keys 872
  // (Include/cpython/object.h); dicts as Include/internal/pycore_dict.h; an instance of a class
  // keeps its attributes before its header (Py_TPFLAGS_MANAGED_DICT: values at -32, dict at -24,
  // Include/internal/pycore_object.h).
  l.interp_modules = 888;
  l.heap_type_cached_keys = 872;
  return l;
}

PythonLayout row_3_12(PythonVersion v) {
  // v3.12.0 Include/internal/pycore_runtime.h (_PyRuntimeState: as 3.11's, interpreters.head at
  // 40 (3.13 adds _finalizing_id before it); gilstate.tstate_current gone: the current thread
  // state is a thread-local), Include/internal/pycore_interp.h (PyInterpreterState.threads after
  // monitoring_version and last_restart_version: head 72), Include/cpython/pystate.h
  // (PyThreadState: cframe 56, curexc triple replaced by current_exception, thread_id 136,
  // native_thread_id 144; _PyCFrame {current_frame 0, previous}),
  // Include/internal/pycore_frame.h (_PyInterpreterFrame: f_code 0, previous 8, prev_instr 56,
  // return_offset 68, owner 70), Include/cpython/code.h (co_firstlineno 68, _co_firsttraceable
  // 176, co_code_adaptive 192), Include/cpython/unicodeobject.h (PyASCIIObject without wstr).
  PythonLayout l;
  l.bpf = to_bpf(v, {PY_FRAMES_OWNER, 40, 72, 8, 144, 56, 0, 0, 8, 56, 70, 192, 72});
  l.interp_next = 0;
  l.tstate_interp = 16;
  l.bpf.tstate_thread_id = 136;
  l.frame_owner = 70;
  l.code_filename = 112;
  l.code_name = 120;
  l.code_qualname = 128;
  l.code_firstlineno = 68;
  l.code_linetable = 136;
  l.code_first_traceable = 176;
  l.unicode_ascii_size = 40;
  l.unicode_compact_size = 56;
  // The GIL is the interpreter's (PEP 684): PyInterpreterState (v3.12.1
  // Include/internal/pycore_interp.h, as pyenv installs it here) after threads (64, 32 bytes):
  // runtime 96, _finalizing 104, gc 112 (struct _gc_runtime_state, Include/internal/pycore_gc.h:
  // trash_delete_later, trash_delete_nesting, enabled, debug, 3 generations of 24 bytes from 24,
  // generation0 96, permanent_generation 104, 3 generation_stats of 24 from 128, collecting 200,
  // garbage 208, callbacks 216, long_lived_total 224, long_lived_pending 232: 240 bytes), sysdict
  // 352, builtins 360, ceval 368 (struct _ceval_state, Include/internal/pycore_ceval_state.h:
  // eval_breaker, gil_drop_request, recursion_limit, then gil at 16): ceval.gil 384. struct
  // _gil_runtime_state (Include/internal/pycore_gil.h): interval 0, last_holder 8, locked 16.
  // offsetof with those headers gives the same; `uscope dump` of pyenv's python3.12 marks the
  // thread that spins as the holder.
  l.interp_ceval_gil = 384;
  l.gil_locked = 16;
  l.gil_last_holder = 8;
  return l;
}

uint64_t u64_at(std::span<const uint8_t> b, size_t word) {
  uint64_t v = 0;
  std::memcpy(&v, b.data() + 8 * word, 8);
  return v;
}

// _Py_DebugOffsets is a run of uint64_t: cookie, version, free_threaded, then sections each
// opening with the size of the struct it describes. Releases add fields to sections (3.14: the
// interpreter's threads_main, the frame's stackpointer and tlbc_index, the code's co_tlbc), so
// the parser finds its sections from the shape of the data rather than from one release's
// layout: the thread state's section ({size, 0, 8, 16}: prev, next, interp), the frame's
// ({size, 8, 0}: previous, f_executable), the code's, each field within the size its section
// opens with, then the PyObject section
// ({16, 8}: sizeof(PyObject), offsetof ob_type). A shape that fits more than one way is refused.
constexpr size_t kMaxWords = 128;

struct DebugSections {
  size_t runtime = 0, interp = 0, interp_words = 0, tstate = 0, frame = 0, code = 0, object = 0;
};

bool plausible_struct(std::span<const uint8_t> b, size_t at, size_t words, uint64_t max_size) {
  uint64_t size = u64_at(b, at);
  if (size == 0 || size > max_size) return false;
  for (size_t i = 1; i < words; ++i)
    if (u64_at(b, at + i) >= size) return false;
  return true;
}

std::optional<DebugSections> find_sections(std::span<const uint8_t> b) {
  std::optional<DebugSections> found;
  int matches = 0;
  size_t words = b.size() / 8;
  DebugSections s;
  s.runtime = 3;
  s.interp = s.runtime + 3;
  if (s.interp >= words || !plausible_struct(b, s.runtime, 3, 1 << 24)) return std::nullopt;
  for (size_t interp_words = 4; interp_words <= 24; ++interp_words) {
    s.interp_words = interp_words;
    s.tstate = s.interp + interp_words;
    if (s.tstate + 4 > words) break;
    // PyThreadState has opened with prev, next, interp since 3.8.
    if (u64_at(b, s.tstate + 1) != 0 || u64_at(b, s.tstate + 2) != 8 ||
        u64_at(b, s.tstate + 3) != 16)
      continue;
    if (!plausible_struct(b, s.interp, interp_words, 1 << 24)) continue;
    for (size_t tstate_words = 7; tstate_words <= 20; ++tstate_words) {
      s.frame = s.tstate + tstate_words;
      if (s.frame >= words || !plausible_struct(b, s.tstate, tstate_words, 1 << 16)) continue;
      for (size_t frame_words = 6; frame_words <= 10; ++frame_words) {
        s.code = s.frame + frame_words;
        if (s.code >= words || !plausible_struct(b, s.frame, frame_words, 512)) continue;
        // _PyInterpreterFrame has opened with f_executable, previous since 3.13.
        if (u64_at(b, s.frame + 1) != 8 || u64_at(b, s.frame + 2) != 0) continue;
        for (size_t code_words = 10; code_words <= 14; ++code_words) {
          s.object = s.code + code_words;
          if (s.object + 2 > words) continue;
          if (u64_at(b, s.object) != 16 || u64_at(b, s.object + 1) != 8) continue;
          if (!plausible_struct(b, s.code, code_words, 4096)) continue;
          found = s;
          ++matches;
        }
      }
    }
  }
  if (matches != 1) return std::nullopt;
  return found;
}

uint32_t u32(uint64_t v) {
  return static_cast<uint32_t>(v);
}

}  // namespace

std::optional<PythonLayout> python_layout_for(PythonVersion v, bool /*debug*/) {
  if (v.major != 3) return std::nullopt;
  switch (v.minor) {
    case 8:
    case 9:
      return row_3_8_or_3_9(v);
    case 10:
      return row_3_10(v);
    case 11:
      return row_3_11(v);
    case 12:
      return row_3_12(v);
    default:
      return std::nullopt;
  }
}

std::string_view python_layout_source(PythonVersion v) {
  if (v.major != 3) return "";
  switch (v.minor) {
    case 8:
      return "CPython v3.8.0 Include/internal/pycore_pystate.h, Include/cpython/pystate.h, "
             "Include/frameobject.h, Include/code.h";
    case 9:
      return "CPython v3.9.0 Include/internal/pycore_runtime.h, pycore_interp.h, "
             "Include/cpython/pystate.h, cpython/frameobject.h, cpython/code.h";
    case 10:
      return "CPython v3.10.0 Include/internal/pycore_runtime.h, pycore_interp.h, "
             "Include/cpython/pystate.h, cpython/frameobject.h, cpython/code.h";
    case 11:
      return "CPython v3.11.0 Include/internal/pycore_runtime.h, pycore_interp.h, "
             "pycore_frame.h, Include/cpython/pystate.h, cpython/code.h";
    case 12:
      return "CPython v3.12.0 Include/internal/pycore_runtime.h, pycore_interp.h, "
             "pycore_frame.h, Include/cpython/pystate.h, cpython/code.h, cpython/unicodeobject.h; "
             "the GIL from v3.12.1 pycore_interp.h, pycore_gc.h, pycore_ceval_state.h, "
             "pycore_gil.h";
    default:
      return v.minor >= 13
                 ? "the interpreter's _Py_DebugOffsets (Include/internal/pycore_runtime.h)"
                 : "";
  }
}

size_t python_debug_offsets_size() {
  return kMaxWords * 8;
}

std::optional<PythonVersion> python_debug_offsets_version(std::span<const uint8_t> bytes) {
  if (bytes.size() < 16 || std::memcmp(bytes.data(), "xdebugpy", 8) != 0) return std::nullopt;
  uint64_t hex = u64_at(bytes, 1);  // PY_VERSION_HEX: 0x030d00f0
  return PythonVersion{static_cast<uint32_t>(hex >> 24 & 0xff),
                       static_cast<uint32_t>(hex >> 16 & 0xff),
                       static_cast<uint32_t>(hex >> 8 & 0xff)};
}

Result<PythonLayout> parse_python_debug_offsets(std::span<const uint8_t> bytes) {
  auto v = python_debug_offsets_version(bytes);
  if (!v) return fail("_PyRuntime does not start with _Py_DebugOffsets (no \"xdebugpy\" cookie)");
  if (v->major != 3 || v->minor < 13)
    return fail("_Py_DebugOffsets says version {}.{}.{}, which has none (3.13+ has)", v->major,
                v->minor, v->micro);
  bytes = bytes.first(std::min(bytes.size(), python_debug_offsets_size()));
  if (bytes.size() < 3 * 8) return fail("_Py_DebugOffsets: only {} bytes", bytes.size());
  // The free-threaded build (3.13t) says so in its third word; its objects have another header.
  if (u64_at(bytes, 2) == 1)
    return fail(
        "_Py_DebugOffsets of {}.{}: a free-threaded build, whose frames uscope cannot "
        "read yet",
        v->major, v->minor);
  auto s = find_sections(bytes);
  if (!s)
    return fail(
        "_Py_DebugOffsets of {}.{}: its sections are not where uscope looks for them "
        "(runtime, interpreter, thread, frame, code, object)",
        v->major, v->minor);
  PythonLayout l;
  auto w = [&](size_t at) { return u32(u64_at(bytes, at)); };
  // Fields by their place in a section. 3.14 put threads_main after threads_head; 3.15 put
  // base_frame and last_profiled_frame after current_frame.
  size_t gil_at = v->minor >= 14 ? 9 : 8;  // ceval_gil, then gil_runtime_state, _enabled,
                                           // _locked, _holder
  size_t thread_id_at = v->minor >= 15 ? 7 : 5;
  BpfRow r{};
  r.frame_model = PY_FRAMES_OWNER;
  r.runtime_interp_head = w(s->runtime + 2);
  r.interp_threads_head = w(s->interp + 3);
  r.tstate_next = w(s->tstate + 2);
  r.tstate_native_thread_id = w(s->tstate + thread_id_at + 1);
  r.tstate_frame = w(s->tstate + 4);  // current_frame, directly in the thread state
  r.cframe_current_frame = NO;
  r.frame_previous = w(s->frame + 1);
  r.frame_code = w(s->frame + 2);   // f_executable
  r.frame_instr = w(s->frame + 3);  // instr_ptr
  r.frame_entry = w(s->frame + 5);  // owner
  r.code_adaptive = w(s->code + 9);
  uint32_t frame_end =
      std::max({r.frame_previous + 8, r.frame_code + 8, r.frame_instr + 8, r.frame_entry + 1});
  r.frame_read_size = std::min<uint32_t>(w(s->frame), (frame_end + 7) / 8 * 8);
  l.bpf = to_bpf(*v, r);
  l.interp_next = w(s->interp + 2);
  l.tstate_interp = w(s->tstate + 3);
  l.bpf.tstate_thread_id = w(s->tstate + thread_id_at);
  if (s->interp_words > gil_at + 4) {
    uint32_t gil = w(s->interp + gil_at + 1);
    uint32_t locked = w(s->interp + gil_at + 3), holder = w(s->interp + gil_at + 4);
    if (locked >= gil && holder >= gil) {
      l.interp_ceval_gil = w(s->interp + gil_at);
      l.gil_locked = locked - gil;
      l.gil_last_holder = holder - gil;
    }
  }
  l.frame_owner = r.frame_entry;
  l.code_filename = w(s->code + 1);
  l.code_name = w(s->code + 2);
  l.code_qualname = w(s->code + 3);
  l.code_linetable = w(s->code + 4);
  l.code_firstlineno = w(s->code + 5);
  // 3.13's PyASCIIObject and PyCompactUnicodeObject are 3.12's (no wstr).
  l.unicode_ascii_size = 40;
  l.unicode_compact_size = 56;
  return l;
}

}  // namespace uscope
