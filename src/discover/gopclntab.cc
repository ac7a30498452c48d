// Reading Go's pclntab. The layouts are Go's runtime/symtab.go (pcHeader, _func, functab,
// inlinedCall) and runtime/runtime2.go (moduledata) at go1.16, go1.18 and go1.20; every offset is
// checked against the section, which comes from an untrusted file.
#include "discover/gopclntab.h"

#include <algorithm>
#include <cstring>
#include <functional>
#include <map>
#include <optional>

namespace uscope {

namespace {

constexpr uint32_t kMagic116 = 0xfffffffa;  // go1.16, go1.17
constexpr uint32_t kMagic118 = 0xfffffff0;  // go1.18, go1.19
constexpr uint32_t kMagic120 = 0xfffffff1;  // go1.20 and later
constexpr uint32_t kPcdataInlTreeIndex = 2;
constexpr uint32_t kFuncdataInlTree = 3;
constexpr int kMaxInlineDepth = 64;  // bounds a hostile inline tree's parent chain

// Bounds-checked little-endian reads from one byte range.
class Bytes {
 public:
  explicit Bytes(std::span<const uint8_t> b) : b_(b) {}
  std::optional<uint64_t> u(uint64_t off, int size) const {
    if (off > b_.size() || b_.size() - off < static_cast<uint64_t>(size)) return std::nullopt;
    uint64_t v = 0;
    std::memcpy(&v, b_.data() + off, static_cast<size_t>(size));
    return v;
  }
  std::optional<uint32_t> u32(uint64_t off) const {
    auto v = u(off, 4);
    return v ? std::optional<uint32_t>(static_cast<uint32_t>(*v)) : std::nullopt;
  }
  // A NUL-terminated string at `off`, at most 4 KiB.
  std::optional<std::string> cstr(uint64_t off) const {
    if (off >= b_.size()) return std::nullopt;
    size_t max = std::min<size_t>(b_.size() - off, 4096);
    const auto* p = reinterpret_cast<const char*>(b_.data() + off);
    size_t n = strnlen(p, max);
    if (n == max) return std::nullopt;
    return std::string(p, n);
  }
  // The same string where it lies in the bytes.
  std::optional<std::string_view> cstr_view(uint64_t off) const {
    if (off >= b_.size()) return std::nullopt;
    size_t max = std::min<size_t>(b_.size() - off, 4096);
    const auto* p = reinterpret_cast<const char*>(b_.data() + off);
    size_t n = strnlen(p, max);
    if (n == max) return std::nullopt;
    return std::string_view(p, n);
  }
  size_t size() const { return b_.size(); }
  std::span<const uint8_t> span() const { return b_; }

 private:
  std::span<const uint8_t> b_;
};

struct FuncRecord {
  uint64_t entry = 0, end = 0;
  uint64_t func_off = 0;  // of the _func record in pclntable
  int32_t name_off = 0;
  uint32_t pcsp = 0, pcfile = 0, pcln = 0, npcdata = 0, cu_offset = 0;
  uint8_t nfuncdata = 0;
};

}  // namespace

struct GoPclntab::Impl {
  // The section's bytes: read() leaves them in the ElfFile (which outlives the table, as
  // read_at's does); parse() of bytes it is handed keeps a copy in `owned`.
  std::span<const uint8_t> data;
  std::vector<uint8_t> owned;
  uint64_t section_addr = 0;
  uint32_t magic = 0;
  uint8_t quantum = 1, ptr_size = 8;
  uint64_t nfunc = 0, text_start = 0;
  uint64_t funcname_off = 0, cu_off = 0, filetab_off = 0, pctab_off = 0, pcln_off = 0;
  // Where FUNCDATA offsets count from (moduledata.gofunc, link-time); 0 when unknown (then no
  // inline trees), and the file bytes of the region they point into.
  uint64_t gofunc = 0;
  std::function<std::optional<std::span<const uint8_t>>(uint64_t, uint64_t)> read_at;
  GoModuleData module;
  std::vector<GoFunction> functions;
  std::vector<FuncRecord> records;  // parallel to functions
  mutable std::optional<std::vector<GoInlinedCall>> inlined;

