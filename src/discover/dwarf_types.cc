// DWARF types and parameters through libdw. Every walk of the type graph is bounded (depth and
// steps), since the DWARF comes from the file being probed and a crafted one can make chains
// cyclic or deep; libdw itself bounds typedef peeling.
#include "discover/dwarf_types.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <fcntl.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>

#include "discover/sysv_abi.h"
#include "util/unique_fd.h"

namespace uscope {

namespace {

// Deeper pointer chains or nesting than this are not C a person wrote; the bound is what keeps a
// pointer-to-itself DIE from looping.
constexpr int kMaxTypeDepth = 16;
// Namespaces/classes holding function or type definitions.
constexpr int kMaxScopeDepth = 32;
// Anonymous struct/union members searched for one name: a DIE listing itself twice as an
// anonymous member would otherwise branch 2^depth ways.
constexpr int kMaxMemberScopes = 256;

std::string dwarf_message() {
  const char* m = dwarf_errmsg(-1);
  return m ? m : "unknown libdw error";
}

std::string attr_string(Dwarf_Die* die, unsigned name) {
  Dwarf_Attribute attr;
  if (!dwarf_attr_integrate(die, name, &attr)) return {};
  const char* s = dwarf_formstring(&attr);
  return s ? s : "";
}

bool attr_flag(Dwarf_Die* die, unsigned name) {
  bool flag = false;
  Dwarf_Attribute attr;
  if (dwarf_attr_integrate(die, name, &attr) && dwarf_formflag(&attr, &flag) == 0) return flag;
  return false;
}

std::optional<Dwarf_Word> attr_udata(Dwarf_Die* die, unsigned name) {
  Dwarf_Attribute attr;
  Dwarf_Word v;
  if (dwarf_attr_integrate(die, name, &attr) && dwarf_formudata(&attr, &v) == 0) return v;
  return std::nullopt;
}

// The DIE DW_AT_type points at; nullopt for none (void).
std::optional<Dwarf_Die> type_die(Dwarf_Die* die) {
  Dwarf_Attribute attr;
  Dwarf_Die out;
  if (!dwarf_attr_integrate(die, DW_AT_type, &attr)) return std::nullopt;
  if (!dwarf_formref_die(&attr, &out)) return std::nullopt;
  return out;
}

bool is_function_scope(int tag) {
  return tag == DW_TAG_namespace || tag == DW_TAG_class_type || tag == DW_TAG_structure_type ||
         tag == DW_TAG_union_type;
}

bool is_named_type(int tag) {
  return tag == DW_TAG_structure_type || tag == DW_TAG_class_type || tag == DW_TAG_union_type ||
         tag == DW_TAG_enumeration_type || tag == DW_TAG_typedef || tag == DW_TAG_base_type;
}

std::string tag_keyword(int tag) {
  switch (tag) {
    case DW_TAG_structure_type:
      return "struct";
    case DW_TAG_class_type:
      return "class";
    case DW_TAG_union_type:
      return "union";
    case DW_TAG_enumeration_type:
      return "enum";
    default:
      return {};
  }
}

// The lowest address of a function DIE: low_pc, or the first range of DW_AT_ranges (a function
// split into hot and cold parts starts at its first range).
// The pieces of a variable's location at `pc` (its DW_AT_location, an expression or a list): the
// forms Go's compiler emits for parameters, registers with DW_OP_piece, or a frame slot. Anything
// else gives no pieces (the caller then cannot read the value by location).
std::vector<DwarfPiece> pieces_at(Dwarf_Die* var, Dwarf_Addr pc) {
  std::vector<DwarfPiece> out;
  Dwarf_Attribute attr;
  if (!dwarf_attr(var, DW_AT_location, &attr)) return out;
  Dwarf_Op* ops = nullptr;
  size_t n = 0;
  if (dwarf_getlocation_addr(&attr, pc, &ops, &n, 1) != 1 || ops == nullptr) return out;
  DwarfPiece cur;
  bool have = false;
  for (size_t i = 0; i < n && out.size() < 16; ++i) {
    const Dwarf_Op& op = ops[i];
    if (op.atom >= DW_OP_reg0 && op.atom <= DW_OP_reg31) {
      cur.reg = op.atom - DW_OP_reg0;
      have = true;
    } else if (op.atom == DW_OP_regx) {
      cur.reg = static_cast<int>(op.number);
      have = true;
    } else if (op.atom == DW_OP_fbreg) {  // Go's frame base is the CFA
      cur.reg = -1;
      cur.cfa_offset = static_cast<int64_t>(op.number);
      have = true;
    } else if (op.atom == DW_OP_call_frame_cfa) {
      cur.reg = -1;
      cur.cfa_offset = 0;
      have = true;
    } else if (op.atom == DW_OP_consts && i + 1 < n && ops[i + 1].atom == DW_OP_plus && have &&
               cur.reg == -1) {
      cur.cfa_offset += static_cast<int64_t>(op.number);
      ++i;
    } else if (op.atom == DW_OP_plus_uconst && have && cur.reg == -1) {
      cur.cfa_offset += static_cast<int64_t>(op.number);
    } else if (op.atom == DW_OP_piece) {
      cur.size = op.number;
      if (!have) return {};  // an optimized-out piece: the value cannot be read whole
      out.push_back(cur);
      cur = {};
      have = false;
    } else {
      return {};
    }
  }
  if (have) out.push_back(cur);
  return out;
}

std::optional<Dwarf_Addr> entry_address(Dwarf_Die* die) {
  Dwarf_Addr lo;
  if (dwarf_lowpc(die, &lo) == 0) return lo;
  Dwarf_Addr base, start, end;
  if (dwarf_ranges(die, 0, &base, &start, &end) > 0) return start;
  return std::nullopt;
}

std::string join_paths(const std::vector<std::string>& paths) {
  std::string out;
  for (const auto& p : paths) out += (out.empty() ? "" : ", ") + p;
  return out;
}

}  // namespace

struct DwarfTypes::Impl {
  UniqueFd fd;
  Dwarf* dbg = nullptr;
  std::string source;
  std::string why_none;  // without DWARF: why, for messages
  std::map<uint64_t, std::optional<DwarfFunction>> functions;
  std::optional<std::map<std::string, DwarfTypeRef>> type_index;
  DwarfTypes* self = nullptr;

