// Go type layouts from DWARF, from the runtime's type descriptors, or from uscope's own table.
// Descriptor layout (runtime/type.go, go1.18-1.20, amd64): _type {size, ptrdata uintptr; hash
// uint32; tflag, align, fieldAlign, kind uint8; equal, gcdata pointers; str nameOff; ptrToThis
// typeOff} (48 bytes), then per kind: pointer/slice/array/chan {elem *_type, ...}; struct {pkgPath
// name; fields []structField {name name; typ *_type; offset uintptr}}; interface {pkgPath name;
// methods []imethod}; map {key, elem, bucket *_type; hasher; sizes}; func {in, out uint16}; an
// uncommonType {pkgPath nameOff, ...} follows when tflag has tflagUncommon. A name is a flags
// byte, a varint length and the bytes. Every read is bounded and checked: the bytes come from
// the traced binary.
#include "discover/go_types.h"

#include <algorithm>
#include <cstring>
#include <deque>
#include <map>
#include <set>

#include "discover/gopclntab.h"
#include "util/names.h"

namespace uscope {

namespace {

constexpr uint8_t kTflagUncommon = 1;
constexpr uint8_t kTflagExtraStar = 2;
constexpr size_t kMaxTypes = 200000;  // bounds the walk over a hostile descriptor graph
constexpr uint64_t kMaxFields = 4096;

struct Descriptor {
  uint64_t addr = 0;
  std::string name;  // full Go name: "net/http.Request", "*net/http.Request", "[]uint8"
  GoKind kind = GoKind::Invalid;
  uint64_t size = 0;
  uint64_t elem = 0;  // pointer/slice/array/chan: the element's descriptor
  struct Field {
    std::string name;
    uint64_t type = 0;
    uint64_t offset = 0;
  };
  std::vector<Field> fields;  // struct
  bool no_methods = false;    // interface: interface {} by another name
};

// uscope's own table, the last resort: the fields `uscope http` reads, as go1.19's DWARF and type
// descriptors give them on amd64 (checked by tests against both). Other versions are not listed:
// an offset that is not known is an error, never a guess.
struct TableField {
  const char* type;
  const char* field;
  uint64_t offset;
  const char* field_type;
  GoKind kind;
};
constexpr TableField kGo119Fields[] = {
    {"net/http.Request", "Method", 0, "string", GoKind::String},
    {"net/http.Request", "URL", 16, "*net/url.URL", GoKind::Pointer},
    {"net/http.Request", "Host", 128, "string", GoKind::String},
    {"net/url.URL", "Scheme", 0, "string", GoKind::String},
    {"net/url.URL", "Host", 40, "string", GoKind::String},
    {"net/url.URL", "Path", 56, "string", GoKind::String},
    {"net/http.Response", "Status", 0, "string", GoKind::String},
    {"net/http.Response", "StatusCode", 16, "int", GoKind::Int},
    {"net/http.response", "req", 8, "*net/http.Request", GoKind::Pointer},
    {"net/http.response", "status", 120, "int", GoKind::Int},
    {"net/http.Request", "ProtoMajor", 40, "int", GoKind::Int},
    {"net/http.Request", "ProtoMinor", 48, "int", GoKind::Int},
    {"net/http.http2responseWriter", "rws", 0, "*net/http.http2responseWriterState",
     GoKind::Pointer},
    {"net/http.http2responseWriterState", "req", 8, "*net/http.Request", GoKind::Pointer},
    {"net/http.http2responseWriterState", "status", 80, "int", GoKind::Int},
    // uscope stat's census of live goroutines (runtime2.go of go1.19).
    {"runtime.g", "atomicstatus", 144, "uint32", GoKind::Uint32},
    {"runtime.g", "startpc", 312, "uintptr", GoKind::Uintptr},
    // The off-CPU profile's goroutines parked before it: why, and where (their saved registers).
    {"runtime.g", "waitreason", 176, "runtime.waitReason", GoKind::Uint8},
    {"runtime.g", "sched", 56, "runtime.gobuf", GoKind::Struct},
    {"runtime.gobuf", "sp", 0, "uintptr", GoKind::Uintptr},
    {"runtime.gobuf", "pc", 8, "uintptr", GoKind::Uintptr},
    {"runtime.gobuf", "bp", 48, "uintptr", GoKind::Uintptr},
};

uint64_t table_size(GoKind kind) {
  switch (kind) {
    case GoKind::String:
      return 16;
    case GoKind::Uint32:
      return 4;
    case GoKind::Uint8:
      return 1;
    case GoKind::Struct:
      return 56;  // the table's one struct field: runtime.gobuf
    default:
      return 8;
  }
}

std::string without_tag(std::string_view name) {
  for (std::string_view prefix : {"struct ", "union "})
    if (name.starts_with(prefix)) name.remove_prefix(prefix.size());
  return std::string(name);
}

GoKind integer_kind(const DwarfType& t) {
  if (t.name == "bool") return GoKind::Bool;
  if (t.name == "uintptr") return GoKind::Uintptr;
  switch (t.size) {
    case 1:
      return t.is_signed ? GoKind::Int8 : GoKind::Uint8;
    case 2:
      return t.is_signed ? GoKind::Int16 : GoKind::Uint16;
    case 4:
      return t.is_signed ? GoKind::Int32 : GoKind::Uint32;
    default:
      return t.is_signed ? GoKind::Int : GoKind::Uint;
  }
}

}  // namespace

GoType go_type_of(const DwarfType& t) {
  GoType g{without_tag(t.name), GoKind::Invalid, t.size, "", GoTypeSource::Dwarf};
  switch (t.kind) {
    case DwarfType::Kind::Pointer: {
      // "struct net/url.URL *" is *net/url.URL; "char **" is two pointers to char.
      const size_t stars = static_cast<size_t>(std::count(t.name.begin(), t.name.end(), '*'));
      const std::string base = without_tag(t.base_name);
      g.size = 8;
      if (base == "void" || base.empty()) {
        g.kind = GoKind::UnsafePointer;
        g.name = "unsafe.Pointer";
        break;
      }
      g.kind = GoKind::Pointer;
      g.elem = std::string(stars > 0 ? stars - 1 : 0, '*') + base;
      g.name = "*" + g.elem;
      break;
    }
    case DwarfType::Kind::Integer:
      g.kind = integer_kind(t);
      break;
    case DwarfType::Kind::Float:
      g.kind = t.size == 4 ? GoKind::Float32 : GoKind::Float64;
      break;
    case DwarfType::Kind::Function:
      g.kind = GoKind::Func;
      g.size = 8;
      break;
    case DwarfType::Kind::Array: {
      // "int [4]" is [4]int.
      g.kind = GoKind::Array;
      const size_t bracket = g.name.rfind(" [");
      if (bracket != std::string::npos && t.count) {
        g.elem = without_tag(std::string_view(g.name).substr(0, bracket));
        g.name = "[" + std::to_string(t.count) + "]" + g.elem;
      }
      break;
    }
    case DwarfType::Kind::Struct:
      if (g.name == "string") {
        g.kind = GoKind::String;
      } else if (g.name.starts_with("[]")) {
        g.kind = GoKind::Slice;
        g.elem = g.name.substr(2);
      } else if (g.name == "runtime.eface" || g.name.starts_with("interface {")) {
        g.kind = GoKind::Interface;
        g.name = "interface {}";
      } else if (g.name == "runtime.iface" || g.name == "error") {
        g.kind = GoKind::Interface;  // which interface: the typedef DWARF named is peeled off
        g.name = "interface";
      } else {
        g.kind = GoKind::Struct;
      }
      break;
    default:
      break;
  }
  return g;
}

std::vector<GoField> go_table_fields(const GoBuildInfo& info, std::string_view struct_type) {
  std::vector<GoField> out;
  if (info.major != 1 || info.minor != 19) return out;
  for (const auto& f : kGo119Fields)
    if (struct_type == f.type)
      out.push_back(
          {f.field, f.offset,
           GoType{f.field_type, f.kind, table_size(f.kind), "", GoTypeSource::VersionTable},
           GoTypeSource::VersionTable});
  return out;
}

const char* go_kind_name(GoKind kind) {
  static constexpr const char* kNames[] = {
      "invalid", "bool",      "int",        "int8",   "int16",  "int32",         "int64",
      "uint",    "uint8",     "uint16",     "uint32", "uint64", "uintptr",       "float32",
      "float64", "complex64", "complex128", "array",  "chan",   "func",          "interface",
      "map",     "ptr",       "slice",      "string", "struct", "unsafe.Pointer"};
  auto i = static_cast<size_t>(kind);
  return i < std::size(kNames) ? kNames[i] : "invalid";
}

const char* go_type_source_name(GoTypeSource s) {
  switch (s) {
    case GoTypeSource::Dwarf:
      return "DWARF";
    case GoTypeSource::TypeDescriptor:
      return "the runtime type descriptor";
    case GoTypeSource::VersionTable:
      return "uscope's table for this Go version";
    case GoTypeSource::Declared:
      return "the declared list";
  }
  return "?";
}

struct GoTypes::Impl {
  const ElfFile& elf;
  DwarfTypes* dwarf = nullptr;
  std::optional<GoBuildInfo> info;
  GoModuleData module;
  bool indexed = false;
  std::map<uint64_t, Descriptor> by_addr;
  std::map<std::string, uint64_t> by_name;

