#include "collect/user_walk.h"

#include <algorithm>

#include "bpf/hotspot.h"
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

uint32_t read_u32(const TargetMemory& mem, uint64_t addr) {
  uint8_t b[4];
  if (!mem(addr, b)) return 0;
  uint32_t v;
  std::memcpy(&v, b, 4);
  return v;
}

// The code blob holding `pc` (bpf/unwind.bpf.h's hs_find_blob): 0 when none.
uint64_t hs_blob_of(const hs_proc& j, const TargetMemory& mem, uint64_t pc) {
  for (const hs_heap& h : j.heaps) {
    if (pc < h.low || pc >= h.high) continue;
    const uint32_t shift = h.shift & 31;
    uint64_t segment = (pc - h.low) >> shift;
    uint8_t hop = HS_SEGMAP_FREE;
    for (int i = 0; i < HS_SEGMAP_STEPS; ++i) {
      if (!mem(h.segmap + segment, std::span<uint8_t>(&hop, 1))) return 0;
      if (hop == 0 || hop == HS_SEGMAP_FREE || hop > segment) break;
      segment -= hop;
    }
    return hop == 0 ? h.low + (segment << shift) + j.off.heapblock_size : 0;
  }
  return 0;
}

// How far a partly built compiled frame reaches (bpf/unwind.bpf.h's hs_partial_frame): 8, 16 or
// 0 (whole).
uint32_t hs_partial(const TargetMemory& mem, uint64_t pc, uint64_t code_begin,
                    int64_t frame_complete) {
  uint8_t c[24];
  if (!mem(pc - 8, c)) return 0;
  if (c[8] == 0x48 && (c[9] == 0x83 || c[9] == 0x81) && c[10] == 0xec) return c[7] == 0x55 ? 16 : 8;
  if (c[8] == 0x48 && c[9] == 0x89 && c[10] == 0xe5) return 16;
  if (c[8] == 0x55) return 8;
  if ((c[4] == 0x48 && c[5] == 0x83 && c[6] == 0xec) ||
      (c[1] == 0x48 && c[2] == 0x81 && c[3] == 0xec))
    return 0;
  if (frame_complete > 0 && pc < code_begin + static_cast<uint64_t>(frame_complete)) return 8;
  if (c[8] == 0xc3) return 8;
  if (c[8] == 0x5d && (c[9] == 0xc3 || c[16] == 0x0f || c[9] == 0x49)) return 16;
  if (c[7] == 0x5d && (c[8] == 0x49 || c[8] == 0xc3)) return 8;
  if (c[0] == 0x5d && c[8] == 0x0f && c[9] == 0x87 && c[14] == 0xc3) return 8;
  return 0;
}

struct JavaStep {
  uint64_t frame = 0;  // the tagged value recorded
  uint64_t pc = 0, sp = 0, bp = 0;
  bool end = false;  // the walk ends after this frame (why in `why`)
  unwind_end why = UNWIND_END_BAD_FRAME;
};

