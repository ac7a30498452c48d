// ElfFile on elfutils' libelf. Everything here reads untrusted bytes (any file a user names, any
// mapping of a traced process, fuzzer input), so every libelf result is checked and a malformed
// part degrades to "absent" rather than failing the whole file, except for the ELF, program and
// section headers, without which nothing else can be trusted.
#include "discover/elf_file.h"

#include <ar.h>
#include <fcntl.h>
#include <gelf.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>
#include <mutex>

#include "util/unique_fd.h"

namespace uscope {
namespace {

struct ElfDeleter {
  void operator()(Elf* e) const { elf_end(e); }
};
using ElfPtr = std::unique_ptr<Elf, ElfDeleter>;

// libelf refuses to work until the version handshake has happened once per process.
void init_libelf() {
  static const bool ok = elf_version(EV_CURRENT) != EV_NONE;
  (void)ok;
}

std::string elf_error() {
  const int e = elf_errno();  // also clears it, so a stale error never names a later problem
  const char* m = e != 0 ? elf_errmsg(e) : nullptr;
  return m ? m : "no detail from libelf";
}

// zlib cannot expand data by more than 1032:1, so a larger claimed size is a lie that would make
// libelf allocate whatever the header says.
constexpr uint64_t kMaxDeflateRatio = 1032;
constexpr uint64_t kMaxDecompressedSection = uint64_t{1} << 30;

std::string hex(std::span<const uint8_t> bytes) {
  static constexpr char digits[] = "0123456789abcdef";
  std::string s;
  s.reserve(bytes.size() * 2);
  for (uint8_t b : bytes) {
    s.push_back(digits[b >> 4]);
    s.push_back(digits[b & 0xf]);
  }
  return s;
}

// Explains why bytes that libelf would not accept as ELF are not an ELF file.
std::string not_elf_reason(std::span<const uint8_t> head, uint64_t file_size) {
  if (file_size == 0) return "empty file, not an ELF file";
  if (head.size() < SELFMAG || std::memcmp(head.data(), ELFMAG, SELFMAG) != 0) {
    if (head.size() >= SARMAG && std::memcmp(head.data(), ARMAG, SARMAG) == 0) {
      return "is an ar archive, not an ELF file";
    }
    return "not an ELF file";
  }
  if (head.size() < EI_NIDENT) return "truncated ELF file (shorter than the ELF identification)";
  if (head[EI_CLASS] != ELFCLASS32 && head[EI_CLASS] != ELFCLASS64) {
    return fmt::format("corrupted ELF file: invalid ELF class {}", head[EI_CLASS]);
  }
  if (head[EI_DATA] != ELFDATA2LSB && head[EI_DATA] != ELFDATA2MSB) {
    return fmt::format("corrupted ELF file: invalid data encoding {}", head[EI_DATA]);
  }
  const uint64_t ehdr_size = head[EI_CLASS] == ELFCLASS64 ? sizeof(Elf64_Ehdr) : sizeof(Elf32_Ehdr);
  if (file_size < ehdr_size) {
    return fmt::format("truncated ELF file ({} bytes, shorter than the {}-byte ELF header)",
                       file_size, ehdr_size);
  }
  if (head[EI_VERSION] != EV_CURRENT) {
    return fmt::format("corrupted ELF file: unsupported ELF version {}", head[EI_VERSION]);
  }
  // libelf rejects at elf_begin an ELF whose header tables lie past the end of the file.
  return fmt::format("truncated or corrupted ELF file ({} bytes): {}", file_size, elf_error());
}

// Whether [off, off + count * entsize) lies within a file of `size` bytes, without overflow.
bool table_fits(uint64_t off, uint64_t count, uint64_t entsize, uint64_t size) {
  if (count == 0) return true;
  if (off > size || entsize == 0) return false;
  return count <= (size - off) / entsize;
}

// Reads [offset, offset + size) of the file at `path` with pread; false if it cannot be read whole.
bool read_file_range(const std::string& path, uint64_t offset, uint64_t size,
                     std::vector<uint8_t>& out) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) return false;
  out.resize(size);
  size_t done = 0;
  while (done < size) {
    ssize_t n =
        ::pread(fd.get(), out.data() + done, size - done, static_cast<off_t>(offset + done));
    if (n <= 0) break;
    done += static_cast<size_t>(n);
  }
  out.resize(done);
  return done == size;
}

}  // namespace