  ~Impl() {
    if (dbg) dwarf_end(dbg);
  }

  DwarfTypeRef ref_of(Dwarf_Die* die) {
    DwarfTypeRef r;
    r.offset = dwarf_dieoffset(die);
    Dwarf_Half version = 0;
    uint8_t unit_type = 0;
    if (dwarf_cu_info(die->cu, &version, &unit_type, nullptr, nullptr, nullptr, nullptr, nullptr) ==
        0)
      r.in_types_section = version == 4 && unit_type == DW_UT_type;
    return r;
  }

  Result<Dwarf_Die> die_of(DwarfTypeRef ref) {
    Dwarf_Die die;
    Dwarf_Die* got = ref.in_types_section ? dwarf_offdie_types(dbg, ref.offset, &die)
                                          : dwarf_offdie(dbg, ref.offset, &die);
    if (!got)
      return fail("{}: no DWARF entry at offset {:#x}: {}", source, ref.offset, dwarf_message());
    return die;
  }

  DwarfType describe(Dwarf_Die die, int depth) {
    DwarfType t;
    Dwarf_Die peeled;
    if (dwarf_peel_type(&die, &peeled) != 0) {
      t.name = t.base_name = "?";
      return t;
    }
    t.ref = ref_of(&peeled);
    const int tag = dwarf_tag(&peeled);
    const std::string name = attr_string(&peeled, DW_AT_name);
    if (int size = dwarf_bytesize(&peeled); size > 0) t.size = static_cast<uint64_t>(size);
    switch (tag) {
      case DW_TAG_base_type: {
        auto enc = attr_udata(&peeled, DW_AT_encoding).value_or(0);
        t.kind = enc == DW_ATE_float || enc == DW_ATE_complex_float ? DwarfType::Kind::Float
                                                                    : DwarfType::Kind::Integer;
        t.is_signed = enc == DW_ATE_signed || enc == DW_ATE_signed_char || enc == DW_ATE_float;
        t.name = name.empty() ? "?" : name;
        break;
      }
      case DW_TAG_pointer_type:
      case DW_TAG_reference_type:
      case DW_TAG_rvalue_reference_type: {
        t.kind = DwarfType::Kind::Pointer;
        if (t.size == 0) t.size = 8;
        auto target = type_die(&peeled);
        std::string target_name = "void";
        bool target_is_pointer = false;
        if (target) {
          Dwarf_Die tp;
          if (dwarf_peel_type(&*target, &tp) == 0) {
            t.target = ref_of(&tp);
            if (depth < kMaxTypeDepth) {
              DwarfType inner = describe(tp, depth + 1);
              target_name = inner.name;
              target_is_pointer = inner.kind == DwarfType::Kind::Pointer;
              t.base_name = inner.base_name;
            } else {
              target_name = "?";
            }
          }
        }
        if (t.base_name.empty()) t.base_name = target_name;
        t.name = target_name + (target_is_pointer ? "*" : " *");
        return t;
      }
      case DW_TAG_structure_type:
      case DW_TAG_class_type:
      case DW_TAG_union_type:
        t.kind = tag == DW_TAG_union_type ? DwarfType::Kind::Union : DwarfType::Kind::Struct;
        t.name = tag_keyword(tag) + " " + (name.empty() ? "<anonymous>" : name);
        t.declaration_only = attr_flag(&peeled, DW_AT_declaration);
        t.pass_by_reference =
            attr_udata(&peeled, DW_AT_calling_convention) == Dwarf_Word{DW_CC_pass_by_reference};
        break;
      case DW_TAG_enumeration_type: {
        t.kind = DwarfType::Kind::Enum;
        t.name = "enum " + (name.empty() ? "<anonymous>" : name);
        t.is_signed = true;  // C's enums are int unless the DWARF names another underlying type
        if (auto under = type_die(&peeled); under && depth < kMaxTypeDepth)
          t.is_signed = describe(*under, depth + 1).is_signed;
        break;
      }
      case DW_TAG_array_type: {
        t.kind = DwarfType::Kind::Array;
        std::string elem_name = "?";
        if (auto elem = type_die(&peeled)) {
          Dwarf_Die ep;
          if (dwarf_peel_type(&*elem, &ep) == 0) {
            t.target = ref_of(&ep);
            if (depth < kMaxTypeDepth) elem_name = describe(ep, depth + 1).name;
          }
        }
        Dwarf_Die sub;
        if (dwarf_child(&peeled, &sub) == 0 && dwarf_tag(&sub) == DW_TAG_subrange_type) {
          if (auto count = attr_udata(&sub, DW_AT_count))
            t.count = *count;
          else if (auto upper = attr_udata(&sub, DW_AT_upper_bound))
            t.count = *upper + 1;
        }
        Dwarf_Word size = 0;
        if (dwarf_aggregate_size(&peeled, &size) == 0) t.size = size;
        t.name = t.count ? fmt::format("{} [{}]", elem_name, t.count) : elem_name + " []";
        break;
      }
      case DW_TAG_subroutine_type:
        t.kind = DwarfType::Kind::Function;
        t.name = "function";
        break;
      case DW_TAG_unspecified_type:  // C++ nullptr_t, or a type the producer left out
      default:
        t.kind = DwarfType::Kind::Other;
        t.name = name.empty() ? "?" : name;
        break;
    }
    t.base_name = t.name;
    return t;
  }