  Bytes bytes() const { return Bytes(data); }
  size_t func_header_size() const {
    if (magic == kMagic116) return 44;
    return magic == kMagic120 ? 44 : 40;
  }

  std::optional<std::string> func_name(int32_t name_off) const {
    if (name_off < 0) return std::nullopt;
    return bytes().cstr(funcname_off + static_cast<uint64_t>(name_off));
  }
  std::optional<std::string_view> func_name_view(int32_t name_off) const {
    if (name_off < 0) return std::nullopt;
    return bytes().cstr_view(funcname_off + static_cast<uint64_t>(name_off));
  }

  static std::optional<uint64_t> varint(const Bytes& b, uint64_t& pos) {
    uint64_t v = 0;
    for (int shift = 0; shift < 35; shift += 7) {
      auto byte = b.u(pos++, 1);
      if (!byte) return std::nullopt;
      v |= (*byte & 0x7f) << shift;
      if (!(*byte & 0x80)) return v;
    }
    return std::nullopt;
  }

  // The value of pc-value table `table` (an offset into pctab) at `pc` of a function starting at
  // `entry`; nullopt when the table is absent, malformed, or does not cover pc.
  std::optional<int32_t> pcvalue(uint32_t table, uint64_t entry, uint64_t pc) const {
    if (table == 0) return std::nullopt;
    Bytes b = bytes();
    uint64_t pos = pctab_off + table;
    int32_t val = -1;
    uint64_t at = entry;
    for (bool first = true; pos < b.size(); first = false) {
      auto uvdelta = varint(b, pos);
      if (!uvdelta || (*uvdelta == 0 && !first)) return std::nullopt;
      auto d = static_cast<uint32_t>(*uvdelta);
      int32_t delta = (d & 1) ? static_cast<int32_t>(~(d >> 1)) : static_cast<int32_t>(d >> 1);
      val += delta;
      auto pcdelta = varint(b, pos);
      if (!pcdelta) return std::nullopt;
      at += *pcdelta * quantum;
      if (pc < at) return val;
    }
    return std::nullopt;
  }

  // Calls `f(start, end, value)` for every range of table `table`; stops at malformed data.
  template <typename F>
  void pcranges(uint32_t table, uint64_t entry, uint64_t end, F&& f) const {
    if (table == 0) return;
    Bytes b = bytes();
    uint64_t pos = pctab_off + table;
    int32_t val = -1;
    uint64_t at = entry;
    for (bool first = true; pos < b.size() && at < end; first = false) {
      auto uvdelta = varint(b, pos);
      if (!uvdelta || (*uvdelta == 0 && !first)) return;
      auto d = static_cast<uint32_t>(*uvdelta);
      val += (d & 1) ? static_cast<int32_t>(~(d >> 1)) : static_cast<int32_t>(d >> 1);
      auto pcdelta = varint(b, pos);
      if (!pcdelta || *pcdelta == 0) return;
      uint64_t next = at + *pcdelta * quantum;
      f(at, std::min(next, end), val);
      at = next;
    }
  }

  std::optional<uint32_t> pcdata(const FuncRecord& r, uint32_t index) const {
    if (index >= r.npcdata) return std::nullopt;
    return bytes().u32(pcln_off + r.func_off + func_header_size() + 4ull * index);
  }

  std::optional<uint64_t> funcdata_addr(const FuncRecord& r, uint32_t index) const {
    if (index >= r.nfuncdata) return std::nullopt;
    uint64_t base = pcln_off + r.func_off + func_header_size() + 4ull * r.npcdata;
    if (magic == kMagic116) {
      base = (base + 7) & ~uint64_t{7};
      auto v = bytes().u(base + 8ull * index, 8);
      if (!v || *v == 0) return std::nullopt;
      return *v;
    }
    auto off = bytes().u32(base + 4ull * index);
    if (!off || *off == 0xffffffffu || gofunc == 0) return std::nullopt;
    return gofunc + *off;
  }