SymbolBinding symbol_binding(unsigned char st_info) {
  switch (GELF_ST_BIND(st_info)) {
    case STB_LOCAL:
      return SymbolBinding::Local;
    case STB_WEAK:
      return SymbolBinding::Weak;
    case STB_GNU_UNIQUE:
      return SymbolBinding::Unique;
    default:
      return SymbolBinding::Global;
  }
}

SymbolKind symbol_kind(unsigned char st_info) {
  switch (GELF_ST_TYPE(st_info)) {
    case STT_FUNC:
      return SymbolKind::Function;
    case STT_GNU_IFUNC:
      return SymbolKind::IndirectFunction;
    case STT_OBJECT:
    case STT_TLS:
    case STT_COMMON:
      return SymbolKind::Object;
    default:
      return SymbolKind::Other;
  }
}

struct ElfFile::Impl {
  std::string path;
  std::string display_path;
  // The image for from_memory; declared before `elf` so it outlives the Elf pointing into it.
  std::vector<uint8_t> memory;
  ElfPtr elf;
  uint64_t file_size = 0;

  GElf_Ehdr ehdr{};
  std::vector<ElfSection> sections;
  std::vector<ElfSegment> segments;
  std::vector<uint64_t> segment_align;  // p_align of segments[i]
  bool pie = false;
  std::optional<std::string> build_id;

  // libelf is not thread-safe, and section_data() decompresses in place.
  mutable std::mutex mu;
  // Executable sections as read from the file (code_bytes()), by section index. Not through
  // libelf's mapping: a read-only private mapping of a file is still VM_MAYEXEC, so the kernel
  // writes the int3 of every uprobe another session holds on the file into it, and the code would
  // read as breakpoints. Read in pieces of kCodePiece bytes as code_bytes() asks for them, into an
  // anonymous mapping of the section's size whose pages are resident only once read: planning one
  // function of a 22 MB Go .text keeps kilobytes, not all of it.
  static constexpr uint64_t kCodePiece = 64 * 1024;
  struct CodeSection {
    uint8_t* base = nullptr;
    uint64_t size = 0;
    std::vector<bool> read;  // by piece
    UniqueFd fd;
    CodeSection() = default;
    CodeSection(const CodeSection&) = delete;
    CodeSection& operator=(const CodeSection&) = delete;
    ~CodeSection() {
      if (base != nullptr) munmap(base, size);
    }
  };
  mutable std::map<size_t, CodeSection> code;
  // [start, start + len) of executable section `s` (index `i`) read, or empty when it cannot be.
  std::span<const uint8_t> code_locked(size_t i, const ElfSection& s, uint64_t start,
                                       uint64_t len) const;

  Result<void> load();
  Result<std::span<const uint8_t>> data_locked(const ElfSection& s) const;
  Result<std::vector<ElfNote>> notes_locked(std::string_view owner) const;
  struct DynamicFlags {
    bool df_1_pie = false;
    bool soname = false;
  };
  DynamicFlags dynamic_flags() const;
  void find_build_id();
  std::string err(std::string_view what) const { return fmt::format("{}: {}", display_path, what); }
};

