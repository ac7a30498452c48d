#include "plan/go_park_plan.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <string_view>
#include <tuple>

#include "bpf/profile.h"
#include "discover/process.h"
#include "plan/go_stat_plan.h"
#include "plan/site_placement.h"
#include "util/names.h"

namespace uscope {

namespace {

constexpr uint64_t kGoStringSize = 16;  // {data *byte, len int}
constexpr uint64_t kMaxReasons = 256;   // waitReason is a uint8
constexpr uint64_t kMaxReasonLength = 256;
// waitReason 1 and 2 since Go 1.11: what finds the table in a stripped program.
constexpr std::string_view kReason1 = "GC assist marking";
constexpr std::string_view kReason2 = "IO wait";

struct GoString {
  uint64_t data = 0, len = 0;
};

GoString go_string_at(const uint8_t* entry) {
  GoString s;
  std::memcpy(&s.data, entry, sizeof s.data);
  std::memcpy(&s.len, entry + 8, sizeof s.len);
  return s;
}

// The string's text, when `read` has all of it (a reader may return fewer bytes than asked).
std::optional<std::string> text_of(const GoReadAt& read, GoString s) {
  if (s.data == 0 || s.len > kMaxReasonLength) return std::nullopt;
  auto bytes = read(s.data, s.len);
  if (!bytes || bytes->size() != s.len) return std::nullopt;
  return std::string(reinterpret_cast<const char*>(bytes->data()), bytes->size());
}

}  // namespace

std::vector<std::string> go_wait_reasons(const GoReadAt& read, uint64_t table, uint64_t size) {
  std::vector<std::string> out;
  const uint64_t n = std::min(size / kGoStringSize, kMaxReasons);
  auto bytes = read(table, n * kGoStringSize);
  if (!bytes || bytes->size() != n * kGoStringSize) return out;
  for (uint64_t i = 0; i < n; ++i) {
    GoString s = go_string_at(bytes->data() + i * kGoStringSize);
    out.push_back(s.len == 0 ? "" : text_of(read, s).value_or(""));
  }
  return out;
}

std::optional<std::pair<uint64_t, uint64_t>> find_go_wait_reasons(std::span<const uint8_t> data,
                                                                  uint64_t data_addr,
                                                                  const GoReadAt& read) {
  auto reads = [&](size_t at, std::string_view want) {
    GoString s = go_string_at(data.data() + at);
    if (s.len != want.size()) return false;
    auto text = text_of(read, s);
    return text && *text == want;
  };
  for (size_t at = 0; at + 3 * kGoStringSize <= data.size(); at += 8) {
    if (!reads(at + kGoStringSize, kReason1) || !reads(at + 2 * kGoStringSize, kReason2)) continue;
    uint64_t count = 3;
    for (; count < kMaxReasons && at + (count + 1) * kGoStringSize <= data.size(); ++count) {
      GoString s = go_string_at(data.data() + at + count * kGoStringSize);
      if (s.len == 0 || !text_of(read, s)) break;
    }
    return std::pair{data_addr + at, count * kGoStringSize};
  }
  return std::nullopt;
}

namespace {

Result<ParkedGoroutineLayout> parked_layout(ObjectCache& cache, PlannedObject& go,
                                            const Process& process) {
  const MappedObject* main = process.main_object();
  std::optional<uint64_t> bias = main ? load_bias(*main, go.elf) : std::nullopt;
  if (!bias) return fail("its load address in process {} is not known", process.pid());
  auto census = goroutine_layout(cache, go);  // runtime.allgs, and atomicstatus
  if (!census) return tl::unexpected(census.error());
  auto types = go_types_of(go);
  if (!types) return tl::unexpected(types.error());
  ParkedGoroutineLayout l;
  l.allgs = census->allgs + *bias;
  l.status = census->status_offset;
  auto sched = (*types)->field("runtime.g", "sched");
  if (!sched) return tl::unexpected(sched.error());
  for (auto [field, at] : {std::pair{"sp", &l.sched_sp}, std::pair{"pc", &l.sched_pc},
                           std::pair{"bp", &l.sched_bp}}) {
    auto f = (*types)->field("runtime.gobuf", field);
    if (!f) return tl::unexpected(f.error());
    *at = sched->offset + f->offset;
  }
  auto reason = (*types)->field("runtime.g", "waitreason");
  if (!reason) return tl::unexpected(reason.error());
  l.waitreason = reason->offset;
  return l;
}

}  // namespace

Result<GoParkPlan> plan_go_parks(ObjectCache& cache, const Process* process) {
  GoParkPlan plan;
  auto program = cache.get("");
  if (!program || !(*program)->is_go) return plan;
  PlannedObject& go = **program;
  if (go.go && !go.go->register_abi())
    return fail(
        "{} was built by {}: uscope follows goroutines by the registers of Go's register "
        "ABI (Go 1.17 or later), where the goroutine is in r14",
        file_name(go.ref.display_path), go.go->version);
  auto symbols = cache.symbols(go);
  if (!symbols) return tl::unexpected(symbols.error());
  // gopark reads r14 (the goroutine) and cl (why); execute rax (the goroutine).
  for (auto [name, fn, reads] :
       {std::tuple{"runtime.gopark", uint32_t{GO_SCHED_PARK}, SiteReads{{"r14", "rcx"}, false}},
        std::tuple{"runtime.execute", uint32_t{GO_SCHED_EXECUTE}, SiteReads{{"rax"}, false}}}) {
    auto f = functions_named(**symbols, name);
    if (f.size() != 1)
      return fail(
          "{} is a Go program without one {}: uscope follows goroutines through Go's "
          "scheduler functions, as Go 1.17 to 1.22 name them",
          file_name(go.ref.display_path), name);
    SitePlacement placed;
    AttachSite site = entry_probe_site(go, *f[0], reads, placed);
    site.cookie = fn;
    plan.sites.push_back(std::move(site));
  }
  const GoReadAt read = [&elf = go.elf](uint64_t addr, uint64_t len) {
    return elf.allocated_bytes(addr, len);
  };
  std::optional<std::pair<uint64_t, uint64_t>> table;
  if (auto all = go.elf.symbols())
    for (const ElfSymbol& s : *all)
      if (s.name == "runtime.waitReasonStrings" && s.defined && s.size > 0) {
        table = std::pair{s.addr, s.size};
        break;
      }
  if (auto data = go.elf.section(".data"); !table && data)
    if (auto bytes = go.elf.section_data(*data))
      table = find_go_wait_reasons(*bytes, data->addr, read);
  if (table) plan.wait_reasons = go_wait_reasons(read, table->first, table->second);
  if (process) {
    if (auto l = parked_layout(cache, go, *process))
      plan.parked = *l;
    else
      plan.no_parked = l.error().message;
  }
  return plan;
}

}  // namespace uscope