  std::string file_of(const FuncRecord& r, int32_t index) const {
    if (index < 0) return {};
    auto off = bytes().u32(cu_off + 4ull * (r.cu_offset + static_cast<uint32_t>(index)));
    if (!off || *off == 0xffffffffu) return {};
    return bytes().cstr(filetab_off + *off).value_or("");
  }

  struct InlinedAt {
    std::string function;
    uint64_t parent_pc = 0;  // link-time pc of the call in the function it is inlined into
  };
  // Inline tree entry `ix` of function `r`.
  std::optional<InlinedAt> inlined_entry(const FuncRecord& r, uint64_t tree, int32_t ix) const {
    if (!read_at || ix < 0) return std::nullopt;
    const uint64_t size = magic == kMagic120 ? 16 : 20;
    auto raw = read_at(tree + size * static_cast<uint64_t>(ix), size);
    if (!raw) return std::nullopt;
    Bytes e(*raw);
    // go1.20+: {funcID u8, _ [3]byte, nameOff int32, parentPc int32, startLine int32}
    // go1.16-1.19: {parent int16, funcID u8, _ byte, file int32, line int32, func_ int32,
    //               parentPc int32}
    auto name_off = e.u32(magic == kMagic120 ? 4 : 12);
    auto parent_pc = e.u32(magic == kMagic120 ? 8 : 16);
    if (!name_off || !parent_pc) return std::nullopt;
    auto name = func_name(static_cast<int32_t>(*name_off));
    if (!name) return std::nullopt;
    return InlinedAt{*name, r.entry + static_cast<int32_t>(*parent_pc)};
  }