Result<void> ElfFile::Impl::load() {
  if (gelf_getehdr(elf.get(), &ehdr) == nullptr) {
    return fail("{}", err("truncated or corrupted ELF header: " + elf_error()));
  }

  size_t phnum = 0;
  if (elf_getphdrnum(elf.get(), &phnum) != 0) {
    return fail("{}", err("corrupted ELF program header count: " + elf_error()));
  }
  // libelf quietly reports fewer (or no) headers when the table is cut off, so the count the
  // header declares is checked too: that is what tells a truncated file from a bare one.
  const uint64_t phent = gelf_fsize(elf.get(), ELF_T_PHDR, 1, EV_CURRENT);
  const uint64_t declared_ph = ehdr.e_phnum == PN_XNUM ? phnum : ehdr.e_phnum;
  if (!table_fits(ehdr.e_phoff, std::max<uint64_t>(phnum, declared_ph), phent, file_size)) {
    return fail("{}", err(fmt::format("truncated ELF file: {} program headers at offset {} extend "
                                      "past the end of the file ({} bytes)",
                                      declared_ph, ehdr.e_phoff, file_size)));
  }
  segments.reserve(phnum);
  segment_align.reserve(phnum);
  for (size_t i = 0; i < phnum; ++i) {
    GElf_Phdr ph;
    if (gelf_getphdr(elf.get(), static_cast<int>(i), &ph) == nullptr) {
      return fail("{}", err(fmt::format("corrupted program header {}: {}", i, elf_error())));
    }
    segments.push_back(
        ElfSegment{ph.p_type, ph.p_flags, ph.p_vaddr, ph.p_offset, ph.p_filesz, ph.p_memsz});
    segment_align.push_back(ph.p_align);
  }

  size_t shnum = 0;
  const uint64_t shent = gelf_fsize(elf.get(), ELF_T_SHDR, 1, EV_CURRENT);
  // With e_shnum == 0 and a table present, the real count is in section 0, which must fit.
  const uint64_t declared_sh = ehdr.e_shoff == 0 ? 0 : std::max<uint64_t>(ehdr.e_shnum, 1);
  if (elf_getshdrnum(elf.get(), &shnum) != 0) {
    return fail("{}", err("corrupted section header count: " + elf_error()));
  }
  if (!table_fits(ehdr.e_shoff, std::max<uint64_t>(shnum, declared_sh), shent, file_size)) {
    return fail("{}",
                err(fmt::format("truncated ELF file: {} section headers at offset {} extend "
                                "past the end of the file ({} bytes)",
                                std::max<uint64_t>(shnum, ehdr.e_shnum), ehdr.e_shoff, file_size)));
  }
  size_t shstrndx = 0;
  const bool have_names = elf_getshdrstrndx(elf.get(), &shstrndx) == 0;
  sections.reserve(shnum);
  for (Elf_Scn* scn = elf_nextscn(elf.get(), nullptr); scn != nullptr;
       scn = elf_nextscn(elf.get(), scn)) {
    GElf_Shdr sh;
    if (gelf_getshdr(scn, &sh) == nullptr) {
      return fail(
          "{}", err(fmt::format("corrupted section header {}: {}", elf_ndxscn(scn), elf_error())));
    }
    ElfSection s;
    // A bad name offset only loses the name; the section itself may still be useful.
    const char* name = have_names ? elf_strptr(elf.get(), shstrndx, sh.sh_name) : nullptr;
    if (name) s.name = name;
    s.type = sh.sh_type;
    s.flags = sh.sh_flags;
    s.addr = sh.sh_addr;
    s.offset = sh.sh_offset;
    s.size = sh.sh_size;
    s.index = elf_ndxscn(scn);
    sections.push_back(std::move(s));
  }

  bool has_interp = false;
  for (const auto& seg : segments) has_interp |= seg.type == PT_INTERP;
  // PT_INTERP alone is not enough: glibc's libc.so.6 has one (it runs as a program) but is a
  // library, told apart by its DT_SONAME. Linkers since binutils 2.26 also mark PIEs DF_1_PIE.
  const DynamicFlags dyn = ehdr.e_type == ET_DYN ? dynamic_flags() : DynamicFlags{};
  pie = ehdr.e_type == ET_DYN && (dyn.df_1_pie || (has_interp && !dyn.soname));
  find_build_id();
  return {};
}

ElfFile::Impl::DynamicFlags ElfFile::Impl::dynamic_flags() const {
  DynamicFlags f;
  auto scan = [&f](Elf_Data* data) {
    if (data == nullptr) return;
    GElf_Dyn dyn;
    for (int i = 0; gelf_getdyn(data, i, &dyn) != nullptr; ++i) {
      if (dyn.d_tag == DT_NULL) break;
      if (dyn.d_tag == DT_FLAGS_1 && (dyn.d_un.d_val & DF_1_PIE)) f.df_1_pie = true;
      if (dyn.d_tag == DT_SONAME) f.soname = true;
    }
  };
  bool saw_dynamic_section = false;
  for (const auto& s : sections) {
    if (s.type != SHT_DYNAMIC) continue;
    saw_dynamic_section = true;
    scan(elf_getdata(elf_getscn(elf.get(), s.index), nullptr));
  }
  if (saw_dynamic_section) return f;
  for (const auto& seg : segments) {
    if (seg.type != PT_DYNAMIC) continue;
    scan(elf_getdata_rawchunk(elf.get(), static_cast<int64_t>(seg.offset), seg.filesz, ELF_T_DYN));
  }
  return f;
}

