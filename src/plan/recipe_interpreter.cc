#include "plan/recipe_interpreter.h"

#include "plan/payload_wire.h"

#include <algorithm>
#include <cstring>

namespace uscope {

namespace {

constexpr uint32_t kDropError = 1;     // DROP_ERROR in trace.bpf.c
constexpr uint32_t kDropFiltered = 2;  // DROP_FILTERED
// Bytes of one string read: bpf_probe_read_user_str() writes a NUL after them, and one byte more
// is read to see whether the string goes on (TRACE_STR_TRUNCATED), within TRACE_MAX_STR.
constexpr uint64_t kMaxStringRead = TRACE_MAX_STR - 3;

// bpf_probe_read_user_str(): copies at most size - 1 bytes and a NUL; returns the bytes copied
// including the NUL, or -1 when a byte it had to read faulted. Like strncpy_from_user() it reads
// up to `size` bytes, so the byte at size - 1 must be readable when the string reaches it.
long read_user_str(const MemoryReader& read, uint64_t src, size_t size, uint8_t* dst) {
  if (size == 0) return 0;
  for (size_t i = 0; i < size; ++i) {
    uint8_t c = 0;
    if (!read || !read(src + i, &c, 1)) {
      std::memset(dst, 0, size);
      return -1;
    }
    if (i == size - 1) {
      dst[i] = 0;
      return static_cast<long>(size);
    }
    dst[i] = c;
    if (c == 0) return static_cast<long>(i + 1);
  }
  return static_cast<long>(size);
}

uint64_t extend(uint64_t v, uint32_t size, bool is_signed) {
  switch (size) {
    case 1:
      return is_signed ? static_cast<uint64_t>(static_cast<int64_t>(static_cast<int8_t>(v)))
                       : static_cast<uint8_t>(v);
    case 2:
      return is_signed ? static_cast<uint64_t>(static_cast<int64_t>(static_cast<int16_t>(v)))
                       : static_cast<uint16_t>(v);
    case 4:
      return is_signed ? static_cast<uint64_t>(static_cast<int64_t>(static_cast<int32_t>(v)))
                       : static_cast<uint32_t>(v);
    default:
      return v;
  }
}

// The per-CPU scratch of one run.
class Machine {
 public:
  Machine(const uscope_recipe& r, const RecipeInput& in) : r_(r), in_(in) {
    // bpf_get_current_comm(): at most TRACE_COMM_LEN - 1 bytes and NUL padding.
    std::memcpy(comm_, in.comm.data(), std::min<size_t>(in.comm.size(), TRACE_COMM_LEN - 1));
    data_.resize(TRACE_MAX_DATA + TRACE_MAX_STR + 16);
  }

  // bpf_loop(n_ops, step): stops at END, at a drop, or after TRACE_MAX_OPS steps.
  void run(EntrySlots& slots, RecipeRun& out) {
    slots_ = &slots;
    for (uint32_t i = 0; i < r_.n_ops && i < TRACE_MAX_OPS; ++i) {
      if (drop_) break;
      if (!step(r_.ops[i])) break;
      ++out.ops_run;
    }
    out.read_errors = read_errors_;
  }

  uint32_t drop() const { return drop_; }
  uint64_t value() const { return value_; }
  uint32_t pos() const { return pos_; }
  std::span<const uint8_t> payload() const {
    return {data_.data(), std::min<size_t>(pos_, TRACE_MAX_DATA)};
  }

 private:
  uint64_t pop() {
    if (sp_ == 0 || sp_ > TRACE_STACK) {
      drop_ = kDropError;
      return 0;
    }
    return stack_[--sp_];
  }

  void push(uint64_t v) {
    if (sp_ >= TRACE_STACK) {
      drop_ = kDropError;
      return;
    }
    stack_[sp_++] = v;
  }

  uint64_t deref(uint64_t addr, uint32_t size) {
    uint64_t v = 0;
    size_t n = size == 1 || size == 2 || size == 4 ? size : 8;
    if (!in_.read || !in_.read(addr, &v, n)) {
      v = 0;
      ++read_errors_;
    }
    return v;
  }

  void put_u32(uint32_t at, uint32_t v) { std::memcpy(&data_[at], &v, 4); }
  void put_u64(uint32_t at, uint64_t v) { std::memcpy(&data_[at], &v, 8); }

