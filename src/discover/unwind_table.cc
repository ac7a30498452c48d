// An object's unwind table from its CFI and, for Go, its SP deltas.
#include "discover/unwind_table.h"

#include <elf.h>

#include <algorithm>

#include "discover/gopclntab.h"
#include "discover/unwind_spans.h"

namespace uscope {

namespace {

// Sorted, without overlaps: where spans overlap, the lower-addressed one keeps the overlap
// (stable for equal starts: the one read first).
std::vector<UnwindSpan> disjoint(std::vector<UnwindSpan> spans) {
  std::stable_sort(spans.begin(), spans.end(),
                   [](const UnwindSpan& a, const UnwindSpan& b) { return a.start < b.start; });
  std::vector<UnwindSpan> out;
  uint64_t covered = 0;
  for (auto s : spans) {
    if (!out.empty()) s.start = std::max(s.start, covered);
    if (s.start >= s.end) continue;
    covered = s.end;
    out.push_back(s);
  }
  return out;
}

// The parts of `spans` that `cover` (both disjoint and sorted) leaves uncovered.
std::vector<UnwindSpan> uncovered(const std::vector<UnwindSpan>& spans,
                                  const std::vector<UnwindSpan>& cover) {
  std::vector<UnwindSpan> out;
  size_t c = 0;
  for (auto s : spans) {
    while (c < cover.size() && cover[c].end <= s.start) ++c;
    for (size_t k = c; k < cover.size() && cover[k].start < s.end && s.start < s.end; ++k) {
      if (cover[k].start > s.start) out.push_back({s.start, cover[k].start, s.rule});
      s.start = std::max(s.start, cover[k].end);
    }
    if (s.start < s.end) out.push_back(s);
  }
  return out;
}

}  // namespace

std::vector<UnwindRow> rows_of_spans(std::vector<UnwindSpan> primary,
                                     std::vector<UnwindSpan> fallback) {
  auto spans = disjoint(std::move(primary));
  if (!fallback.empty()) {
    auto extra = uncovered(disjoint(std::move(fallback)), spans);
    spans.insert(spans.end(), extra.begin(), extra.end());
    std::sort(spans.begin(), spans.end(),
              [](const UnwindSpan& a, const UnwindSpan& b) { return a.start < b.start; });
  }
  std::vector<UnwindRow> rows;
  auto add = [&rows](uint64_t vaddr, const UnwindRule& rule) {
    if (!rows.empty() && rows.back().rule == rule) return;
    if (!rows.empty() && rows.back().vaddr == vaddr) {
      rows.back().rule = rule;  // an empty range: the later row supersedes it
      if (rows.size() > 1 && rows[rows.size() - 2].rule == rule) rows.pop_back();
      return;
    }
    rows.push_back({vaddr, rule});
  };
  uint64_t end = 0;
  for (const auto& s : spans) {
    if (!rows.empty() && end < s.start) add(end, UnwindRule{});
    add(s.start, s.rule);
    end = s.end;
  }
  if (!rows.empty()) add(end, UnwindRule{});
  return rows;
}

Result<UnwindTable> build_unwind_table(const ElfFile& elf, const UnwindBuildOptions& options) {
  if (elf.machine() != EM_X86_64)
    return fail("{}: unwind tables are built for x86-64 objects only (this one is for machine {})",
                elf.display_path(), elf.machine());
  // A Go object's .debug_frame, when it has one, says less than its pcsp (no rbp, no outermost
  // frames): for Go only .eh_frame (cgo's C code) is read.
  auto cfi = cfi_spans(elf, options.debug_file, options.go != nullptr);
  if (!cfi) return tl::unexpected(cfi.error());
  UnwindTable t;
  t.fdes = cfi->fdes;
  t.source = cfi->source;
  std::vector<UnwindSpan> go;
  if (options.go != nullptr) {
    go = go_spans(*options.go, elf);
    t.fdes += options.go->functions().size();
    t.source += t.source.empty() ? ".gopclntab" : " + .gopclntab";
  }
  t.rows = rows_of_spans(std::move(cfi->spans), std::move(go));
  for (const auto& r : t.rows) {
    t.unsupported += r.rule.cfa == UNWIND_CFA_UNSUPPORTED;
    t.signal_frames += r.rule.cfa == UNWIND_CFA_SIGNAL;
  }
  return t;
}

}  // namespace uscope