void ElfFile::Impl::find_build_id() {
  auto notes = notes_locked("GNU");
  if (!notes) return;
  for (const auto& n : *notes) {
    if (n.type == NT_GNU_BUILD_ID && !n.desc.empty()) {
      build_id = hex(n.desc);
      return;
    }
  }
}

Result<std::span<const uint8_t>> ElfFile::Impl::data_locked(const ElfSection& s) const {
  if (s.type == SHT_NOBITS) return std::span<const uint8_t>{};
  Elf_Scn* scn = elf_getscn(elf.get(), s.index);
  GElf_Shdr sh;
  if (scn == nullptr || gelf_getshdr(scn, &sh) == nullptr) {
    return fail("{}", err(fmt::format("section {} ({}): {}", s.index, s.name, elf_error())));
  }
  // The live header, not `s`, tells whether an earlier call already decompressed the section.
  if (sh.sh_flags & SHF_COMPRESSED) {
    GElf_Chdr ch;
    if (gelf_getchdr(scn, &ch) == nullptr) {
      return fail("{}",
                  err(fmt::format("section {}: bad compression header: {}", s.name, elf_error())));
    }
    const uint64_t limit =
        ch.ch_type == ELFCOMPRESS_ZLIB
            ? std::min(kMaxDecompressedSection, sh.sh_size * kMaxDeflateRatio + 4096)
            : kMaxDecompressedSection;
    if (ch.ch_size > limit) {
      return fail("{}", err(fmt::format("section {}: claims to decompress to {} bytes from {}",
                                        s.name, ch.ch_size, sh.sh_size)));
    }
    if (elf_compress(scn, 0, 0) < 0) {
      return fail("{}", err(fmt::format("section {}: cannot decompress: {}", s.name, elf_error())));
    }
  }
  // Raw data: callers want the file's bytes, not libelf's host-order conversion.
  Elf_Data* d = elf_rawdata(scn, nullptr);
  if (d == nullptr) {
    if (sh.sh_size == 0) return std::span<const uint8_t>{};
    return fail("{}", err(fmt::format("section {}: cannot read {} bytes at offset {}: {}", s.name,
                                      sh.sh_size, sh.sh_offset, elf_error())));
  }
  if (d->d_buf == nullptr || d->d_size == 0) return std::span<const uint8_t>{};
  return std::span<const uint8_t>(static_cast<const uint8_t*>(d->d_buf), d->d_size);
}

Result<std::vector<ElfNote>> ElfFile::Impl::notes_locked(std::string_view owner) const {
  std::vector<ElfNote> out;
  auto walk = [&](Elf_Data* data, uint64_t section_addr) {
    if (data == nullptr || data->d_buf == nullptr) return;
    GElf_Nhdr nh;
    size_t name_off = 0;
    size_t desc_off = 0;
    size_t off = 0;
    const auto* base = static_cast<const uint8_t*>(data->d_buf);
    while (off < data->d_size) {
      const size_t next = gelf_getnote(data, off, &nh, &name_off, &desc_off);
      if (next == 0 || next <= off) break;
      off = next;
      const auto* name = reinterpret_cast<const char*>(base + name_off);
      std::string_view n(name, strnlen(name, nh.n_namesz));
      if (!owner.empty() && n != owner) continue;
      ElfNote note;
      note.type = nh.n_type;
      note.owner = std::string(n);
      note.desc = std::span<const uint8_t>(base + desc_off, nh.n_descsz);
      note.section_addr = section_addr;
      out.push_back(std::move(note));
    }
  };
  bool any_note_section = false;
  for (const auto& s : sections) {
    if (s.type != SHT_NOTE) continue;
    any_note_section = true;
    walk(elf_getdata(elf_getscn(elf.get(), s.index), nullptr), s.addr);
  }
  if (any_note_section) return out;
  for (size_t i = 0; i < segments.size(); ++i) {
    const auto& seg = segments[i];
    if (seg.type != PT_NOTE) continue;
    // As in the GNU tools, 8-byte aligned note segments use the 8-byte padding (NT_GNU_PROPERTY).
    const Elf_Type t = segment_align[i] == 8 ? ELF_T_NHDR8 : ELF_T_NHDR;
    walk(elf_getdata_rawchunk(elf.get(), static_cast<int64_t>(seg.offset), seg.filesz, t), 0);
  }
  return out;
}

