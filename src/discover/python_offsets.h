#pragma once
// Where CPython keeps what a stack walker reads, version by version: a table for 3.8-3.12 made
// from CPython's own headers (each row says which), and for 3.13+ the interpreter's own
// description of itself (_Py_DebugOffsets, at the start of _PyRuntime). The BPF walker reads the
// struct py_offsets part (bpf/python.h); user space also reads the thread list, which thread holds
// the GIL, and code objects with the strings they point to.
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

#include "bpf/python.h"
#include "util/result.h"

namespace uscope {

struct PythonVersion {
  uint32_t major = 0, minor = 0, micro = 0;
  bool operator==(const PythonVersion&) const = default;
  uint32_t code() const { return major << 8 | minor; }  // py_offsets.version: 0x30b for 3.11
};

// Byte offsets for one CPython version and build (x86-64, 64-bit pointers). PY_NO_OFFSET where
// the version has no such field.
struct PythonLayout {
  py_offsets bpf{};  // what the BPF walker reads; frame_instr and code_adaptive as documented there

  // Thread and interpreter lists.
  uint32_t interp_next = PY_NO_OFFSET;    // PyInterpreterState.next
  uint32_t tstate_interp = PY_NO_OFFSET;  // PyThreadState.interp
  // The thread state holding the GIL: 3.8-3.11 _PyRuntimeState.gilstate.tstate_current (NULL
  // while no thread holds it); PY_NO_OFFSET from 3.12 (a thread-local there; 3.12+ below).
  uint32_t runtime_tstate_current = PY_NO_OFFSET;
  // 3.12 (the table), 3.13+ (_Py_DebugOffsets): PyInterpreterState.ceval.gil, a pointer to the GIL
  // the interpreter uses, and in that _gil_runtime_state: locked (an int) and last_holder (the
  // thread state that took it last; the holder while locked).
  uint32_t interp_ceval_gil = PY_NO_OFFSET;
  uint32_t gil_locked = PY_NO_OFFSET;
  uint32_t gil_last_holder = PY_NO_OFFSET;
  // 3.11+: _PyInterpreterFrame.owner; frames owned by a generator or the C stack are not shown
  // by traceback (FRAME_OWNED_BY_CSTACK, 3.12+ shim frames).
  uint32_t frame_owner = PY_NO_OFFSET;

  // PyCodeObject.
  uint32_t code_filename = PY_NO_OFFSET;
  uint32_t code_name = PY_NO_OFFSET;
  uint32_t code_qualname = PY_NO_OFFSET;     // 3.11+
  uint32_t code_firstlineno = PY_NO_OFFSET;  // an int
  uint32_t code_linetable = PY_NO_OFFSET;    // co_linetable (3.10+) or co_lnotab (<= 3.9): bytes
  // 3.11, 3.12: _co_firsttraceable (an int, in code units): a frame whose instruction is before
  // it has not started (traceback skips it: _PyFrame_IsIncomplete).
  uint32_t code_first_traceable = PY_NO_OFFSET;

  // `threading`'s thread names (symbolize/python_thread_names.h), 3.8-3.11: PY_NO_OFFSET
  // (interp_modules) where this version's dicts and instance attributes are not described.
  uint32_t interp_modules = PY_NO_OFFSET;  // PyInterpreterState.modules (sys.modules, a dict)
  uint32_t module_dict = 16;               // PyModuleObject.md_dict
  uint32_t type_flags = 168;               // PyTypeObject.tp_flags
  // 3.11: PyHeapTypeObject.ht_cached_keys: the keys an instance's inline attribute values go with.
  uint32_t heap_type_cached_keys = PY_NO_OFFSET;
  // <= 3.10: PyTypeObject.tp_dictoffset (a Py_ssize_t): where an instance keeps its dict pointer.
  uint32_t type_dictoffset = PY_NO_OFFSET;
  // <= 3.10: PyDictKeysObject.dk_size (a Py_ssize_t, a power of 2): dk_size indices of 1, 2, 4 or
  // 8 bytes (by dk_size), then general entries {hash, key, value}; keys_nentries and
  // keys_indices say where dk_nentries and dk_indices are. PY_NO_OFFSET from 3.11.
  uint32_t keys_size = PY_NO_OFFSET;
  uint32_t dict_keys = 32;    // PyDictObject.ma_keys
  uint32_t dict_values = 40;  // PyDictObject.ma_values (NULL: values in the entries)
  // 3.11 PyDictKeysObject: dk_log2_index_bytes (a byte), dk_kind (a byte: 0 general entries
  // {hash, key, value}, else str-keyed entries {key, value}), dk_nentries, dk_indices (the
  // entries follow the 1 << dk_log2_index_bytes bytes of indices).
  uint32_t keys_log2_index_bytes = 9;
  uint32_t keys_kind = 10;
  uint32_t keys_nentries = 24;
  uint32_t keys_indices = 32;
  // Py_TPFLAGS_MANAGED_DICT (1 << 4 in tp_flags): an instance's dict and inline values are
  // kept this many bytes before the object (3.11: dict at -24, values at -32).
  uint32_t managed_dict_before = 24;
  uint32_t managed_values_before = 32;
  uint32_t long_size = 16;    // PyLongObject's ob_size (sign and number of digits)
  uint32_t long_digits = 24;  // PyLongObject.ob_digit: 30-bit digits in uint32s

  // Strings (PEP 393) and bytes.
  uint32_t unicode_length = 16;        // PyASCIIObject.length (characters)
  uint32_t unicode_state = 32;         // PyASCIIObject.state (bits: interned, kind, compact, ascii)
  uint32_t unicode_ascii_size = 48;    // sizeof(PyASCIIObject): a compact ASCII string's data
  uint32_t unicode_compact_size = 72;  // sizeof(PyCompactUnicodeObject): other compact strings
  uint32_t bytes_size = 16;            // PyVarObject.ob_size
  uint32_t bytes_data = 32;            // PyBytesObject.ob_sval
};

// The table row for `major.minor` (3.8-3.12); nullopt for a version with no row. `debug` is a
// Py_DEBUG build (python3.11d): the same layout in 3.8-3.12 (Py_DEBUG no longer implies
// Py_TRACE_REFS, the only option that changes the object header).
std::optional<PythonLayout> python_layout_for(PythonVersion v, bool debug = false);
// Where a row comes from: "CPython v3.11.0 Include/internal/pycore_frame.h, ...".
std::string_view python_layout_source(PythonVersion v);

// _Py_DebugOffsets (3.13+): the bytes at the start of _PyRuntime (at least
// python_debug_offsets_size()), cookie "xdebugpy" first. Fails naming what is wrong: no cookie, a
// version it does not describe, an offset out of range.
Result<PythonLayout> parse_python_debug_offsets(std::span<const uint8_t> bytes);
// How many bytes of _PyRuntime parse_python_debug_offsets reads.
size_t python_debug_offsets_size();
// The version _Py_DebugOffsets says (its PY_VERSION_HEX), when `bytes` start with the cookie.
std::optional<PythonVersion> python_debug_offsets_version(std::span<const uint8_t> bytes);

}  // namespace uscope
