// Where an FDE applies. dwarf_next_cfi hands FDEs over raw: their initial location and address
// range are encoded as the CIE's 'R' augmentation says (.eh_frame: usually DW_EH_PE_pcrel |
// DW_EH_PE_sdata4; .debug_frame: absolute addresses), and libdw has no public decoder for that
// (it decodes them only inside its own FDE lookup). The bytes come from the traced file: every
// read is bounds-checked (fuzz/unwind_table_fuzz.cc).
#include <dwarf.h>

#include <cstring>
#include <optional>

#include "discover/unwind_spans.h"

namespace uscope {

namespace {

class FdeReader {
 public:
  explicit FdeReader(std::span<const uint8_t> b) : b_(b) {}
  size_t pos() const { return pos_; }

  std::optional<uint64_t> fixed(size_t n) {
    if (b_.size() - pos_ < n) return std::nullopt;
    uint64_t v = 0;
    std::memcpy(&v, b_.data() + pos_, n);  // x86-64 objects: little-endian like the host
    pos_ += n;
    return v;
  }
  std::optional<uint64_t> uleb(bool is_signed) {
    uint64_t v = 0;
    for (unsigned shift = 0; shift < 64 && pos_ < b_.size(); shift += 7) {
      uint8_t byte = b_[pos_++];
      v |= uint64_t{byte & 0x7fu} << shift;
      if (!(byte & 0x80)) {
        if (is_signed && shift + 7 < 64 && (byte & 0x40)) v |= ~uint64_t{0} << (shift + 7);
        return v;
      }
    }
    return std::nullopt;
  }
  // A value of DW_EH_PE_* format `encoding & 0x0f`, sign-extended for the signed ones.
  std::optional<uint64_t> value(uint8_t encoding, bool is_64bit) {
    switch (encoding & 0x0f) {
      case DW_EH_PE_absptr:
        return fixed(is_64bit ? 8 : 4);
      case DW_EH_PE_uleb128:
        return uleb(false);
      case DW_EH_PE_sleb128:
        return uleb(true);
      case DW_EH_PE_udata2:
        return fixed(2);
      case DW_EH_PE_udata4:
        return fixed(4);
      case DW_EH_PE_udata8:
      case DW_EH_PE_sdata8:
        return fixed(8);
      case DW_EH_PE_sdata2: {
        auto v = fixed(2);
        if (!v) return std::nullopt;
        return static_cast<uint64_t>(static_cast<int64_t>(static_cast<int16_t>(*v)));
      }
      case DW_EH_PE_sdata4: {
        auto v = fixed(4);
        if (!v) return std::nullopt;
        return static_cast<uint64_t>(static_cast<int64_t>(static_cast<int32_t>(*v)));
      }
      default:
        return std::nullopt;
    }
  }

 private:
  std::span<const uint8_t> b_;
  size_t pos_ = 0;
};

}  // namespace

std::optional<FdeRange> decode_fde_range(std::span<const uint8_t> fde, uint64_t field_vaddr,
                                         uint8_t encoding, bool is_64bit) {
  FdeReader r(fde);
  auto start = r.value(encoding, is_64bit);
  if (!start) return std::nullopt;
  switch (encoding & 0x70) {
    case DW_EH_PE_absptr:
      break;
    case DW_EH_PE_pcrel:
      *start += field_vaddr;
      break;
    default:  // textrel, datarel, funcrel, aligned: not written for x86-64 code
      return std::nullopt;
  }
  if (!is_64bit) *start &= 0xffffffffu;
  // The range is a plain size in the same format, without the application.
  auto size = r.value(encoding & 0x0f, is_64bit);
  if (!size || *size > ~uint64_t{0} - *start) return std::nullopt;
  return FdeRange{*start, *start + *size};
}

std::optional<uint8_t> cie_fde_encoding(const char* augmentation,
                                        std::span<const uint8_t> augmentation_data, bool is_64bit) {
  if (augmentation == nullptr || augmentation[0] != 'z') return DW_EH_PE_absptr;
  FdeReader r(augmentation_data);
  for (const char* a = augmentation + 1; *a != '\0'; ++a) {
    switch (*a) {
      case 'R': {
        auto e = r.fixed(1);
        if (!e) return std::nullopt;
        return static_cast<uint8_t>(*e);
      }
      case 'L':
        if (!r.fixed(1)) return std::nullopt;
        break;
      case 'P': {
        auto e = r.fixed(1);
        if (!e || (*e & 0x70) == DW_EH_PE_aligned || !r.value(static_cast<uint8_t>(*e), is_64bit))
          return std::nullopt;
        break;
      }
      case 'S':
      case 'B':
      case 'G':
        break;
      default:  // an augmentation whose data size is unknown: what follows cannot be read
        return std::nullopt;
    }
  }
  return DW_EH_PE_absptr;
}

}  // namespace uscope
