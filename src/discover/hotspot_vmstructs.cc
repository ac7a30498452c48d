#include "discover/hotspot_vmstructs.h"

#include <cerrno>
#include <cstring>
#include <unordered_map>

namespace uscope {
namespace {

constexpr size_t kMaxEntries = 100'000;
constexpr size_t kMaxString = 1024;
constexpr uint64_t kMaxStride = 4096;
constexpr uint64_t kPage = 4096;

// C strings of the tables, read once each: most entries share their type name's literal.
class StringReader {
 public:
  explicit StringReader(const TargetMemory& mem) : mem_(mem) {}

  // nullopt when unreadable or longer than kMaxString.
  std::optional<std::string> read(uint64_t addr) {
    if (auto it = cache_.find(addr); it != cache_.end()) return it->second;
    std::string s;
    uint8_t chunk[64];
    uint64_t at = addr;
    while (s.size() <= kMaxString) {
      // Never across a page: the page after the string's may be unmapped.
      size_t n = std::min<uint64_t>(sizeof chunk, kPage - at % kPage);
      if (!mem_(at, {chunk, n})) return std::nullopt;
      auto* end = static_cast<uint8_t*>(std::memchr(chunk, 0, n));
      if (end) {
        s.append(reinterpret_cast<const char*>(chunk), end - chunk);
        if (s.size() > kMaxString) return std::nullopt;
        cache_.emplace(addr, s);
        return s;
      }
      s.append(reinterpret_cast<const char*>(chunk), n);
      at += n;
    }
    return std::nullopt;
  }

