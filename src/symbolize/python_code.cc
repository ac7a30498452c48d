#include "symbolize/python_code.h"

#include <algorithm>
#include <cstring>

namespace uscope {
namespace {

constexpr int kNoLine = -1;
constexpr uint64_t kMaxChars = 4096;         // longer names and paths are cut
constexpr uint64_t kMaxLineTable = 1 << 20;  // a line table of a 500k-instruction function

// The location table (Objects/locations.md, 3.11+): each entry opens with a byte 1ccccnnn
// (code c, n + 1 code units), then varints of 6-bit chunks, low first, 0x40 continuing.
class LocationReader {
 public:
  explicit LocationReader(std::span<const uint8_t> t) : t_(t) {}
  bool at_end() const { return pos_ >= t_.size(); }
  std::optional<uint8_t> byte() {
    if (at_end()) return std::nullopt;
    return t_[pos_++];
  }
  std::optional<uint32_t> varint() {
    uint32_t v = 0;
    for (int shift = 0; shift < 32; shift += 6) {
      auto b = byte();
      if (!b || (*b & 0x80)) return std::nullopt;  // an entry's first byte: this one ended
      v |= static_cast<uint32_t>(*b & 0x3f) << shift;
      if (!(*b & 0x40)) return v;
    }
    return std::nullopt;
  }
  std::optional<int32_t> svarint() {
    auto u = varint();
    if (!u) return std::nullopt;
    return (*u & 1) ? -static_cast<int32_t>(*u >> 1) : static_cast<int32_t>(*u >> 1);
  }