  // Walks the CU's function scopes for the definition starting at `addr`.
  std::optional<Dwarf_Die> find_function(Dwarf_Die scope, uint64_t addr, int depth) {
    Dwarf_Die child;
    if (depth > kMaxScopeDepth || dwarf_child(&scope, &child) != 0) return std::nullopt;
    do {
      const int tag = dwarf_tag(&child);
      if (tag == DW_TAG_subprogram) {
        if (entry_address(&child) == addr) return child;
      } else if (is_function_scope(tag)) {
        if (auto f = find_function(child, addr, depth + 1)) return f;
      }
    } while (dwarf_siblingof(&child, &child) == 0);
    return std::nullopt;
  }

  std::optional<Dwarf_Die> find_function_named(Dwarf_Die scope, std::string_view name, int depth) {
    Dwarf_Die child;
    if (depth > kMaxScopeDepth || dwarf_child(&scope, &child) != 0) return std::nullopt;
    do {
      const int tag = dwarf_tag(&child);
      if (tag == DW_TAG_subprogram) {
        if (entry_address(&child) && (attr_string(&child, DW_AT_name) == name ||
                                      attr_string(&child, DW_AT_linkage_name) == name))
          return child;
      } else if (is_function_scope(tag)) {
        if (auto f = find_function_named(child, name, depth + 1)) return f;
      }
    } while (dwarf_siblingof(&child, &child) == 0);
    return std::nullopt;
  }

