#pragma once
// Where the running kernel keeps a task's fs base: offsetof(struct task_struct, thread.fsbase),
// from its BTF. The BPF walker reads it at that offset of the current task to tell Python
// 3.8-3.10's threads apart (bpf/python.h, py_proc.task_fsbase): a value handed to the programs,
// not a CO-RE relocation in them, so that only a process that needs it costs the parse of the
// kernel's BTF (~5.5 MB, a few ms), once per uscope process.
#include <cstdint>

#include "util/result.h"

namespace uscope {

// Fails naming why (no /sys/kernel/btf/vmlinux, a kernel without the field: not x86-64).
Result<uint32_t> task_fsbase_offset();

}  // namespace uscope