  void emit_u64(uint64_t v) {
    if (pos_ > TRACE_MAX_DATA - 8) {
      drop_ = kDropError;
      return;
    }
    put_u64(pos_, v);
    pos_ += 8;
  }

  // `requested`: the popped length of a pointer + length string, or the op's cap.
  void emit_str(uint64_t addr, uint64_t max, uint64_t requested, bool exact) {
    bool in_key = r_.flags & TRACE_F_AGGREGATE;
    if (pos_ > TRACE_MAX_DATA - TRACE_STR_DEFERRED_BYTES) {
      drop_ = kDropError;
      return;
    }
    uint32_t room = TRACE_MAX_DATA - 4 - pos_;
    if (max > room) max = room;
    if (max > kMaxStringRead) max = kMaxStringRead;
    bool truncated = exact && requested > max;
    long n = 0;
    if (max > 0) {
      uint8_t* dst = &data_[pos_ + 4];
      if (exact) {
        n = in_.read && in_.read(addr, dst, max) ? static_cast<long>(max) : -1;
      } else {
        n = read_user_str(in_.read, addr, max + 2, dst);
        if (n > 0) n--;  // the NUL
        truncated = n > static_cast<long>(max);
        if (truncated) n = static_cast<long>(max);
      }
    }
    if (n < 0 && in_key) {
      // A key outlives the call: marked unreadable, no address, the read error counted.
      put_u32(pos_, TRACE_STR_DEFERRED);
      pos_ += 4;
      ++read_errors_;
      return;
    }
    if (n < 0) {
      // A page the process has not touched yet: user space reads it from the live process.
      put_u32(pos_, TRACE_STR_DEFERRED | (exact ? TRACE_STR_EXACT : 0) |
                        (requested > max ? TRACE_STR_TRUNCATED : 0) |
                        (static_cast<uint32_t>(max) & TRACE_STR_LEN_MASK));
      put_u64(pos_ + 4, addr);
      pos_ += TRACE_STR_DEFERRED_BYTES;
      return;
    }
    put_u32(pos_, static_cast<uint32_t>(n) | (truncated ? TRACE_STR_TRUNCATED : 0));
    pos_ += 4 + (static_cast<uint32_t>(n) & (TRACE_MAX_STR - 1));
  }

  void emit_comm() {
    if (pos_ > TRACE_MAX_DATA - 4 - TRACE_COMM_LEN) {
      drop_ = kDropError;
      return;
    }
    uint32_t n = 0;
    for (; n < TRACE_COMM_LEN && comm_[n]; n++) data_[pos_ + 4 + n] = comm_[n];
    put_u32(pos_, n);
    pos_ += 4 + n;
  }

  // The string at `src` (or comm) equals pool[off, off + len). One byte more than the literal
  // is read, so that a longer string is not taken for equal.
  uint64_t str_equal(uint64_t src, uint32_t off, uint32_t len, bool comm) {
    if (len >= TRACE_POOL - 2) return 0;
    uint8_t tmp[TRACE_POOL + 2] = {};
    if (comm) {
      std::memcpy(tmp, comm_, TRACE_COMM_LEN);
    } else if (read_user_str(in_.read, src, len + 2, tmp) < 0) {
      ++read_errors_;
      return 0;
    }
    for (uint32_t i = 0; i <= len; i++) {
      char want = i < len ? r_.pool[(off + i) & (TRACE_POOL - 1)] : 0;
      if (static_cast<char>(tmp[i]) != want) return 0;
    }
    return 1;
  }