  // `at`: where the parameters' locations are read (an inlined copy's probe pc); 0 = the entry.
  Result<DwarfFunction> read_function(Dwarf_Die fn, uint64_t at = 0) {
    DwarfFunction out;
    out.name = attr_string(&fn, DW_AT_name);
    out.low_pc = at ? at : entry_address(&fn).value_or(0);
    // A concrete copy of an inlined function may list no parameters of its own; its abstract
    // origin has the declared list.
    Dwarf_Die params_of = fn;
    Dwarf_Die child;
    bool has_params = false;
    if (dwarf_child(&fn, &child) == 0) {
      do {
        const int tag = dwarf_tag(&child);
        has_params |= tag == DW_TAG_formal_parameter || tag == DW_TAG_unspecified_parameters;
      } while (!has_params && dwarf_siblingof(&child, &child) == 0);
    }
    Dwarf_Attribute attr;
    if (!has_params && dwarf_attr(&fn, DW_AT_abstract_origin, &attr)) {
      Dwarf_Die origin;
      if (dwarf_formref_die(&attr, &origin)) params_of = origin;
    }
    if (dwarf_child(&params_of, &child) == 0) {
      do {
        const int tag = dwarf_tag(&child);
        if (tag == DW_TAG_unspecified_parameters) out.varargs = true;
        if (tag != DW_TAG_formal_parameter) continue;
        DwarfParam p;
        p.name = attr_string(&child, DW_AT_name);
        p.artificial = attr_flag(&child, DW_AT_artificial);
        p.is_result = attr_flag(&child, DW_AT_variable_parameter);
        if (out.low_pc) p.entry_pieces = pieces_at(&child, out.low_pc);
        if (auto t = type_die(&child))
          p.type = describe(*t, 0);
        else
          p.type.name = p.type.base_name = "?";
        out.params.push_back(std::move(p));
      } while (dwarf_siblingof(&child, &child) == 0);
    }
    std::optional<DwarfType> ret;
    if (auto t = type_die(&fn)) ret = describe(*t, 0);
    if (auto r = assign_sysv_locations(*self, out, ret); !r) return tl::unexpected(r.error());
    return out;
  }

  void index_types(Dwarf_Die scope, int depth) {
    Dwarf_Die child;
    if (depth > kMaxScopeDepth || dwarf_child(&scope, &child) != 0) return;
    do {
      const int tag = dwarf_tag(&child);
      if (tag == DW_TAG_namespace) {
        index_types(child, depth + 1);
        continue;
      }
      index_type(child);
    } while (dwarf_siblingof(&child, &child) == 0);
  }

  // The first complete definition of a name wins: CUs agree on a type's layout.
  void index_type(Dwarf_Die die) {
    const int tag = dwarf_tag(&die);
    if (!is_named_type(tag) || attr_flag(&die, DW_AT_declaration)) return;
    const char* name = dwarf_diename(&die);
    if (!name || !*name) return;
    const std::string kw = tag_keyword(tag);
    const DwarfTypeRef ref = ref_of(&die);
    type_index->emplace(kw.empty() ? name : kw + " " + name, ref);
    // C++ code (and users) say "struct X" for a class and "X" for both.
    if (tag == DW_TAG_class_type) type_index->emplace(std::string("struct ") + name, ref);
    if (tag == DW_TAG_structure_type || tag == DW_TAG_class_type) type_index->emplace(name, ref);
  }