  std::optional<uint64_t> word(uint64_t addr, int size = 8) const {
    auto b = elf.allocated_bytes(addr, static_cast<uint64_t>(size));
    if (!b) return std::nullopt;
    uint64_t v = 0;
    std::memcpy(&v, b->data(), static_cast<size_t>(size));
    return v;
  }

  // A name at `addr`: flags byte, varint length, bytes.
  std::optional<std::string> name_at(uint64_t addr) const {
    uint64_t len = 0;
    uint64_t at = addr + 1;
    for (int shift = 0; shift < 21; shift += 7) {
      auto c = word(at++, 1);
      if (!c) return std::nullopt;
      len |= (*c & 0x7f) << shift;
      if (!(*c & 0x80)) break;
    }
    if (len > 4096) return std::nullopt;
    auto b = elf.allocated_bytes(at, len);
    if (!b) return std::nullopt;
    return std::string(reinterpret_cast<const char*>(b->data()), b->size());
  }

  std::optional<Descriptor> decode(uint64_t addr) const {
    if (addr < module.types || addr >= module.etypes) return std::nullopt;
    auto size = word(addr), tflag = word(addr + 20, 1), kind = word(addr + 23, 1),
         str = word(addr + 40, 4);
    if (!size || !tflag || !kind || !str) return std::nullopt;
    Descriptor d;
    d.addr = addr;
    d.size = *size;
    d.kind = static_cast<GoKind>(*kind & 31);
    auto name = name_at(module.types + static_cast<uint32_t>(*str));
    if (!name) return std::nullopt;
    if ((*tflag & kTflagExtraStar) && !name->empty()) name->erase(0, 1);
    d.name = std::move(*name);
    uint64_t extra = 48;  // where the kind's own fields start
    switch (d.kind) {
      case GoKind::Pointer:
      case GoKind::Slice:
      case GoKind::Array:
      case GoKind::Chan:
        d.elem = word(addr + 48).value_or(0);
        extra += d.kind == GoKind::Array ? 24 : (d.kind == GoKind::Chan ? 16 : 8);
        break;
      case GoKind::Struct: {
        auto fields = word(addr + 56), n = word(addr + 64);
        if (!fields || !n || *n > kMaxFields) return std::nullopt;
        for (uint64_t i = 0; i < *n; ++i) {
          auto fname = word(*fields + 24 * i), ftype = word(*fields + 24 * i + 8),
               off = word(*fields + 24 * i + 16);
          if (!fname || !ftype || !off) return std::nullopt;
          auto n2 = name_at(*fname);
          if (!n2) return std::nullopt;
          d.fields.push_back({std::move(*n2), *ftype, *off});
        }
        extra += 32;
        break;
      }
      case GoKind::Interface:
        d.no_methods = word(addr + 64).value_or(1) == 0;  // len(methods)
        extra += 32;                                      // pkgPath name, methods []imethod
        break;
      case GoKind::Map:
        extra += 40;  // key, elem, bucket *_type; hasher; four sizes and flags
        break;
      case GoKind::Func:
        extra += 8;  // inCount, outCount uint16, padded
        break;
      default:
        break;  // a named integer, string, ...: uncommonType right after _type
    }
    // A named type says its package path: "http.Request" is "net/http.Request".
    if ((*tflag & kTflagUncommon) && extra) {
      auto pkg = word(addr + extra, 4);
      auto dot = d.name.find('.');
      if (pkg && *pkg && dot != std::string::npos && d.name[0] != '*' && d.name[0] != '[') {
        if (auto path = name_at(module.types + static_cast<uint32_t>(*pkg)); path && !path->empty())
          d.name = *path + d.name.substr(dot);
      }
    }
    return d;
  }