  // One op; false stops the loop (END, a false predicate, an unknown op).
  bool step(const uscope_op& op) {
    uint64_t a = 0, b = 0;
    switch (op.code) {
      case TOP_END:
        return false;
      case TOP_REG:
        push(in_.regs[op.a < TRACE_NUM_REGS ? op.a : 0] + static_cast<uint64_t>(op.imm));
        break;
      case TOP_CONST:
        push(static_cast<uint64_t>(op.imm));
        break;
      case TOP_PID:
        push(in_.pid);
        break;
      case TOP_TID:
        push(in_.tid);
        break;
      case TOP_CPU:
        push(in_.cpu);
        break;
      case TOP_UID:
        push(in_.uid);
        break;
      case TOP_ENTRY:
        push((*slots_)[op.a & (TRACE_ENTRY_SLOTS - 1)] + static_cast<uint64_t>(op.imm));
        break;
      case TOP_SAVE:
        (*slots_)[op.a & (TRACE_ENTRY_SLOTS - 1)] = pop();
        break;
      case TOP_DEREF:
        a = pop() + static_cast<uint64_t>(op.imm);
        push(extend(deref(a, op.a), op.a, op.b));
        break;
      case TOP_ADDI:
        push(pop() + static_cast<uint64_t>(op.imm));
        break;
      case TOP_EXT:
        push(extend(pop(), op.a, op.b));
        break;
      case TOP_NOT:
        push(!pop());
        break;
      case TOP_NEG:
        push(-pop());
        break;
      case TOP_BITNOT:
        push(~pop());
        break;
      case TOP_STREQ:
        a = pop();
        push(str_equal(a, op.a, op.b, false));
        break;
      case TOP_COMMEQ:
        push(str_equal(0, op.a, op.b, true));
        break;
      case TOP_FILTER:
        // An empty stack sets DROP_ERROR in pop() and then reads as false: the BPF side counts
        // such an event as filtered, and so does this.
        if (!pop()) {
          drop_ = kDropFiltered;
          return false;
        }
        break;
      case TOP_EMIT:
        emit_u64(pop());
        break;
      case TOP_EMIT_STR: {
        b = op.a ? pop() : static_cast<uint64_t>(op.imm);
        uint64_t requested = b;
        if (op.a && b > static_cast<uint64_t>(op.imm)) b = static_cast<uint64_t>(op.imm);
        a = pop();
        emit_str(a, b, requested, op.a != 0);
        break;
      }
      case TOP_EMIT_COMM:
        emit_comm();
        break;
      case TOP_AGG_VALUE:
        value_ = pop();
        break;
      default:
        if (op.code >= TOP_ADD && op.code <= TOP_LOR) {
          b = pop();
          a = pop();
          push(binary(op.code, a, b));
          break;
        }
        drop_ = kDropError;
        return false;
    }
    return true;
  }

  static uint64_t binary(uint8_t code, uint64_t a, uint64_t b) {
    auto sa = static_cast<int64_t>(a), sb = static_cast<int64_t>(b);
    switch (code) {
      case TOP_ADD:
        return a + b;
      case TOP_SUB:
        return a - b;
      case TOP_MUL:
        return a * b;
      case TOP_DIV:
        return b ? a / b : 0;
      case TOP_MOD:
        return b ? a % b : 0;
      case TOP_AND:
        return a & b;
      case TOP_OR:
        return a | b;
      case TOP_XOR:
        return a ^ b;
      case TOP_SHL:
        return a << (b & 63);
      case TOP_SHR:
        return a >> (b & 63);
      case TOP_SAR:
        return static_cast<uint64_t>(sa >> (b & 63));
      case TOP_EQ:
        return a == b;
      case TOP_NE:
        return a != b;
      case TOP_LT:
        return a < b;
      case TOP_LE:
        return a <= b;
      case TOP_GT:
        return a > b;
      case TOP_GE:
        return a >= b;
      case TOP_SLT:
        return sa < sb;
      case TOP_SLE:
        return sa <= sb;
      case TOP_SGT:
        return sa > sb;
      case TOP_SGE:
        return sa >= sb;
      case TOP_LAND:
        return a && b;
      default:  // TOP_LOR
        return a || b;
    }
  }

