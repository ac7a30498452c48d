#pragma once
// The one cache of opened ELF objects, shared by the planner, the symbolizer and `list`: an
// object is keyed by its build-id (by device, inode and mtime when it has none), so however many
// processes map it and under whatever path (/proc/PID/map_files/..., /proc/PID/root/..., a hard
// link), it costs one ElfFile, one symbol table and one libdwfl module. Bounded: beyond
// max_objects the least recently opened entries are dropped; holders of a shared_ptr keep theirs.
//
// Not thread-safe, and neither are the objects it hands out (their symbols and debug info load
// lazily): uscope plans, then symbolizes, on one thread.
#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <list>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "discover/debug_info.h"
#include "discover/elf_file.h"
#include "discover/gopclntab.h"
#include "discover/symbol_table.h"

namespace uscope {

// One file as the kernel knows it; mtime tells a file rewritten in place from its old contents.
struct FileIdentity {
  uint64_t dev = 0;
  uint64_t ino = 0;
  int64_t mtime_ns = 0;
  auto operator<=>(const FileIdentity&) const = default;
};

class StoredObject {
 public:
  StoredObject(std::string key, ElfFile elf, DebugSearchPaths paths);

  // "build-id:<hex>" or "file:<dev>:<ino>:<mtime>".
  const std::string& key() const { return key_; }
  const ElfFile& elf() const { return elf_; }
  const std::string& build_id() const { return build_id_; }  // lowercase hex, "" when none

  // Function symbols, read on first use (with MiniDebugInfo and a debug file when the object has
  // no .symtab); the outcome, error included, is kept.
  Result<const SymbolTable*> symbols();
  // The object as a libdwfl module (debug file, lines, inlines), opened on first use; null when
  // libdwfl cannot open it. Tried once.
  DebugInfo* debug_info();
  // Go's function table (inline trees, lines), read on first use and shared by the symbol table,
  // the planner and the symbolizer: a big Go program's is 14 MB, read once. Null when the object
  // is not Go; the error when its table cannot be read. Tried once.
  Result<const GoPclntab*> go_table();
  // go_table(), null on an error too.
  const GoPclntab* go_pclntab();

 private:
  std::string key_;
  ElfFile elf_;
  std::string build_id_;
  DebugSearchPaths paths_;
  std::optional<Result<SymbolTable>> symbols_;
  std::optional<std::unique_ptr<DebugInfo>> debug_info_;
  std::optional<Result<std::optional<GoPclntab>>> go_pclntab_;
};

class ObjectStore {
 public:
  static constexpr size_t kDefaultMaxObjects = 512;

  explicit ObjectStore(size_t max_objects = kDefaultMaxObjects, DebugSearchPaths paths = {});
  // The process's store (default debug paths and bound), which the planner, `list` and a
  // Symbolizer without options of its own share.
  static std::shared_ptr<ObjectStore> shared();

  // `path` is opened (a /proc/PID/... path works); `display_path` names it in messages. A file
  // already stored (same identity, or another file with the same build-id) is not opened again.
  Result<std::shared_ptr<StoredObject>> open(const std::string& path,
                                             const std::string& display_path = {});

  size_t size() const { return lru_.size(); }
  size_t max_objects() const { return max_objects_; }
  const DebugSearchPaths& debug_paths() const { return paths_; }

 private:
  struct Entry {
    std::shared_ptr<StoredObject> object;
    std::vector<FileIdentity> files;  // every identity that led here, dropped with the entry
  };
  using Lru = std::list<Entry>;  // most recently used first

  Lru::iterator touch(Lru::iterator it);
  void evict();

  size_t max_objects_;
  DebugSearchPaths paths_;
  Lru lru_;
  std::unordered_map<std::string, Lru::iterator> by_key_;
  std::map<FileIdentity, Lru::iterator> by_file_;
};

}  // namespace uscope
