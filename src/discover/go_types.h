#pragma once
// Layouts of Go types, for probes that name struct fields (`req.Method`, `req.URL.Path`) and for
// `uscope http`. Three sources, tried in this order:
//   1. DWARF (a binary built without -w);
//   2. the runtime type descriptors every Go binary keeps, stripped or not, because reflection
//      needs them: moduledata's typelinks list the types, and a struct type's descriptor carries
//      its fields' names, types and offsets (unexported fields included);
//   3. a table built into uscope, keyed by Go version, for the few types uscope itself needs
//      (net/http, net/url, runtime) when neither of the others has them.
// Each answer says which source it came from (`-v` prints it). Hand-written: no packaged C/C++
// library reads Go's type descriptors. The bytes are untrusted (fuzz/go_types_fuzz.cc).
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "discover/dwarf_types.h"
#include "discover/elf_file.h"
#include "discover/go_buildinfo.h"
#include "discover/go_kind.h"
#include "discover/gopclntab.h"
#include "util/result.h"

namespace uscope {

// Declared: the type as a spec's declared parameter list spells it (`tag string`, `p *main.T`),
// whose layout the language fixes.
enum class GoTypeSource { Dwarf, TypeDescriptor, VersionTable, Declared };
// "DWARF", "the runtime type descriptor", "uscope's table for this Go version", "the declared list"
const char* go_type_source_name(GoTypeSource s);

// A Go type as far as a probe needs it.
struct GoType {
  std::string name;  // as Go prints it: "string", "*net/http.Request", "[]interface {}"
  GoKind kind = GoKind::Invalid;
  uint64_t size = 0;
  std::string elem;  // Pointer, Slice, Array: the element type's name
  GoTypeSource source = GoTypeSource::Dwarf;
};

// A DWARF type of Go code as Go names it: uscope's DWARF reader spells types the C way
// ("struct net/url.URL *", "struct string") and peels typedefs, so an interface arrives as the
// runtime's iface/eface struct.
GoType go_type_of(const DwarfType& t);

struct GoField {
  std::string name;  // "Method"
  uint64_t offset = 0;
  GoType type;
  GoTypeSource source = GoTypeSource::Dwarf;  // where the offset came from
};

// uscope's own table alone (the last resort of GoTypes): the fields `uscope http` reads, for the Go
// versions it lists (go1.19 on amd64, checked against that release's DWARF and descriptors).
std::vector<GoField> go_table_fields(const GoBuildInfo& info, std::string_view struct_type);

class GoTypes {
 public:
  // `dwarf` may be null or without DWARF; `info` may be null (then the version table is unused).
  static Result<std::unique_ptr<GoTypes>> open(const ElfFile& elf, DwarfTypes* dwarf,
                                               const GoBuildInfo* info);
  // The same with the object's Go function table already read (`table`; null: none), whose
  // moduledata says where type descriptors are.
  static Result<std::unique_ptr<GoTypes>> open(const ElfFile& elf, DwarfTypes* dwarf,
                                               const GoBuildInfo* info, const GoPclntab* table);
  ~GoTypes();

  // A named type ("net/http.Request", "*net/url.URL", "io.Writer", "error", "[]byte").
  Result<GoType> type(std::string_view name);
  // A field of a struct type (or of the struct a pointer type points to). Errors name the type,
  // the closest field names, and what would help (a binary with DWARF) when no source has it.
  Result<GoField> field(std::string_view struct_type, std::string_view field);
  Result<std::vector<GoField>> fields(std::string_view struct_type);
  // The name of the type whose runtime descriptor is at link-time address `addr` (the type word
  // of an interface value, minus the load bias), for `%v`.
  std::optional<std::string> type_name_at(uint64_t addr);

  struct Impl;

 private:
  explicit GoTypes(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace uscope