ElfFile::ElfFile(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
ElfFile::ElfFile(ElfFile&&) noexcept = default;
ElfFile& ElfFile::operator=(ElfFile&&) noexcept = default;
ElfFile::~ElfFile() = default;

Result<ElfFile> ElfFile::open(const std::string& path, std::string display_path) {
  init_libelf();
  auto impl = std::make_unique<Impl>();
  impl->path = path;
  impl->display_path = display_path.empty() ? path : std::move(display_path);
  // O_NONBLOCK so that naming a FIFO fails below instead of hanging in open().
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK));
  if (!fd.valid()) {
    const int e = errno;
    return fail_errno(e, "{}: {}", impl->display_path, std::strerror(e));
  }
  struct stat st;
  if (::fstat(fd.get(), &st) != 0) {
    const int e = errno;
    return fail_errno(e, "{}: {}", impl->display_path, std::strerror(e));
  }
  if (S_ISDIR(st.st_mode)) return fail_errno(EISDIR, "{}", impl->err("is a directory"));
  if (!S_ISREG(st.st_mode)) return fail("{}", impl->err("not a regular file"));
  impl->file_size = static_cast<uint64_t>(st.st_size);

  impl->elf.reset(elf_begin(fd.get(), ELF_C_READ_MMAP, nullptr));
  if (!impl->elf || elf_kind(impl->elf.get()) != ELF_K_ELF) {
    uint8_t head[EI_NIDENT] = {};
    const ssize_t n = ::pread(fd.get(), head, sizeof head, 0);
    const std::span<const uint8_t> h(head, n > 0 ? static_cast<size_t>(n) : 0);
    return fail("{}", impl->err(not_elf_reason(h, impl->file_size)));
  }
  // The whole file is mapped (or, if mapping failed, read) now, so the descriptor can go: a
  // tracer holding one ElfFile per mapped library must not hold as many descriptors.
  if (elf_cntl(impl->elf.get(), ELF_C_FDREAD) != 0) {
    return fail("{}", impl->err("cannot read file: " + elf_error()));
  }
  elf_cntl(impl->elf.get(), ELF_C_FDDONE);
  auto loaded = impl->load();
  if (!loaded) return tl::unexpected(loaded.error());
  return ElfFile(std::move(impl));
}

Result<ElfFile> ElfFile::from_memory(std::vector<uint8_t> bytes, std::string display_path) {
  init_libelf();
  auto impl = std::make_unique<Impl>();
  impl->path = display_path;
  impl->display_path = std::move(display_path);
  impl->memory = std::move(bytes);
  impl->file_size = impl->memory.size();
  if (impl->memory.empty()) return fail("{}", impl->err("empty file, not an ELF file"));
  impl->elf.reset(elf_memory(reinterpret_cast<char*>(impl->memory.data()), impl->memory.size()));
  if (!impl->elf || elf_kind(impl->elf.get()) != ELF_K_ELF) {
    const std::span<const uint8_t> h =
        std::span<const uint8_t>(impl->memory).first(std::min<size_t>(EI_NIDENT, impl->file_size));
    return fail("{}", impl->err(not_elf_reason(h, impl->file_size)));
  }
  auto loaded = impl->load();
  if (!loaded) return tl::unexpected(loaded.error());
  return ElfFile(std::move(impl));
}

Elf* ElfFile::libelf() const {
  return impl_->elf.get();
}