 private:
  const TargetMemory& mem_;
  std::unordered_map<uint64_t, std::string> cache_;
};

// One table's layout: its entries' stride and where each member is, from the layout globals.
struct TableLayout {
  const char* table;  // "gHotSpotVMStructs"
  uint64_t stride = 0;
  std::map<std::string, uint64_t> member;  // "TypeName" -> offset
};

Result<uint64_t> read_u64(const TargetMemory& mem, uint64_t addr, std::string_view what) {
  uint64_t v = 0;
  if (addr == 0) return fail("libjvm.so exports no {}", what);
  if (!mem(addr, {reinterpret_cast<uint8_t*>(&v), sizeof v}))
    return fail("cannot read {} at {:#x}", what, addr);
  return v;
}

// `entry` is the table's name in the layout globals ("Struct" for gHotSpotVMStructEntry...);
// `members` the members read, with their widths.
Result<TableLayout> table_layout(const VmStructsSymbols& symbols, const TargetMemory& mem,
                                 const char* table, std::string_view entry,
                                 std::initializer_list<std::pair<const char*, uint64_t>> members) {
  TableLayout l{table, 0, {}};
  auto global = [&](std::string_view suffix) -> Result<uint64_t> {
    std::string name = fmt::format("gHotSpotVM{}Entry{}", entry, suffix);
    auto it = symbols.layout.find(name);
    return read_u64(mem, it == symbols.layout.end() ? 0 : it->second, name);
  };
  auto stride = global("ArrayStride");
  if (!stride) return tl::unexpected(stride.error());
  if (*stride == 0)
    return fail_errno(
        EAGAIN,
        "gHotSpotVM{}EntryArrayStride reads 0: the JVM has not initialized its VMStructs yet "
        "(it does early in its start)",
        entry);
  if (*stride > kMaxStride || *stride % 4 != 0)
    return fail("gHotSpotVM{}EntryArrayStride reads {}, not the size of a table entry", entry,
                *stride);
  l.stride = *stride;
  for (const auto& [member, width] : members) {
    auto off = global(fmt::format("{}Offset", member));
    if (!off) return tl::unexpected(off.error());
    if (*off > l.stride || width > l.stride - *off)  // not *off + width: it may wrap
      return fail("gHotSpotVM{}Entry{}Offset reads {}, past its entry of {} bytes", entry, member,
                  *off, l.stride);
    l.member[member] = *off;
  }
  return l;
}

// Calls `each(entry bytes, index)` for every entry of the table whose address the global
// `table_symbol` holds, until the one whose `end_member` (a string pointer) is null.
template <class Each>
Result<void> for_each_entry(const TableLayout& l, uint64_t table_symbol, const TargetMemory& mem,
                            const std::string& end_member, Each&& each) {
  auto base = read_u64(mem, table_symbol, l.table);
  if (!base) return tl::unexpected(base.error());
  if (*base == 0) return fail("{} reads null: the JVM has no table there", l.table);
  std::vector<uint8_t> entry(l.stride);
  uint64_t end_off = l.member.at(end_member);
  for (size_t i = 0; i < kMaxEntries; ++i) {
    if (!mem(*base + i * l.stride, entry))
      return fail("{}: cannot read entry {} at {:#x}", l.table, i, *base + i * l.stride);
    uint64_t name = 0;
    std::memcpy(&name, entry.data() + end_off, 8);
    if (name == 0) return {};
    if (auto r = each(std::span<const uint8_t>(entry), i); !r) return r;
  }
  return fail("{}: no end entry in its first {} entries", l.table, kMaxEntries);
}

template <class T>
T member_value(std::span<const uint8_t> entry, const TableLayout& l, const char* member) {
  T v{};
  std::memcpy(&v, entry.data() + l.member.at(member), sizeof v);
  return v;
}

// A string member: "" for a null pointer when `nullable`.
Result<std::string> member_string(std::span<const uint8_t> entry, const TableLayout& l,
                                  const char* member, size_t index, StringReader& strings,
                                  bool nullable) {
  auto p = member_value<uint64_t>(entry, l, member);
  if (p == 0) {
    if (nullable) return std::string();
    return fail("{}: entry {} has no {}", l.table, index, member);
  }
  auto s = strings.read(p);
  if (!s)
    return fail("{}: entry {}'s {} at {:#x} is unreadable or longer than {} bytes", l.table, index,
                member, p, kMaxString);
  return *s;
}

}  // namespace

HotspotVmStructs::HotspotVmStructs(std::vector<VmStructField> fields,
                                   std::vector<VmStructType> types,
                                   std::map<std::string, int64_t> int_constants,
                                   std::map<std::string, int64_t> long_constants)
    : fields_(std::move(fields)),
      types_(std::move(types)),
      ints_(std::move(int_constants)),
      longs_(std::move(long_constants)) {
  // The first entry listed for a name wins.
  for (size_t i = 0; i < fields_.size(); ++i)
    by_name_.emplace(std::pair{fields_[i].type, fields_[i].field}, i);
  for (size_t i = 0; i < types_.size(); ++i) types_by_name_.emplace(types_[i].name, i);
}

const VmStructField* HotspotVmStructs::find_field(std::string_view type,
                                                  std::string_view field) const {
  // A field is listed under the class that declares it: JavaThread's _osthread is Thread's.
  // Bounded: a superclass chain that loops ends.
  std::string t(type);
  for (int depth = 0; depth < 32; ++depth) {
    auto it = by_name_.find(std::pair{t, std::string(field)});
    if (it != by_name_.end()) return &fields_[it->second];
    const VmStructType* info = find_type(t);
    if (!info || info->superclass.empty()) return nullptr;
    t = info->superclass;
  }
  return nullptr;
}

const VmStructType* HotspotVmStructs::find_type(std::string_view type) const {
  auto it = types_by_name_.find(type);
  return it == types_by_name_.end() ? nullptr : &types_[it->second];
}

std::optional<uint64_t> HotspotVmStructs::offset(std::string_view type,
                                                 std::string_view field) const {
  const auto* f = find_field(type, field);
  if (!f || f->is_static) return std::nullopt;
  return f->offset;
}

std::optional<uint64_t> HotspotVmStructs::address(std::string_view type,
                                                  std::string_view field) const {
  const auto* f = find_field(type, field);
  if (!f || !f->is_static) return std::nullopt;
  return f->address;
}

std::optional<uint64_t> HotspotVmStructs::type_size(std::string_view type) const {
  const auto* t = find_type(type);
  if (!t) return std::nullopt;
  return t->size;
}

std::optional<int64_t> HotspotVmStructs::int_constant(std::string_view name) const {
  auto it = ints_.find(std::string(name));
  if (it == ints_.end()) return std::nullopt;
  return it->second;
}

std::optional<int64_t> HotspotVmStructs::long_constant(std::string_view name) const {
  auto it = longs_.find(std::string(name));
  if (it == longs_.end()) return std::nullopt;
  return it->second;
}

Result<uint64_t> HotspotVmStructs::need_offset(std::string_view type,
                                               std::string_view field) const {
  if (auto o = offset(type, field)) return *o;
  return fail("libjvm.so lists no {}::{}", type, field);
}

Result<uint64_t> HotspotVmStructs::need_address(std::string_view type,
                                                std::string_view field) const {
  if (auto a = address(type, field)) return *a;
  return fail("libjvm.so lists no static {}::{}", type, field);
}

Result<uint64_t> HotspotVmStructs::need_type_size(std::string_view type) const {
  if (auto s = type_size(type)) return *s;
  return fail("libjvm.so lists no type {}", type);
}

Result<int64_t> HotspotVmStructs::need_int_constant(std::string_view name) const {
  if (auto v = int_constant(name)) return *v;
  return fail("libjvm.so lists no constant {}", name);
}

Result<HotspotVmStructs> read_vmstructs(const VmStructsSymbols& symbols,
                                        const TargetMemory& target) {
  // The tables and their strings lie in a few hundred pages of libjvm.so's data: each is read
  // once (a few hundred reads of the process, not one per entry and string).
  TargetMemory mem = page_cached(target);
  StringReader strings(mem);

  auto sl = table_layout(symbols, mem, "gHotSpotVMStructs", "Struct",
                         {{"TypeName", 8},
                          {"FieldName", 8},
                          {"TypeString", 8},
                          {"IsStatic", 4},
                          {"Offset", 8},
                          {"Address", 8}});
  if (!sl) return tl::unexpected(sl.error());
  std::vector<VmStructField> fields;
  auto fr = for_each_entry(*sl, symbols.structs, mem, "TypeName",
                           [&](std::span<const uint8_t> e, size_t i) -> Result<void> {
                             VmStructField f;
                             auto type = member_string(e, *sl, "TypeName", i, strings, false);
                             if (!type) return tl::unexpected(type.error());
                             // An entry with no field name marks the end in some builds.
                             auto field = member_string(e, *sl, "FieldName", i, strings, true);
                             if (!field) return tl::unexpected(field.error());
                             auto ts = member_string(e, *sl, "TypeString", i, strings, true);
                             if (!ts) return tl::unexpected(ts.error());
                             f.type = std::move(*type);
                             f.field = std::move(*field);
                             f.type_string = std::move(*ts);
                             f.is_static = member_value<int32_t>(e, *sl, "IsStatic") != 0;
                             f.offset = member_value<uint64_t>(e, *sl, "Offset");
                             f.address = member_value<uint64_t>(e, *sl, "Address");
                             fields.push_back(std::move(f));
                             return {};
                           });
  if (!fr) return tl::unexpected(fr.error());

  auto tl_ = table_layout(symbols, mem, "gHotSpotVMTypes", "Type",
                          {{"TypeName", 8},
                           {"SuperclassName", 8},
                           {"IsOopType", 4},
                           {"IsIntegerType", 4},
                           {"IsUnsigned", 4},
                           {"Size", 8}});
  if (!tl_) return tl::unexpected(tl_.error());
  std::vector<VmStructType> types;
  auto tr = for_each_entry(*tl_, symbols.types, mem, "TypeName",
                           [&](std::span<const uint8_t> e, size_t i) -> Result<void> {
                             VmStructType t;
                             auto name = member_string(e, *tl_, "TypeName", i, strings, false);
                             if (!name) return tl::unexpected(name.error());
                             auto super =
                                 member_string(e, *tl_, "SuperclassName", i, strings, true);
                             if (!super) return tl::unexpected(super.error());
                             t.name = std::move(*name);
                             t.superclass = std::move(*super);
                             t.is_oop = member_value<int32_t>(e, *tl_, "IsOopType") != 0;
                             t.is_integer = member_value<int32_t>(e, *tl_, "IsIntegerType") != 0;
                             t.is_unsigned = member_value<int32_t>(e, *tl_, "IsUnsigned") != 0;
                             t.size = member_value<uint64_t>(e, *tl_, "Size");
                             types.push_back(std::move(t));
                             return {};
                           });
  if (!tr) return tl::unexpected(tr.error());

  std::map<std::string, int64_t> ints, longs;
  auto constants = [&](const char* table, std::string_view entry, uint64_t symbol, uint64_t width,
                       std::map<std::string, int64_t>& out) -> Result<void> {
    auto l = table_layout(symbols, mem, table, entry, {{"Name", 8}, {"Value", width}});
    if (!l) return tl::unexpected(l.error());
    return for_each_entry(*l, symbol, mem, "Name",
                          [&](std::span<const uint8_t> e, size_t i) -> Result<void> {
                            auto name = member_string(e, *l, "Name", i, strings, false);
                            if (!name) return tl::unexpected(name.error());
                            int64_t v = width == 4 ? member_value<int32_t>(e, *l, "Value")
                                                   : member_value<int64_t>(e, *l, "Value");
                            out.emplace(std::move(*name), v);
                            return {};
                          });
  };
  if (auto r = constants("gHotSpotVMIntConstants", "IntConstant", symbols.int_constants, 4, ints);
      !r)
    return tl::unexpected(r.error());
  if (auto r =
          constants("gHotSpotVMLongConstants", "LongConstant", symbols.long_constants, 8, longs);
      !r)
    return tl::unexpected(r.error());
  return HotspotVmStructs(std::move(fields), std::move(types), std::move(ints), std::move(longs));
}

}  // namespace uscope