// One frame of a JVM's code cache, by bpf/unwind.bpf.h's hs_step rules; nullopt when no blob
// holds the pc (walked as native code, by frame pointer).
std::optional<JavaStep> java_step(const hs_proc& j, const TargetMemory& mem, uint64_t pc,
                                  uint64_t sp, uint64_t bp, bool top, uint64_t r13) {
  const hs_offsets& o = j.off;
  JavaStep st;
  auto interpreted = [&]() {
    uint64_t method = 0, sender_sp = 0, bcp = 0, constmethod = 0, caller_bp = 0, ra = 0;
    if (bp < sp || bp - sp > (1u << 20) ||
        !read_u64(mem, bp + 8 * int64_t{o.interp_method}, method) ||
        !read_u64(mem, bp + 8 * int64_t{o.interp_sender_sp}, sender_sp) ||
        !read_u64(mem, bp, caller_bp) || !read_u64(mem, bp + 8, ra)) {
      st.end = true;
      st.why = UNWIND_END_READ_FAILED;
      return st;
    }
    if (top)
      bcp = r13;
    else if (!read_u64(mem, bp + 8 * int64_t{o.interp_bcp}, bcp))
      bcp = 0;
    uint32_t bci = HS_BCI_UNKNOWN;
    if (read_u64(mem, method + o.method_const, constmethod)) {
      const uint64_t first = constmethod + o.constmethod_size;
      if (bcp >= first && bcp - first < HS_BCI_UNKNOWN) bci = static_cast<uint32_t>(bcp - first);
    }
    st.frame = HS_FRAME_INTERP(method, bci);
    if (sender_sp <= sp) {
      st.end = true;
      return st;
    }
    st.pc = ra;
    st.sp = sender_sp;
    st.bp = caller_bp;
    return st;
  };
  if (pc >= j.interp_start && pc < j.interp_end) return interpreted();
  const uint64_t blob = hs_blob_of(j, mem, pc);
  uint8_t b[HS_BLOB_READ];
  if (blob == 0 || !mem(blob, b)) return std::nullopt;
  auto u64_at = [&](uint32_t off) {
    uint64_t v = 0;
    if (off <= HS_BLOB_READ - 8) std::memcpy(&v, b + off, 8);
    return v;
  };
  auto s32_at = [&](uint32_t off) {
    int32_t v = 0;
    if (off <= HS_BLOB_READ - 4) std::memcpy(&v, b + off, 4);
    return int64_t{v};
  };
  const uint32_t name = read_u32(mem, u64_at(o.blob_name));
  if (name == HS_NAME_INTERPRETER) return interpreted();
  const uint64_t code_begin =
      o.code_begin_is_offset ? blob + s32_at(o.blob_code_begin) : u64_at(o.blob_code_begin);
  const int64_t words = s32_at(o.blob_frame_size);
  const uint32_t gen =
      name == HS_NAME_NMETHOD || name == HS_NAME_NATIVE ? read_u32(mem, blob + o.nm_compile_id) : 0;
  st.frame = HS_FRAME_CODE(top ? UNWIND_FRAME_TAG_HS_PC : UNWIND_FRAME_TAG_HS_RETURN, j.code_start,
                           blob, gen, pc - blob);
  int64_t complete = s32_at(o.blob_frame_complete);
  if (o.frame_complete_bytes == 2) complete = static_cast<int16_t>(complete);
  uint32_t partial = top ? hs_partial(mem, pc, code_begin, complete) : 0;
  if (name == HS_NAME_VTABLE) partial = 8;
  uint64_t cfa = 0;
  if (partial) {
    cfa = sp + partial;
  } else if (words <= 0 || name == HS_NAME_NATIVE) {
    if (bp < sp) {
      st.end = true;
      return st;
    }
    cfa = bp + 16;
  } else {
    cfa = sp + 8 * static_cast<uint64_t>(words);
    bool found = false;
    for (int i = 0; i < HS_RA_SEARCH_SLOTS && !found; ++i) {
      uint64_t ra = 0;
      if (!read_u64(mem, cfa - 8, ra)) break;
      found = ra >= j.code_start && ra < j.code_end;
      if (!found) cfa += 8;
    }
    if (!found) {
      st.end = true;
      return st;
    }
  }
  uint64_t ra = 0, caller_bp = bp;
  if (cfa <= sp || !read_u64(mem, cfa - 8, ra) ||
      (partial != 8 && !read_u64(mem, cfa - 16, caller_bp))) {
    st.end = true;
    st.why = UNWIND_END_READ_FAILED;
    return st;
  }
  st.pc = ra;
  st.sp = cfa;
  st.bp = caller_bp;
  return st;
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
                          std::span<const PythonRawFrame> python_frames, const hs_proc* java,
                          uint64_t r13) {
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
    // JIT code of a JVM: its Java frames (bpf/hotspot.h).
    if (!replaced && java && pc >= java->code_start && pc < java->code_end)
      if (auto st = java_step(*java, mem, pc, sp, bp, exact, r13)) {
        w.frames.push_back(st->frame);
        if (st->end) {
          end(st->why);
          break;
        }
        pc = st->pc;
        sp = st->sp;
        bp = st->bp;
        exact = false;
        continue;
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
