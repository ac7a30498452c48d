#include "attach/task_fsbase.h"

#include <bpf/btf.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <optional>
#include <string_view>

namespace uscope {
namespace {

// The byte offset of member `name` in struct or union `type_id`, looking into anonymous members
// (a randomized task_struct keeps its fields in one).
std::optional<uint32_t> member_offset(const btf* b, uint32_t type_id, std::string_view name,
                                      uint32_t* member_type, int depth = 0) {
  const btf_type* t = btf__type_by_id(b, btf__resolve_type(b, type_id));
  if (!t || !(btf_is_struct(t) || btf_is_union(t)) || depth > 4) return std::nullopt;
  const btf_member* m = btf_members(t);
  for (int i = 0; i < btf_vlen(t); ++i, ++m) {
    uint32_t bits = btf_member_bit_offset(t, i);
    if (bits % 8) continue;
    const char* member = btf__name_by_offset(b, m->name_off);
    if (member && name == member) {
      *member_type = m->type;
      return bits / 8;
    }
    if (!member || !*member)
      if (auto inner = member_offset(b, m->type, name, member_type, depth + 1))
        return bits / 8 + *inner;
  }
  return std::nullopt;
}

Result<uint32_t> find_task_fsbase() {
  std::unique_ptr<btf, decltype(&btf__free)> b(btf__load_vmlinux_btf(), btf__free);
  if (!b) {
    int err = errno;
    return fail_errno(err, "cannot read the kernel's BTF (/sys/kernel/btf/vmlinux): {}",
                      std::strerror(err));
  }
  int task = btf__find_by_name_kind(b.get(), "task_struct", BTF_KIND_STRUCT);
  if (task < 0) return fail("the kernel's BTF has no struct task_struct");
  uint32_t thread_type = 0, fsbase_type = 0;
  auto thread = member_offset(b.get(), static_cast<uint32_t>(task), "thread", &thread_type);
  auto fsbase = thread ? member_offset(b.get(), thread_type, "fsbase", &fsbase_type) : std::nullopt;
  if (!fsbase) return fail("the kernel's struct task_struct has no thread.fsbase (not x86-64)");
  return *thread + *fsbase;
}

}  // namespace

Result<uint32_t> task_fsbase_offset() {
  static const Result<uint32_t> offset = find_task_fsbase();
  return offset;
}

}  // namespace uscope
