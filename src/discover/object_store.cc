#include "discover/object_store.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>

#include <fmt/format.h>

namespace uscope {

StoredObject::StoredObject(std::string key, ElfFile elf, DebugSearchPaths paths)
    : key_(std::move(key)),
      elf_(std::move(elf)),
      build_id_(elf_.build_id().value_or("")),
      paths_(std::move(paths)) {}

Result<const SymbolTable*> StoredObject::symbols() {
  if (!symbols_) {
    const bool own_symtab = elf_.section(".symtab").has_value();
    // With a .symtab of its own, nothing libdwfl finds would add a name: skip opening it.
    symbols_ = own_symtab ? SymbolTable::load(elf_, nullptr, nullptr)
                          : SymbolTable::load(elf_, debug_info(), go_pclntab());
  }
  if (!*symbols_) return tl::unexpected(symbols_->error());
  return &**symbols_;
}

Result<const GoPclntab*> StoredObject::go_table() {
  if (!go_pclntab_) go_pclntab_.emplace(GoPclntab::read(elf_));
  if (!*go_pclntab_) return tl::unexpected(go_pclntab_->error());
  return **go_pclntab_ ? &***go_pclntab_ : nullptr;
}

const GoPclntab* StoredObject::go_pclntab() {
  auto t = go_table();
  return t ? *t : nullptr;
}

DebugInfo* StoredObject::debug_info() {
  if (!debug_info_) {
    auto info = DebugInfo::open(elf_, paths_);
    debug_info_ = info ? std::move(*info) : nullptr;
  }
  return debug_info_->get();
}

ObjectStore::ObjectStore(size_t max_objects, DebugSearchPaths paths)
    : max_objects_(max_objects == 0 ? 1 : max_objects), paths_(std::move(paths)) {}

std::shared_ptr<ObjectStore> ObjectStore::shared() {
  static const auto store = std::make_shared<ObjectStore>();
  return store;
}

ObjectStore::Lru::iterator ObjectStore::touch(Lru::iterator it) {
  lru_.splice(lru_.begin(), lru_, it);
  return lru_.begin();
}

void ObjectStore::evict() {
  while (lru_.size() > max_objects_) {
    Entry& last = lru_.back();
    for (const auto& f : last.files) by_file_.erase(f);
    by_key_.erase(last.object->key());
    lru_.pop_back();
  }
}

Result<std::shared_ptr<StoredObject>> ObjectStore::open(const std::string& path,
                                                        const std::string& display_path) {
  const std::string& shown = display_path.empty() ? path : display_path;
  struct stat st;
  if (::stat(path.c_str(), &st) != 0)
    return fail_errno(errno, "{}: {}", shown, std::strerror(errno));
  const FileIdentity file{
      static_cast<uint64_t>(st.st_dev), static_cast<uint64_t>(st.st_ino),
      static_cast<int64_t>(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec};
  if (auto it = by_file_.find(file); it != by_file_.end()) {
    it->second = touch(it->second);
    return it->second->object;
  }

  auto elf = ElfFile::open(path, shown);
  if (!elf) return tl::unexpected(elf.error());
  const std::optional<std::string> id = elf->build_id();
  const std::string key =
      id ? "build-id:" + *id : fmt::format("file:{}:{}:{}", file.dev, file.ino, file.mtime_ns);
  Lru::iterator entry;
  if (auto it = by_key_.find(key); it != by_key_.end()) {
    // Another file of the same build (a copy, a container's layer): one entry serves both.
    entry = touch(it->second);
    it->second = entry;
  } else {
    lru_.push_front(Entry{std::make_shared<StoredObject>(key, std::move(*elf), paths_), {}});
    entry = lru_.begin();
    by_key_.emplace(key, entry);
  }
  entry->files.push_back(file);
  by_file_.emplace(file, entry);
  std::shared_ptr<StoredObject> object = entry->object;
  evict();
  return object;
}

}  // namespace uscope