const std::string& ElfFile::path() const {
  return impl_->path;
}
const std::string& ElfFile::display_path() const {
  return impl_->display_path;
}
bool ElfFile::is_64bit() const {
  return impl_->ehdr.e_ident[EI_CLASS] == ELFCLASS64;
}
uint16_t ElfFile::machine() const {
  return impl_->ehdr.e_machine;
}
uint16_t ElfFile::type() const {
  return impl_->ehdr.e_type;
}
bool ElfFile::is_pie() const {
  return impl_->pie;
}
bool ElfFile::is_shared_library() const {
  return impl_->ehdr.e_type == ET_DYN && !impl_->pie;
}

const std::vector<ElfSection>& ElfFile::sections() const {
  return impl_->sections;
}

std::optional<ElfSection> ElfFile::section(std::string_view name) const {
  for (const auto& s : impl_->sections) {
    if (s.name == name) return s;
  }
  return std::nullopt;
}

Result<std::span<const uint8_t>> ElfFile::section_data(const ElfSection& s) const {
  std::lock_guard lock(impl_->mu);
  return impl_->data_locked(s);
}

const std::vector<ElfSegment>& ElfFile::segments() const {
  return impl_->segments;
}

std::optional<uint64_t> ElfFile::vaddr_to_offset(uint64_t vaddr) const {
  // Only file-backed bytes have an offset: .bss (memsz beyond filesz) cannot be probed.
  for (const auto& seg : impl_->segments) {
    if (seg.type != PT_LOAD || vaddr < seg.vaddr) continue;
    const uint64_t delta = vaddr - seg.vaddr;
    if (delta < seg.filesz) return seg.offset + delta;
  }
  return std::nullopt;
}

std::optional<uint64_t> ElfFile::offset_to_vaddr(uint64_t offset) const {
  for (const auto& seg : impl_->segments) {
    if (seg.type != PT_LOAD || offset < seg.offset) continue;
    const uint64_t delta = offset - seg.offset;
    if (delta < seg.filesz) return seg.vaddr + delta;
  }
  return std::nullopt;
}

uint64_t ElfFile::base_vaddr() const {
  std::optional<uint64_t> lowest;
  uint64_t align = 0;
  for (size_t i = 0; i < impl_->segments.size(); ++i) {
    const auto& seg = impl_->segments[i];
    if (seg.type != PT_LOAD || (lowest && seg.vaddr >= *lowest)) continue;
    lowest = seg.vaddr;
    align = impl_->segment_align[i];
  }
  if (!lowest) return 0;
  if (align > 1 && (align & (align - 1)) == 0) return *lowest & ~(align - 1);
  return *lowest;
}

std::optional<std::string> ElfFile::build_id() const {
  return impl_->build_id;
}

Result<std::vector<ElfSymbol>> ElfFile::symbols() const {
  std::lock_guard lock(impl_->mu);
  Elf* elf = impl_->elf.get();
  std::vector<ElfSymbol> out;
  for (const auto& s : impl_->sections) {
    if (s.type != SHT_SYMTAB && s.type != SHT_DYNSYM) continue;
    Elf_Scn* scn = elf_getscn(elf, s.index);
    GElf_Shdr sh;
    if (scn == nullptr || gelf_getshdr(scn, &sh) == nullptr) continue;
    Elf_Data* data = elf_getdata(scn, nullptr);
    if (data == nullptr) {
      if (sh.sh_size == 0) continue;
      return fail("{}", impl_->err(fmt::format("symbol table {}: {}", s.name, elf_error())));
    }
    const size_t entsize = gelf_fsize(elf, ELF_T_SYM, 1, EV_CURRENT);
    if (entsize == 0) continue;
    const size_t count = data->d_size / entsize;
    const SymbolSource source = s.type == SHT_SYMTAB ? SymbolSource::Symtab : SymbolSource::Dynsym;
    out.reserve(out.size() + count);
    // Entry 0 is the reserved null symbol, not a symbol.
    for (size_t i = 1; i < count; ++i) {
      GElf_Sym sym;
      if (gelf_getsym(data, static_cast<int>(i), &sym) == nullptr) break;
      ElfSymbol e;
      const char* name = elf_strptr(elf, sh.sh_link, sym.st_name);
      if (name) e.name = name;
      e.addr = sym.st_value;
      e.size = sym.st_size;
      e.binding = symbol_binding(sym.st_info);
      e.kind = symbol_kind(sym.st_info);
      e.source = source;
      e.defined = sym.st_shndx != SHN_UNDEF;
      out.push_back(std::move(e));
    }
  }
  return out;
}