 private:
  std::span<const uint8_t> t_;
  size_t pos_ = 0;
};

void decode_locations(int first_line, std::span<const uint8_t> table,
                      std::vector<PythonLineRange>& out) {
  LocationReader r(table);
  int line = first_line;
  uint32_t start = 0;
  while (!r.at_end()) {
    uint8_t head = *r.byte();
    if (!(head & 0x80)) return;  // lost the entry boundary: a malformed table
    int code = (head >> 3) & 15;
    uint32_t len = (head & 7) + 1;
    int entry_line = 0;
    bool ok = true;
    if (code == 15) {  // no location
      entry_line = kNoLine;
    } else if (code == 14) {  // long form: line delta, end line delta, column, end column
      auto d = r.svarint();
      ok = d && r.varint() && r.varint() && r.varint();
      if (ok) line += *d;
      entry_line = line;
    } else if (code == 13) {  // no column
      auto d = r.svarint();
      ok = d.has_value();
      if (ok) line += *d;
      entry_line = line;
    } else if (code >= 10) {  // one line: delta code - 10, then column and end column bytes
      line += code - 10;
      ok = r.byte() && r.byte();
      entry_line = line;
    } else {  // short form: same line, one byte of columns
      ok = r.byte().has_value();
      entry_line = line;
    }
    if (!ok) return;
    out.push_back({start, start + len, entry_line});
    start += len;
  }
}

// Bytes [start, end) as the instructions (2 bytes each) that begin in them: PyCode_Addr2Line is
// asked for byte 2 * instr. Real tables have even deltas; odd ones must not make ranges overlap.
void push_bytes(std::vector<PythonLineRange>& out, uint32_t start, uint32_t end, int line) {
  uint32_t first = (start + 1) / 2, last = (end + 1) / 2;
  if (first < last) out.push_back({first, last, line});
}

// 3.10 co_linetable (Objects/lnotab_notes.txt): (byte delta, signed line delta) pairs; -128: the
// range has no line. Empty ranges carry line changes forward.
void decode_linetable(int first_line, std::span<const uint8_t> table,
                      std::vector<PythonLineRange>& out) {
  int line = first_line;
  uint32_t end = 0;
  for (size_t i = 0; i + 1 < table.size(); i += 2) {
    uint32_t start = end;
    end += table[i];
    auto ldelta = static_cast<int8_t>(table[i + 1]);
    int range_line = kNoLine;
    if (ldelta != -128) {
      line += ldelta;
      range_line = line;
    }
    push_bytes(out, start, end, range_line);
  }
}

// <= 3.9 co_lnotab: (byte increment, signed line increment) pairs, PyCode_Addr2Line's walk: an
// address's line is the line after every pair whose address is not beyond it.
void decode_lnotab(int first_line, std::span<const uint8_t> table,
                   std::vector<PythonLineRange>& out) {
  int line = first_line;
  uint32_t addr = 0;
  for (size_t i = 0; i + 1 < table.size(); i += 2) {
    uint32_t next = addr + table[i];
    push_bytes(out, addr, next, line);
    addr = next;
    line += static_cast<int8_t>(table[i + 1]);
  }
  // The last line holds to the end of the code, whose length the table does not say.
  out.push_back({(addr + 1) / 2, UINT32_MAX, line});
}

std::optional<std::string> utf8_of(uint32_t kind, std::span<const uint8_t> data, uint64_t chars) {
  std::string s;
  s.reserve(chars);
  for (uint64_t i = 0; i < chars; ++i) {
    uint32_t c = 0;
    std::memcpy(&c, data.data() + i * kind, kind);  // little-endian, as the target
    if (c < 0x80) {
      s += static_cast<char>(c);
    } else if (c < 0x800) {
      s += static_cast<char>(0xc0 | c >> 6);
      s += static_cast<char>(0x80 | (c & 0x3f));
    } else if (c < 0x10000) {
      s += static_cast<char>(0xe0 | c >> 12);
      s += static_cast<char>(0x80 | (c >> 6 & 0x3f));
      s += static_cast<char>(0x80 | (c & 0x3f));
    } else if (c < 0x110000) {
      s += static_cast<char>(0xf0 | c >> 18);
      s += static_cast<char>(0x80 | (c >> 12 & 0x3f));
      s += static_cast<char>(0x80 | (c >> 6 & 0x3f));
      s += static_cast<char>(0x80 | (c & 0x3f));
    } else {
      return std::nullopt;
    }
  }
  return s;
}

// A str object (PEP 393): compact ASCII data right after PyASCIIObject; other compact strings
// (latin-1, UCS-2, UCS-4) after PyCompactUnicodeObject.
Result<std::string> read_unicode(const PythonLayout& l, const TargetMemory& mem, uint64_t addr) {
  // PyASCIIObject's part holds length and state; a short ASCII str ends soon after it.
  std::vector<uint8_t> head(std::max(l.unicode_state + 4, l.unicode_length + 8));
  if (addr == 0 || !mem(addr, head)) return fail("cannot read a str at {:#x}", addr);
  int64_t length = 0;
  uint32_t state = 0;
  std::memcpy(&length, head.data() + l.unicode_length, 8);
  std::memcpy(&state, head.data() + l.unicode_state, 4);
  uint32_t kind = state >> 2 & 7;
  bool compact = state >> 5 & 1, ascii = state >> 6 & 1;
  if (!compact) return fail("the str at {:#x} is not compact", addr);
  if (length < 0 || (kind != 1 && kind != 2 && kind != 4) || (ascii && kind != 1))
    return fail("the str at {:#x} has length {} and kind {}", addr, length, kind);
  uint64_t chars = std::min<uint64_t>(length, kMaxChars);
  std::vector<uint8_t> data(chars * kind);
  uint64_t at = addr + (ascii ? l.unicode_ascii_size : l.unicode_compact_size);
  if (!mem(at, data)) return fail("cannot read the characters of the str at {:#x}", addr);
  if (ascii) return std::string(data.begin(), data.end());
  auto s = utf8_of(kind, data, chars);
  if (!s) return fail("the str at {:#x} holds a character beyond Unicode", addr);
  return *s;
}

Result<std::vector<uint8_t>> read_bytes(const PythonLayout& l, const TargetMemory& mem,
                                        uint64_t addr) {
  int64_t size = 0;
  if (addr == 0 || !mem(addr + l.bytes_size, {reinterpret_cast<uint8_t*>(&size), 8}))
    return fail("cannot read a bytes object at {:#x}", addr);
  if (size < 0 || static_cast<uint64_t>(size) > kMaxLineTable)
    return fail("the bytes object at {:#x} says it holds {} bytes", addr, size);
  std::vector<uint8_t> data(size);
  if (!mem(addr + l.bytes_data, data)) return fail("cannot read {} bytes at {:#x}", size, addr);
  return data;
}

}  // namespace

Result<std::string> read_python_str(const PythonLayout& layout, const TargetMemory& mem,
                                    uint64_t addr) {
  return read_unicode(layout, mem, addr);
}

PythonLineTable python_line_table_kind(PythonVersion v) {
  if (v.major == 3 && v.minor <= 9) return PythonLineTable::Lnotab;
  if (v.major == 3 && v.minor == 10) return PythonLineTable::Linetable;
  return PythonLineTable::Locations;
}

std::vector<PythonLineRange> decode_python_line_table(PythonLineTable kind, int first_line,
                                                      std::span<const uint8_t> table) {
  std::vector<PythonLineRange> out;
  switch (kind) {
    case PythonLineTable::Locations:
      decode_locations(first_line, table, out);
      break;
    case PythonLineTable::Linetable:
      decode_linetable(first_line, table, out);
      break;
    case PythonLineTable::Lnotab:
      decode_lnotab(first_line, table, out);
      break;
  }
  return out;
}

int python_line_of(PythonLineTable kind, int first_line, std::span<const uint8_t> table,
                   uint32_t instr) {
  for (const auto& r : decode_python_line_table(kind, first_line, table))
    if (instr >= r.start && instr < r.end) return r.line;
  return kNoLine;
}

Result<PythonCode> read_python_code(const PythonLayout& l, PythonVersion v, const TargetMemory& mem,
                                    uint64_t addr) {
  uint32_t end = 0;
  for (uint32_t off : {l.code_filename, l.code_name, l.code_qualname, l.code_linetable})
    if (off != PY_NO_OFFSET) end = std::max(end, off + 8);
  end = std::max(end, l.code_firstlineno + 4);
  std::vector<uint8_t> code(end);
  if (addr == 0 || !mem(addr, code)) return fail("cannot read a code object at {:#x}", addr);
  auto ptr = [&](uint32_t off) {
    uint64_t p = 0;
    std::memcpy(&p, code.data() + off, 8);
    return p;
  };
  PythonCode c;
  uint32_t name_off = l.code_qualname != PY_NO_OFFSET ? l.code_qualname : l.code_name;
  auto name = read_unicode(l, mem, ptr(name_off));
  if (!name) return with_context(fmt::format("code object {:#x}: its name", addr), name.error());
  auto file = read_unicode(l, mem, ptr(l.code_filename));
  if (!file) return with_context(fmt::format("code object {:#x}: its file", addr), file.error());
  auto table = read_bytes(l, mem, ptr(l.code_linetable));
  if (!table)
    return with_context(fmt::format("code object {:#x}: its line table", addr), table.error());
  c.qualname = std::move(*name);
  c.filename = std::move(*file);
  int32_t first = 0;
  std::memcpy(&first, code.data() + l.code_firstlineno, 4);
  c.first_line = first;
  c.table_kind = python_line_table_kind(v);
  c.line_table = std::move(*table);
  return c;
}

Result<const PythonCode*> PythonCodeCache::get(const PythonRuntime& rt, const TargetMemory& mem,
                                               uint64_t addr) {
  auto key = std::pair{rt.pid, addr};
  if (auto it = codes_.find(key); it != codes_.end()) return &it->second;
  auto c = read_python_code(rt.layout, rt.object.version, mem, addr);
  if (!c) return with_context(rt.name(), c.error());
  return &codes_.emplace(key, std::move(*c)).first->second;
}

const PythonCode* PythonCodeCache::find(pid_t pid, uint64_t addr) const {
  auto it = codes_.find(std::pair{pid, addr});
  return it == codes_.end() ? nullptr : &it->second;
}

void PythonCodeCache::forget(pid_t pid) {
  codes_.erase(codes_.lower_bound({pid, 0}), codes_.lower_bound({pid + 1, 0}));
}

Result<PythonFrame> python_named_frame(const PythonRuntime& rt, const TargetMemory& mem,
                                       PythonCodeCache& cache, uint64_t code, uint32_t instr) {
  auto c = cache.get(rt, mem, code);
  if (!c) return tl::unexpected(c.error());
  PythonFrame f;
  f.code = code;
  f.instr = instr;
  f.qualname = (*c)->qualname;
  f.filename = (*c)->filename;
  f.line = instr == PY_INSTR_UNKNOWN ? (*c)->first_line : (*c)->line_of(instr);
  return f;
}

Result<std::vector<PythonFrame>> python_thread_named_frames(const PythonRuntime& rt,
                                                            const TargetMemory& mem,
                                                            PythonCodeCache& cache,
                                                            uint64_t tstate) {
  auto raw = python_thread_frames(rt, mem, tstate);
  if (!raw) return tl::unexpected(raw.error());
  std::vector<PythonFrame> frames;
  for (const auto& r : *raw) {
    auto f = python_named_frame(rt, mem, cache, r.code, r.instr);
    if (!f) return tl::unexpected(f.error());
    frames.push_back(std::move(*f));
  }
  return frames;
}

}  // namespace uscope