  // Every descriptor reachable from the typelinks through elements and fields, once.
  void index() {
    if (indexed) return;
    indexed = true;
    if (!module.types || !module.ntypelinks || module.ntypelinks > kMaxTypes) return;
    std::deque<uint64_t> todo;
    for (uint64_t i = 0; i < module.ntypelinks; ++i)
      if (auto off = word(module.typelinks + 4 * i, 4))
        todo.push_back(module.types + static_cast<uint32_t>(*off));
    while (!todo.empty() && by_addr.size() < kMaxTypes) {
      uint64_t at = todo.front();
      todo.pop_front();
      if (by_addr.count(at)) continue;
      auto d = decode(at);
      if (!d) continue;
      if (d->elem) todo.push_back(d->elem);
      for (const auto& f : d->fields) todo.push_back(f.type);
      by_name.emplace(d->name, at);
      by_addr.emplace(at, std::move(*d));
    }
  }

  const Descriptor* descriptor(std::string_view name) {
    index();
    auto it = by_name.find(std::string(name));
    return it == by_name.end() ? nullptr : &by_addr.at(it->second);
  }

  // The full Go name of the type at `addr`: a pointer's or slice's own name carries only the
  // package name of its element ("*url.URL"), so those are rebuilt from the element.
  std::string name_of(uint64_t addr, int depth = 0) const {
    auto it = by_addr.find(addr);
    if (it == by_addr.end()) return "?";
    const Descriptor& d = it->second;
    if (d.elem && depth < 8) {
      if (d.kind == GoKind::Pointer) return "*" + name_of(d.elem, depth + 1);
      if (d.kind == GoKind::Slice) return "[]" + name_of(d.elem, depth + 1);
    }
    return d.name;
  }