  Result<uint64_t> member_offset(Dwarf_Die* m) {
    Dwarf_Attribute attr;
    if (dwarf_attr_integrate(m, DW_AT_data_member_location, &attr)) {
      Dwarf_Word v;
      if (dwarf_formudata(&attr, &v) == 0) return v;
      // DWARF 2 style: a location expression, DW_OP_plus_uconst N in practice.
      Dwarf_Op* ops;
      size_t n;
      if (dwarf_getlocation(&attr, &ops, &n) == 0 && n == 1 && ops[0].atom == DW_OP_plus_uconst)
        return ops[0].number;
      return fail("{}: member '{}' has a computed location (virtual base?)", source,
                  attr_string(m, DW_AT_name));
    }
    if (auto bits = attr_udata(m, DW_AT_data_bit_offset)) return *bits / 8;
    return 0;  // union members
  }
};

DwarfTypes::DwarfTypes(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {
  impl_->self = this;
}
DwarfTypes::~DwarfTypes() = default;

Result<std::unique_ptr<DwarfTypes>> DwarfTypes::open_file(const std::string& path) {
  auto impl = std::make_unique<Impl>();
  impl->source = path;
  impl->fd = UniqueFd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!impl->fd.valid()) return fail_errno(errno, "{}: {}", path, std::strerror(errno));
  impl->dbg = dwarf_begin(impl->fd.get(), DWARF_C_READ);
  if (!impl->dbg) return fail("{}: cannot read DWARF: {}", path, dwarf_message());
  return std::unique_ptr<DwarfTypes>(new DwarfTypes(std::move(impl)));
}

Result<std::unique_ptr<DwarfTypes>> DwarfTypes::open(const ElfFile& elf,
                                                     const DebugSearchPaths& paths) {
  auto none = std::make_unique<Impl>();
  none->source = elf.display_path();
  auto own = elf.section(".debug_info");
  if (own && own->type != SHT_NOBITS) {
    auto r = open_file(elf.path());
    if (!r) return r;
    (*r)->impl_->source = elf.display_path();
    return r;
  }
  if (auto debug = find_debug_file(elf, paths)) {
    auto r = open_file(*debug);
    if (r) return r;
    // A debug file may carry only symbols: no DWARF is what the caller has to hear.
    none->why_none = r.error().message;
  } else {
    none->why_none = fmt::format(
        "{} has no DWARF (no .debug_info, and no debug file by build-id or .gnu_debuglink "
        "under {})",
        elf.display_path(), join_paths(paths.debug_roots));
  }
  return std::unique_ptr<DwarfTypes>(new DwarfTypes(std::move(none)));
}

const std::string& DwarfTypes::why_no_dwarf() const {
  return impl_->why_none;
}

bool DwarfTypes::has_dwarf() const {
  return impl_->dbg != nullptr;
}

const std::string& DwarfTypes::source() const {
  return impl_->source;
}

Result<std::optional<DwarfFunction>> DwarfTypes::function_at(uint64_t addr) {
  if (!impl_->dbg) return std::optional<DwarfFunction>{};
  if (auto it = impl_->functions.find(addr); it != impl_->functions.end()) return it->second;
  std::optional<Dwarf_Die> fn;
  Dwarf_Die cu;
  if (dwarf_addrdie(impl_->dbg, addr, &cu)) fn = impl_->find_function(cu, addr, 0);
  if (!fn) {
    // No .debug_aranges (clang does not emit it by default), or it missed this function.
    Dwarf_CU* it = nullptr;
    Dwarf_Die cudie;
    uint8_t unit_type;
    while (!fn && dwarf_get_units(impl_->dbg, it, &it, nullptr, &unit_type, &cudie, nullptr) == 0)
      if (unit_type != DW_UT_type && dwarf_haspc(&cudie, addr) > 0)
        fn = impl_->find_function(cudie, addr, 0);
  }
  std::optional<DwarfFunction> out;
  if (fn) {
    auto f = impl_->read_function(*fn);
    if (!f) return tl::unexpected(f.error());
    out = std::move(*f);
  }
  impl_->functions[addr] = out;
  return out;
}

Result<std::optional<DwarfFunction>> DwarfTypes::inlined_at(uint64_t pc, std::string_view name) {
  if (!impl_->dbg) return std::optional<DwarfFunction>{};
  Dwarf_Die cu;
  bool found = dwarf_addrdie(impl_->dbg, pc, &cu) != nullptr;
  Dwarf_CU* it = nullptr;
  uint8_t unit_type;
  while (!found && dwarf_get_units(impl_->dbg, it, &it, nullptr, &unit_type, &cu, nullptr) == 0)
    found = unit_type != DW_UT_type && dwarf_haspc(&cu, pc) > 0;  // no .debug_aranges entry
  if (!found) return std::optional<DwarfFunction>{};
  Dwarf_Die* scopes = nullptr;
  int n = dwarf_getscopes(&cu, pc, &scopes);  // innermost first, inlined copies included
  std::optional<Dwarf_Die> copy;
  for (int i = 0; i < n && !copy; ++i)
    if (dwarf_tag(&scopes[i]) == DW_TAG_inlined_subroutine &&
        attr_string(&scopes[i], DW_AT_name) == name)
      copy = scopes[i];
  free(scopes);
  if (!copy) return std::optional<DwarfFunction>{};
  auto f = impl_->read_function(*copy, pc);
  if (!f) return tl::unexpected(f.error());
  return std::optional<DwarfFunction>(std::move(*f));
}

Result<std::optional<DwarfFunction>> DwarfTypes::function_named(std::string_view name) {
  if (!impl_->dbg) return std::optional<DwarfFunction>{};
  Dwarf_CU* it = nullptr;
  Dwarf_Die cudie;
  uint8_t unit_type;
  while (dwarf_get_units(impl_->dbg, it, &it, nullptr, &unit_type, &cudie, nullptr) == 0) {
    if (unit_type == DW_UT_type) continue;
    if (auto fn = impl_->find_function_named(cudie, name, 0)) {
      auto f = impl_->read_function(*fn);
      if (!f) return tl::unexpected(f.error());
      return std::optional<DwarfFunction>(std::move(*f));
    }
  }
  return std::optional<DwarfFunction>{};
}

Result<std::optional<DwarfType>> DwarfTypes::find_type(std::string_view name) {
  if (!impl_->dbg) return std::optional<DwarfType>{};
  if (!impl_->type_index) {
    impl_->type_index.emplace();
    Dwarf_CU* it = nullptr;
    Dwarf_Die cudie, subdie;
    uint8_t unit_type;
    while (dwarf_get_units(impl_->dbg, it, &it, nullptr, &unit_type, &cudie, &subdie) == 0) {
      if (unit_type == DW_UT_type)
        impl_->index_type(subdie);
      else
        impl_->index_types(cudie, 0);
    }
  }
  auto found = impl_->type_index->find(std::string(name));
  if (found == impl_->type_index->end()) return std::optional<DwarfType>{};
  auto t = type(found->second);
  if (!t) return tl::unexpected(t.error());
  return std::optional<DwarfType>(std::move(*t));
}

Result<DwarfType> DwarfTypes::type(DwarfTypeRef ref) {
  auto die = impl_->die_of(ref);
  if (!die) return tl::unexpected(die.error());
  return impl_->describe(*die, 0);
}

Result<std::vector<DwarfMember>> DwarfTypes::members(DwarfTypeRef ref) {
  auto die = impl_->die_of(ref);
  if (!die) return tl::unexpected(die.error());
  std::vector<DwarfMember> out;
  Dwarf_Die child;
  if (dwarf_child(&*die, &child) != 0) return out;
  do {
    const int tag = dwarf_tag(&child);
    // A base class is reached like an anonymous member: its members are the derived class's.
    if (tag != DW_TAG_member && tag != DW_TAG_inheritance) continue;
    if (attr_flag(&child, DW_AT_external)) continue;  // C++ static data member
    DwarfMember m;
    if (tag == DW_TAG_member) m.name = attr_string(&child, DW_AT_name);
    auto off = impl_->member_offset(&child);
    if (!off) return tl::unexpected(off.error());
    m.offset = *off;
    if (auto t = type_die(&child))
      m.type = impl_->describe(*t, 0);
    else
      m.type.name = m.type.base_name = "?";
    if (int bits = dwarf_bitsize(&child); bits > 0) m.bit_size = bits;
    out.push_back(std::move(m));
  } while (dwarf_siblingof(&child, &child) == 0);
  return out;
}

Result<std::optional<DwarfMember>> DwarfTypes::member(DwarfTypeRef ref, std::string_view name) {
  // Anonymous members nest (a union in a struct in a union); kMaxTypeDepth bounds a cycle.
  struct Frame {
    DwarfTypeRef ref;
    uint64_t offset;
    int depth;
  };
  std::vector<Frame> work = {{ref, 0, 0}};
  int budget = kMaxMemberScopes;
  while (!work.empty() && budget-- > 0) {
    Frame f = work.back();
    work.pop_back();
    auto ms = members(f.ref);
    if (!ms) return tl::unexpected(ms.error());
    std::vector<Frame> nested;
    for (auto& m : *ms) {
      if (!m.name.empty()) {
        if (m.name != name) continue;
        m.offset += f.offset;
        return std::optional<DwarfMember>(std::move(m));
      }
      const bool aggregate =
          m.type.kind == DwarfType::Kind::Struct || m.type.kind == DwarfType::Kind::Union;
      if (aggregate && f.depth < kMaxTypeDepth)
        nested.push_back({m.type.ref, f.offset + m.offset, f.depth + 1});
    }
    work.insert(work.end(), nested.rbegin(), nested.rend());
  }
  return std::optional<DwarfMember>{};
}

}  // namespace uscope