  const uscope_recipe& r_;
  const RecipeInput& in_;
  char comm_[TRACE_COMM_LEN + 1] = {};
  uint64_t stack_[TRACE_STACK] = {};
  uint32_t sp_ = 0;
  uint32_t pos_ = 0;
  uint32_t drop_ = 0;
  uint32_t read_errors_ = 0;
  uint64_t value_ = 0;
  EntrySlots* slots_ = nullptr;
  std::vector<uint8_t> data_;
};

}  // namespace

const char* recipe_outcome_name(RecipeOutcome o) {
  switch (o) {
    case RecipeOutcome::Emitted:
      return "emitted";
    case RecipeOutcome::Filtered:
      return "filtered";
    case RecipeOutcome::Malformed:
      return "malformed";
    case RecipeOutcome::SavedEntry:
      return "saved entry";
    case RecipeOutcome::NoEntry:
      return "no entry";
    case RecipeOutcome::Histogrammed:
      return "histogrammed";
    case RecipeOutcome::Aggregated:
      return "aggregated";
    case RecipeOutcome::Abandoned:
      return "abandoned";
    case RecipeOutcome::NothingToDrop:
      return "nothing to drop";
  }
  return "?";
}

namespace {

// aggregate() in trace.bpf.c.
void aggregate(const uscope_recipe& r, const RecipeInput& in, const Machine& m, RecipeRun& out) {
  if (m.pos() > TRACE_AGG_KEY_BYTES) {
    out.outcome = RecipeOutcome::Malformed;
    return;
  }
  out.outcome = RecipeOutcome::Aggregated;
  out.key.slot = r.agg_slot;
  out.key.stack_id = -1;
  std::memcpy(out.key.data, m.payload().data(), m.pos());
  if (r.flags & TRACE_F_AGG_USTACK) {
    if (in.stack) {
      out.key.stack_id = 0;
      out.key.stack = *in.stack;
    } else {
      out.stack_failed = true;
    }
  }
  out.value = r.flags & TRACE_F_HISTOGRAM ? in.duration_ns : m.value();
  if (r.agg_mode != TRACE_AGG_COUNT)
    out.bucket = static_cast<int>(trace_agg_bucket(&r, static_cast<int64_t>(out.value)));
}

}  // namespace

RecipeRun interpret_recipe(const uscope_recipe& recipe, const RecipeInput& in) {
  RecipeRun out;
  // A runtime call's entry that only records the call (TRACE_F_DEPTH): before any op.
  if ((recipe.flags & TRACE_F_DEPTH) && (recipe.flags & TRACE_F_SAVE_ENTRY) &&
      !(recipe.flags & TRACE_F_RETURN)) {
    out.outcome = RecipeOutcome::SavedEntry;
    return out;
  }
  if (recipe.flags & TRACE_F_RETURN) {
    if (recipe.flags & TRACE_F_ABANDON) {
      out.outcome = in.entry ? RecipeOutcome::Abandoned : RecipeOutcome::NothingToDrop;
      return out;
    }
    if (in.entry) {
      out.slots = *in.entry;
    } else if (recipe.flags & TRACE_F_NEEDS_ENTRY) {
      out.outcome = RecipeOutcome::NoEntry;
      return out;
    }
    if ((recipe.flags & TRACE_F_HISTOGRAM) && !(recipe.flags & TRACE_F_AGGREGATE)) {
      out.outcome = RecipeOutcome::Histogrammed;
      return out;
    }
  }
  Machine m(recipe, in);
  m.run(out.slots, out);
  if (m.drop() == kDropFiltered) {
    out.outcome = RecipeOutcome::Filtered;
  } else if (m.drop()) {
    out.outcome = RecipeOutcome::Malformed;
  } else if (recipe.flags & TRACE_F_AGGREGATE) {
    aggregate(recipe, in, m, out);
  } else if (recipe.flags & TRACE_F_SAVE_ENTRY) {
    out.outcome = RecipeOutcome::SavedEntry;
  } else {
    auto p = m.payload();
    out.payload.assign(p.begin(), p.end());
  }
  return out;
}

Result<std::vector<PayloadValue>> decode_payload(std::span<const OutputField> fields,
                                                 std::span<const uint8_t> payload,
                                                 bool zero_padded) {
  std::vector<PayloadValue> out;
  PayloadReader reader(payload, zero_padded);
  for (size_t i = 0; i < fields.size(); ++i) {
    PayloadValue v;
    if (fields[i].kind == OutputField::Kind::GoValue ||
        fields[i].kind == OutputField::Kind::GoValues)
      return fail("field {}: Go values are printed by trace, not kept in keys", i + 1);
    bool ok = false;
    if (fields[i].kind == OutputField::Kind::Value) {
      ok = reader.value(v.number);
    } else {
      WireString s;
      ok = reader.string(s);
      v.is_string = true;
      v.text = s.text;
      v.truncated = s.truncated;
      v.deferred = s.deferred;
      v.exact = s.exact;
      v.length = s.length;
      v.address = s.address;
    }
    if (!ok)
      return fail("field {}: {}", i + 1,
                  fmt::format(fmt::runtime(reader.error()), reader.error_number()));
    out.push_back(std::move(v));
  }
  if (!reader.at_end()) return fail("{} bytes after the last field", reader.left());
  return out;
}

}  // namespace uscope