  GoType from_descriptor(const Descriptor& d) const {
    // A value of an interface type without methods starts with its type, not an itab: it is
    // named as Go names such values, interface {}.
    return {d.no_methods ? "interface {}" : name_of(d.addr), d.kind, d.size,
            d.elem ? name_of(d.elem) : "", GoTypeSource::TypeDescriptor};
  }
};

GoTypes::GoTypes(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
GoTypes::~GoTypes() = default;

Result<std::unique_ptr<GoTypes>> GoTypes::open(const ElfFile& elf, DwarfTypes* dwarf,
                                               const GoBuildInfo* info) {
  auto table = GoPclntab::read(elf);
  if (!table) return tl::unexpected(table.error());
  return open(elf, dwarf, info, *table ? &**table : nullptr);
}

Result<std::unique_ptr<GoTypes>> GoTypes::open(const ElfFile& elf, DwarfTypes* dwarf,
                                               const GoBuildInfo* info, const GoPclntab* table) {
  auto impl = std::make_unique<Impl>(Impl{elf, dwarf, {}, {}, false, {}, {}});
  if (info) impl->info = *info;
  if (table) impl->module = table->module();
  return std::unique_ptr<GoTypes>(new GoTypes(std::move(impl)));
}

Result<GoType> GoTypes::type(std::string_view name) {
  Impl& t = *impl_;
  if (t.dwarf && t.dwarf->has_dwarf()) {
    auto d = t.dwarf->find_type(name);
    if (d && *d) {
      GoType g = go_type_of(**d);
      // DWARF's typedef (an interface's own name) is peeled off; interface {} stays, as what
      // tells an interface value that starts with its type from one that starts with an itab.
      if (g.name != "interface {}") g.name = std::string(name);
      return g;
    }
  }
  if (const Descriptor* d = t.descriptor(name)) return t.from_descriptor(*d);
  if (name.starts_with("*")) {
    if (const Descriptor* d = t.descriptor(name.substr(1)))
      return GoType{std::string(name), GoKind::Pointer, 8, d->name, GoTypeSource::TypeDescriptor};
  }
  return fail("no Go type '{}' in {}: not in its DWARF{} nor among its runtime type descriptors",
              name, t.elf.display_path(), t.dwarf && t.dwarf->has_dwarf() ? "" : " (it has none)");
}

Result<std::vector<GoField>> GoTypes::fields(std::string_view struct_type) {
  Impl& t = *impl_;
  std::string_view name = struct_type;
  while (name.starts_with("*")) name.remove_prefix(1);
  std::vector<GoField> out;
  if (t.dwarf && t.dwarf->has_dwarf()) {
    auto d = t.dwarf->find_type(name);
    if (d && *d && (*d)->kind == DwarfType::Kind::Struct) {
      auto members = t.dwarf->members((*d)->ref);
      if (members) {
        for (const auto& m : *members)
          out.push_back({m.name, m.offset, go_type_of(m.type), GoTypeSource::Dwarf});
        return out;
      }
    }
  }
  if (const Descriptor* d = t.descriptor(name); d && d->kind == GoKind::Struct) {
    for (const auto& f : d->fields) {
      auto ft = t.by_addr.find(f.type);
      GoType type = ft == t.by_addr.end()
                        ? GoType{"?", GoKind::Invalid, 0, "", GoTypeSource::TypeDescriptor}
                        : t.from_descriptor(ft->second);
      out.push_back({f.name, f.offset, std::move(type), GoTypeSource::TypeDescriptor});
    }
    return out;
  }
  if (t.info) out = go_table_fields(*t.info, name);
  if (!out.empty()) return out;
  return fail(
      "no layout of Go type '{}' in {}: {}, no runtime type descriptor of it{}; a build with "
      "DWARF (without -ldflags=-w) would have it",
      name, t.elf.display_path(),
      t.dwarf && t.dwarf->has_dwarf() ? "its DWARF does not describe it" : "it has no DWARF",
      t.info ? ", and uscope's table does not list it for " + t.info->version : "");
}

Result<GoField> GoTypes::field(std::string_view struct_type, std::string_view field) {
  auto all = fields(struct_type);
  if (!all) return tl::unexpected(all.error());
  std::vector<std::string> names;
  for (const auto& f : *all) {
    if (f.name == field) return f;
    names.push_back(f.name);
  }
  auto close = closest_names(std::string(field), names);
  return fail("Go type '{}' has no field '{}'{}{}", struct_type, field,
              close.empty() ? "" : "; closest: ", join(close));
}

std::optional<std::string> GoTypes::type_name_at(uint64_t addr) {
  Impl& t = *impl_;
  t.index();
  if (auto it = t.by_addr.find(addr); it != t.by_addr.end()) return it->second.name;
  if (auto d = t.decode(addr)) return d->name;
  return std::nullopt;
}

}  // namespace uscope