  std::optional<uint64_t> inline_tree(const FuncRecord& r) const {
    return funcdata_addr(r, kFuncdataInlTree);
  }
};

namespace {

// The runtime's moduledata for this table: the one whose first word points at the pclntab, found in
// .noptrdata (runtime.firstmoduledata; no symbol needed), as its words. Checked by its text start.
// Word indices: text 22; types, etypes 35, 36; gofunc 38; typelinks 42, 43 (go1.18/1.19); go1.20
// inserts covctr/ecovctr before `end`, moving the later ones by two.
std::optional<std::vector<uint64_t>> find_moduledata(const ElfFile& elf, uint64_t pclntab_addr,
                                                     uint32_t magic, uint64_t text_start) {
  if (magic == kMagic116) return std::nullopt;
  auto sec = elf.section(".noptrdata");
  if (!sec) return std::nullopt;
  auto data = elf.section_data(*sec);
  if (!data) return std::nullopt;
  Bytes b(*data);
  constexpr uint64_t kWords = 48;
  for (uint64_t off = 0; off + 8 * kWords <= b.size(); off += 8) {
    if (b.u(off, 8) != pclntab_addr || b.u(off + 8 * 22, 8) != text_start) continue;
    std::vector<uint64_t> words(kWords);
    for (uint64_t i = 0; i < kWords; ++i) words[i] = *b.u(off + 8 * i, 8);
    return words;
  }
  return std::nullopt;
}

}  // namespace

GoPclntab::GoPclntab(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
GoPclntab::GoPclntab(GoPclntab&&) noexcept = default;
GoPclntab& GoPclntab::operator=(GoPclntab&&) noexcept = default;
GoPclntab::~GoPclntab() = default;

Result<GoPclntab> GoPclntab::parse(std::span<const uint8_t> data, uint64_t section_addr) {
  std::vector<uint8_t> owned(data.begin(), data.end());
  const std::span<const uint8_t> bytes(owned);  // stays valid: the buffer moves, not the bytes
  return parse_in_place(bytes, section_addr, std::move(owned));
}

Result<GoPclntab> GoPclntab::parse_in_place(std::span<const uint8_t> data, uint64_t section_addr,
                                            std::vector<uint8_t> owned) {
  auto impl = std::make_unique<Impl>();
  impl->owned = std::move(owned);
  impl->data = data;
  impl->section_addr = section_addr;
  Impl& t = *impl;
  Bytes b = t.bytes();
  auto magic = b.u32(0);
  if (!magic) return fail(".gopclntab is too short for its header");
  t.magic = *magic;
  if (t.magic != kMagic116 && t.magic != kMagic118 && t.magic != kMagic120)
    return fail(".gopclntab has magic {:#x}, not one of Go 1.16+'s", t.magic);
  t.quantum = static_cast<uint8_t>(b.u(6, 1).value_or(0));
  t.ptr_size = static_cast<uint8_t>(b.u(7, 1).value_or(0));
  if (t.ptr_size != 8 || (t.quantum != 1 && t.quantum != 2 && t.quantum != 4))
    return fail(
        ".gopclntab is for a {}-byte pointer, {}-byte instruction machine; uscope reads "
        "x86-64's",
        t.ptr_size, t.quantum);
  auto word = [&](int i) { return b.u(8 + 8ull * static_cast<uint64_t>(i), 8); };
  const bool has_text_start = t.magic != kMagic116;
  auto nfunc = word(0);
  int k = has_text_start ? 3 : 2;
  auto text = has_text_start ? word(2) : std::optional<uint64_t>(0);
  auto fn = word(k), cu = word(k + 1), ft = word(k + 2), pc = word(k + 3), pl = word(k + 4);
  if (!nfunc || !text || !fn || !cu || !ft || !pc || !pl)
    return fail(".gopclntab is too short for its header");
  t.nfunc = *nfunc;
  t.text_start = *text;
  t.funcname_off = *fn;
  t.cu_off = *cu;
  t.filetab_off = *ft;
  t.pctab_off = *pc;
  t.pcln_off = *pl;
  for (uint64_t off : {t.funcname_off, t.cu_off, t.filetab_off, t.pctab_off, t.pcln_off})
    if (off >= b.size()) return fail(".gopclntab's header points past its end");
  // functab: nfunc+1 {entry, funcoff} pairs (uint32 each since go1.18, uintptr before).
  const uint64_t field = has_text_start ? 4 : 8;
  if (t.nfunc > b.size() / (2 * field) || t.pcln_off + (t.nfunc + 1) * 2 * field > b.size())
    return fail(".gopclntab lists {} functions, more than it has room for", t.nfunc);
  t.functions.reserve(t.nfunc);
  t.records.reserve(t.nfunc);
  for (uint64_t i = 0; i < t.nfunc; ++i) {
    uint64_t at = t.pcln_off + i * 2 * field;
    auto entry = b.u(at, static_cast<int>(field));
    auto func_off = b.u(at + field, static_cast<int>(field));
    auto next = b.u(at + 2 * field, static_cast<int>(field));
    if (!entry || !func_off || !next) return fail(".gopclntab's function table is truncated");
    FuncRecord r;
    r.entry = (has_text_start ? t.text_start : 0) + *entry;
    r.end = (has_text_start ? t.text_start : 0) + *next;
    r.func_off = *func_off;
    uint64_t f = t.pcln_off + r.func_off;
    // _func: entry (uint32 or uintptr), nameOff, args, deferreturn, pcsp, pcfile, pcln, npcdata,
    // cuOffset, [startLine], funcID, flag, _, nfuncdata.
    uint64_t p = f + (has_text_start ? 4 : 8);
    auto name_off = b.u32(p), pcsp = b.u32(p + 12), pcfile = b.u32(p + 16), pcln = b.u32(p + 20),
         npcdata = b.u32(p + 24), cu_offset = b.u32(p + 28);
    // ... funcID, flag, _, nfuncdata end the header in every layout.
    auto flag = b.u(f + t.func_header_size() - 3, 1);
    auto nfuncdata = b.u(f + t.func_header_size() - 1, 1);
    if (!name_off || !pcsp || !pcfile || !pcln || !npcdata || !cu_offset || !flag || !nfuncdata ||
        r.end < r.entry)
      return fail(".gopclntab's record of function {} is truncated", i);
    r.name_off = static_cast<int32_t>(*name_off);
    r.pcsp = *pcsp;
    r.pcfile = *pcfile;
    r.pcln = *pcln;
    r.npcdata = std::min<uint32_t>(*npcdata, 64);
    r.cu_offset = *cu_offset;
    r.nfuncdata = static_cast<uint8_t>(*nfuncdata);
    auto name = t.func_name_view(r.name_off);
    if (!name) return fail(".gopclntab's name of function {} is out of bounds", i);
    GoFunction g;
    g.name = *name;
    g.entry = r.entry;
    g.end = r.end;
    g.flag = static_cast<uint8_t>(*flag);
    t.functions.push_back(std::move(g));
    t.records.push_back(r);
  }
  // Sorted by entry in every binary the Go linker writes; a file that is not cannot be searched.
  for (size_t i = 1; i < t.functions.size(); ++i)
    if (t.functions[i].entry < t.functions[i - 1].entry)
      return fail(".gopclntab's functions are not sorted by address");
  return GoPclntab(std::move(impl));
}

Result<std::optional<GoPclntab>> GoPclntab::read(const ElfFile& elf) {
  auto sec = elf.section(".gopclntab");
  if (!sec) return std::optional<GoPclntab>{};
  auto data = elf.section_data(*sec);
  if (!data) return tl::unexpected(data.error());
  // 14 MB in a big Go program: parsed where libelf holds it, not copied.
  auto t = parse_in_place(*data, sec->addr, {});
  if (!t) return fail("{}: {}", elf.display_path(), t.error().message);
  Impl& impl = *t->impl_;
  if (auto md = find_moduledata(elf, sec->addr, impl.magic, impl.text_start)) {
    const size_t shift = impl.magic == kMagic120 ? 2 : 0;
    impl.module.types = (*md)[35 + shift];
    impl.module.etypes = (*md)[36 + shift];
    impl.gofunc = (*md)[38 + shift];
    impl.module.typelinks = (*md)[42 + shift];
    impl.module.ntypelinks = (*md)[43 + shift];
    if (impl.module.types > impl.module.etypes) impl.module = {};
  }
  // FUNCDATA points into the binary's read-only data: served from the file's bytes. The ElfFile
  // outlives the table in every user (both live in one StoredObject).
  impl.read_at = [&elf](uint64_t addr, uint64_t len) { return elf.allocated_bytes(addr, len); };
  return std::optional<GoPclntab>(std::move(*t));
}

uint64_t GoPclntab::text_start() const {
  return impl_->text_start;
}
const GoModuleData& GoPclntab::module() const {
  return impl_->module;
}
const std::vector<GoFunction>& GoPclntab::functions() const {
  return impl_->functions;
}

const GoFunction* GoPclntab::containing(uint64_t pc) const {
  const auto& fs = impl_->functions;
  auto it = std::upper_bound(fs.begin(), fs.end(), pc,
                             [](uint64_t v, const GoFunction& f) { return v < f.entry; });
  if (it == fs.begin()) return nullptr;
  --it;
  return pc < it->end ? &*it : nullptr;
}

std::vector<GoFrame> GoPclntab::frames_at(uint64_t pc) const {
  std::vector<GoFrame> out;
  const GoFunction* f = containing(pc);
  if (!f) return out;
  const Impl& t = *impl_;
  const FuncRecord& r = t.records[static_cast<size_t>(f - t.functions.data())];
  auto position = [&](uint64_t at, GoFrame& fr) {
    fr.file = t.file_of(r, t.pcvalue(r.pcfile, r.entry, at).value_or(-1));
    fr.line = t.pcvalue(r.pcln, r.entry, at).value_or(0);
  };
  // The runtime's own walk (runtime.Frames): the file and line at pc are the innermost inlined
  // function's; each inlined call's parentPc is a pc in its caller, where the walk continues.
  auto tree = t.inline_tree(r);
  auto table = t.pcdata(r, kPcdataInlTreeIndex);
  uint64_t at = pc;
  for (int depth = 0; tree && table && depth < kMaxInlineDepth; ++depth) {
    auto ix = t.pcvalue(*table, r.entry, at);
    if (!ix || *ix < 0) break;
    auto e = t.inlined_entry(r, *tree, *ix);
    if (!e || e->parent_pc < r.entry || e->parent_pc >= r.end) break;
    GoFrame fr;
    fr.function = e->function;
    position(at, fr);
    out.push_back(std::move(fr));
    at = e->parent_pc;
  }
  GoFrame outer;
  outer.function = f->name;
  position(at, outer);
  out.push_back(std::move(outer));
  return out;
}

std::vector<GoSpDelta> GoPclntab::sp_deltas(size_t index) const {
  std::vector<GoSpDelta> out;
  if (index >= impl_->records.size()) return out;
  const FuncRecord& r = impl_->records[index];
  impl_->pcranges(r.pcsp, r.entry, r.end, [&](uint64_t start, uint64_t end, int32_t delta) {
    out.push_back({start, end, delta});
  });
  return out;
}

const std::vector<GoInlinedCall>& GoPclntab::inlined_calls() const {
  if (!impl_->inlined) impl_->inlined = inlined_calls([](const std::string&) { return true; });
  return *impl_->inlined;
}

std::vector<GoInlinedCall> GoPclntab::inlined_calls(
    const std::function<bool(const std::string&)>& wanted) const {
  const Impl& t = *impl_;
  std::vector<GoInlinedCall> out;
  for (size_t i = 0; i < t.records.size(); ++i) {
    const FuncRecord& r = t.records[i];
    auto tree = t.inline_tree(r);
    auto table = t.pcdata(r, kPcdataInlTreeIndex);
    if (!tree || !table) continue;
    // The lowest pc of each inline tree entry, its own code or code inlined into it.
    std::map<int32_t, uint64_t> first_pc;
    std::map<int32_t, Impl::InlinedAt> entries;
    t.pcranges(*table, r.entry, r.end, [&](uint64_t start, uint64_t, int32_t ix) {
      uint64_t at = start;
      for (int depth = 0; ix >= 0 && depth < kMaxInlineDepth; ++depth) {
        // An entry counts only once it has been read: a corrupt one ends this walk.
        auto e = entries.find(ix);
        if (e == entries.end()) {
          auto got = t.inlined_entry(r, *tree, ix);
          if (!got || got->parent_pc < r.entry || got->parent_pc >= r.end) return;
          e = entries.emplace(ix, *got).first;
        }
        auto [it, added] = first_pc.emplace(ix, start);
        if (!added) it->second = std::min(it->second, start);
        at = e->second.parent_pc;
        auto parent = t.pcvalue(*table, r.entry, at);
        if (!parent || *parent == ix) return;
        ix = *parent;
      }
    });
    for (const auto& [ix, pc] : first_pc) {
      const auto& e = entries.find(ix)->second;  // first_pc only holds entries that were read
      if (!wanted(e.function)) continue;
      GoInlinedCall c;
      c.function = e.function;
      c.caller = t.functions[i].name;
      c.caller_entry = r.entry;
      c.pc = pc;
      c.call_file = t.file_of(r, t.pcvalue(r.pcfile, r.entry, e.parent_pc).value_or(-1));
      c.call_line = t.pcvalue(r.pcln, r.entry, e.parent_pc).value_or(0);
      c.depth = 1;
      for (uint64_t at = e.parent_pc; c.depth < kMaxInlineDepth; ++c.depth) {
        auto parent = t.pcvalue(*table, r.entry, at);
        if (!parent || *parent < 0) break;
        auto pe = entries.find(*parent);
        if (pe == entries.end()) break;
        at = pe->second.parent_pc;
      }
      out.push_back(std::move(c));
    }
  }
  return out;
}

}  // namespace uscope
