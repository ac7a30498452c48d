#include "collect/user_walk.h"

#include <algorithm>

#include "bpf/python.h"
#include "discover/object_store.h"
#include "discover/object_unwind_table.h"

namespace uscope {

namespace {

bool read_u64(const TargetMemory& mem, uint64_t addr, uint64_t& out) {
  uint8_t b[8];
  if (!mem(addr, b)) return false;
  std::memcpy(&out, b, 8);
  return true;
}

bool in_eval(const PythonRuntime& rt, uint64_t lookup) {
  for (int i = 0; i < PY_EVAL_RANGES; ++i)
    if (lookup >= rt.proc.eval_start[i] && lookup < rt.proc.eval_end[i]) return true;
  return false;
}

}  // namespace

UserWalker::UserWalker(std::shared_ptr<ObjectStore> store, UnwindCache* cache)
    : store_(std::move(store)), cache_(cache) {}

const UserWalker::Table& UserWalker::table_for(const MappedObject& o) {
  auto [it, fresh] = tables_.try_emplace(o.path);
  if (!fresh) return it->second;
  auto object = store_->open(o.open_path, o.path);
  if (!object) return it->second;
  auto bias = load_bias(o, (*object)->elf());
  auto got = unwind_table_of(**object, cache_);
  if (bias && got && !got->table->rows.empty()) {
    it->second.table = got->table;
    it->second.bias = *bias;
  }
  return it->second;
}

UserWalk UserWalker::walk(const Process& process, const TargetMemory& mem, uint64_t pc, uint64_t sp,
                          uint64_t bp, const PythonRuntime* python,
                          std::span<const PythonRawFrame> python_frames) {
  UserWalk w;
  size_t py = 0;  // the next Python frame to put in
  bool exact = true;
  auto end = [&](unwind_end why) { w.end = why; };
  while (true) {
    if (w.frames.size() >= UNWIND_MAX_FRAMES) {
      end(UNWIND_END_TRUNCATED);
      break;
    }
    if (pc == 0) {
      end(UNWIND_END_BAD_FRAME);
      break;
    }
    const uint64_t lookup = exact ? pc : pc - 1;
    bool replaced = false;
    if (python && py < python_frames.size() && in_eval(*python, lookup)) {
      // The eval call's frames, innermost first, up to the first it ran (its entry frame).
      while (py < python_frames.size() && w.frames.size() < UNWIND_MAX_FRAMES) {
        const PythonRawFrame& f = python_frames[py++];
        w.frames.push_back(PY_FRAME(f.code, f.instr));
        replaced = true;
        if (f.entry) break;
      }
    }
    if (!replaced) w.frames.push_back(pc);

    const MappedObject* o = process.object_containing(pc);
    const UnwindRow* row = nullptr;
    if (o != nullptr) {
      const Table& t = table_for(*o);
      if (t.table) {
        const auto& rows = t.table->rows;
        const uint64_t link = lookup - t.bias;
        auto it = std::upper_bound(rows.begin(), rows.end(), link,
                                   [](uint64_t a, const UnwindRow& r) { return a < r.vaddr; });
        if (it != rows.begin()) row = &*std::prev(it);
      }
    }
    const unwind_cfa_kind kind = row ? row->rule.cfa : UNWIND_CFA_NONE;
    uint64_t cfa = 0, ra = 0, caller_bp = bp;
    if (kind == UNWIND_CFA_END) {
      end(UNWIND_END_ENTRY);
      break;
    }
    if (kind == UNWIND_CFA_SIGNAL) {
      const UnwindRule& r = row->rule;
      if (!read_u64(mem, sp + r.cfa_offset, cfa) || !read_u64(mem, sp + r.rbp_offset, caller_bp) ||
          !read_u64(mem, sp + r.ra_offset, ra)) {
        end(UNWIND_END_READ_FAILED);
        break;
      }
      pc = ra;
      sp = cfa;
      bp = caller_bp;
      exact = true;
      continue;
    }
    if (kind == UNWIND_CFA_NONE) {
      if (bp == 0) {
        end(UNWIND_END_FP_ZERO);
        break;
      }
      if (!read_u64(mem, bp + 8, ra) || !read_u64(mem, bp, caller_bp)) {
        end(UNWIND_END_READ_FAILED);
        break;
      }
      cfa = bp + 16;
    } else if (kind == UNWIND_CFA_RSP || kind == UNWIND_CFA_RBP || kind == UNWIND_CFA_PLT) {
      const UnwindRule& r = row->rule;
      cfa = (kind == UNWIND_CFA_RBP ? bp : sp) + static_cast<int64_t>(r.cfa_offset);
      if (kind == UNWIND_CFA_PLT && (pc & 15) >= static_cast<uint64_t>(r.rbp_offset)) cfa += 8;
      if (!read_u64(mem, cfa + r.ra_offset, ra)) {
        end(UNWIND_END_READ_FAILED);
        break;
      }
      if (r.rbp == UNWIND_RBP_AT_CFA && kind != UNWIND_CFA_PLT) {
        if (!read_u64(mem, cfa + r.rbp_offset, caller_bp)) {
          end(UNWIND_END_READ_FAILED);
          break;
        }
      } else if (r.rbp == UNWIND_RBP_UNDEFINED) {
        caller_bp = 0;
      }
    } else {
      end(UNWIND_END_UNSUPPORTED);
      break;
    }
    if (cfa <= sp) {
      end(UNWIND_END_BAD_FRAME);
      break;
    }
    pc = ra;
    sp = cfa;
    bp = caller_bp;
    exact = false;
  }
  // Python frames whose eval call the walk did not meet: at the outer end, in order.
  for (; py < python_frames.size() && w.frames.size() < UNWIND_MAX_FRAMES; ++py) {
    w.frames.push_back(PY_FRAME(python_frames[py].code, python_frames[py].instr));
    ++w.python_unmatched;
  }
  return w;
}

}  // namespace uscope