Result<std::vector<ElfNote>> ElfFile::notes(std::string_view owner) const {
  std::lock_guard lock(impl_->mu);
  return impl_->notes_locked(owner);
}

std::span<const uint8_t> ElfFile::Impl::code_locked(size_t i, const ElfSection& s, uint64_t start,
                                                    uint64_t len) const {
  auto [it, added] = code.try_emplace(i);
  CodeSection& c = it->second;
  if (added) {
    c.fd = UniqueFd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
    void* m = mmap(nullptr, s.size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m != MAP_FAILED) {
      c.base = static_cast<uint8_t*>(m);
      c.size = s.size;
      c.read.assign((s.size + kCodePiece - 1) / kCodePiece, false);
    }
  }
  if (c.base == nullptr || !c.fd.valid()) return {};
  len = std::min(len, c.size - start);
  for (uint64_t piece = start / kCodePiece; len > 0 && piece <= (start + len - 1) / kCodePiece;
       ++piece) {
    if (c.read[piece]) continue;
    const uint64_t at = piece * kCodePiece, n = std::min(kCodePiece, c.size - at);
    uint64_t done = 0;
    while (done < n) {
      ssize_t r = ::pread(c.fd.get(), c.base + at + done, n - done,
                          static_cast<off_t>(s.offset + at + done));
      if (r <= 0) return {};
      done += static_cast<uint64_t>(r);
    }
    c.read[piece] = true;
  }
  return {c.base + start, len};
}

std::span<const uint8_t> ElfFile::code_bytes(uint64_t addr, uint64_t len) const {
  const auto& all = sections();
  for (size_t i = 0; i < all.size(); ++i) {
    const auto& s = all[i];
    if (!(s.flags & SHF_EXECINSTR) || s.type == SHT_NOBITS) continue;
    if (addr < s.addr || addr - s.addr >= s.size) continue;
    uint64_t start = addr - s.addr;
    if (!impl_->memory.empty() || (s.flags & SHF_COMPRESSED)) {
      auto d = section_data(s);
      if (!d || start >= d->size()) return {};
      return d->subspan(start, std::min<uint64_t>(len, d->size() - start));
    }
    std::lock_guard lock(impl_->mu);
    return impl_->code_locked(i, s, start, len);
  }
  return {};
}

bool ElfFile::read_code(uint64_t addr, uint64_t len, std::vector<uint8_t>& out) const {
  for (const auto& s : sections()) {
    if (!(s.flags & SHF_EXECINSTR) || s.type == SHT_NOBITS) continue;
    if (addr < s.addr || addr - s.addr >= s.size) continue;
    const uint64_t start = addr - s.addr;
    len = std::min(len, s.size - start);
    if (!impl_->memory.empty() || (s.flags & SHF_COMPRESSED)) {
      auto d = section_data(s);
      if (!d || start >= d->size()) return false;
      auto bytes = d->subspan(start, std::min<uint64_t>(len, d->size() - start));
      out.assign(bytes.begin(), bytes.end());
      return true;
    }
    return read_file_range(impl_->path, s.offset + start, len, out);
  }
  return false;
}

std::optional<std::span<const uint8_t>> ElfFile::allocated_bytes(uint64_t addr,
                                                                 uint64_t len) const {
  if (!vaddr_to_offset(addr)) return std::nullopt;
  for (const auto& s : sections()) {
    if (!(s.flags & SHF_ALLOC) || s.type == SHT_NOBITS) continue;
    if (addr < s.addr || addr - s.addr >= s.size) continue;
    auto bytes = section_data(s);
    if (!bytes) return std::nullopt;
    const uint64_t start = addr - s.addr;
    if (start > bytes->size() || len > bytes->size() - start) return std::nullopt;
    return bytes->subspan(start, len);
  }
  return std::nullopt;
}

}  // namespace uscope
