// libFuzzer target: the planner's recipes run by the reference recipe machine
// (plan/recipe_interpreter.h). Input: a `trace` spec line, a USDT argument-spec line (used when
// the spec is u:), then bytes that are both the registers and the target memory. An accepted spec
// must compile to a recipe the BPF side runs without a limit broken: never dropped as malformed,
// every emitted payload decoding by the probe's fields within TRACE_MAX_DATA. An input starting
// with 0xff is a raw uscope_recipe instead, run for memory safety of the machine itself.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>

#include "discover/usdt.h"
#include "plan/probe_spec.h"
#include "plan/recipe.h"
#include "plan/recipe_interpreter.h"

namespace {

using namespace uscope;

constexpr uint64_t kMemoryBase = 0x10000;

[[noreturn]] void broken(const char* what, std::string_view spec) {
  std::fprintf(stderr, "recipe_fuzz: %s: %.*s\n", what, static_cast<int>(spec.size()), spec.data());
  __builtin_trap();
}

std::string_view line(std::string_view& rest) {
  size_t nl = rest.find('\n');
  std::string_view l = rest.substr(0, nl);
  rest = nl == std::string_view::npos ? std::string_view() : rest.substr(nl + 1);
  return l;
}

// Register i is the i-th u64 of the bytes; one whose top byte is zero points into the memory
// (base + its low 16 bits), so that dereferences and strings often land.
RecipeInput input_of(std::string_view bytes) {
  RecipeInput in;
  for (size_t i = 0; i < TRACE_NUM_REGS; ++i) {
    uint64_t v = 0;
    if (bytes.size() >= 8 * (i + 1)) std::memcpy(&v, bytes.data() + 8 * i, 8);
    in.regs[i] = (v >> 56) ? v : kMemoryBase + (v & 0xffff);
  }
  in.pid = 100;
  in.tid = 101;
  in.cpu = 1;
  in.uid = 0;
  in.comm = bytes.substr(0, std::min<size_t>(bytes.size(), 8));
  in.read = [bytes](uint64_t addr, void* dst, size_t len) {
    if (addr < kMemoryBase || addr - kMemoryBase > bytes.size() ||
        len > bytes.size() - (addr - kMemoryBase))
      return false;
    std::memcpy(dst, bytes.data() + (addr - kMemoryBase), len);
    return true;
  };
  return in;
}

void check_recipe(const uscope_recipe& r, std::string_view spec) {
  if (r.n_ops > TRACE_MAX_OPS) broken("more ops than TRACE_MAX_OPS", spec);
  bool reads_entry = false;
  for (uint32_t i = 0; i < r.n_ops; ++i) {
    const uscope_op& o = r.ops[i];
    if (o.code == TOP_END || o.code >= TOP_NUM_OPS) broken("END or unknown op inside", spec);
    if (o.code == TOP_REG && o.a >= TRACE_NUM_REGS) broken("register out of pt_regs", spec);
    if ((o.code == TOP_STREQ || o.code == TOP_COMMEQ) && o.a + o.b > TRACE_POOL - 1)
      broken("string constant past the pool", spec);
    if (o.code == TOP_EMIT_STR && (o.imm < 0 || o.imm > kMaxStringBytes))
      broken("string size past kMaxStringBytes", spec);
    reads_entry |= o.code == TOP_ENTRY;
  }
  // Without NEEDS_ENTRY a return with no recorded entry would read a previous event's slots.
  if (reads_entry && !(r.flags & TRACE_F_NEEDS_ENTRY)) broken("$entry without NEEDS_ENTRY", spec);
}

void run_compiled(std::string_view spec_text, std::string_view usdt_args, std::string_view bytes) {
  auto spec = parse_probe_spec(spec_text);
  if (!spec) return;
  UsdtLocation loc;
  loc.addr = loc.offset = 0x1130;
  loc.args_text = std::string(usdt_args);
  if (auto args = parse_usdt_args(usdt_args))
    loc.args = *args;
  else
    loc.args_error = args.error();
  SiteContext site;
  site.kind = spec->kind;
  site.site_addr = 0x1130;
  if (spec->kind == ProbeKind::Usdt) site.usdt = &loc;
  site.cc = !bytes.empty() && (bytes[0] & 1) ? &uscope::go_register_convention()
                                             : &uscope::sysv_convention();
  site.capture_stack = !bytes.empty() && (bytes[0] & 2);
  site.symbol_address = [](const std::string& name) -> std::optional<uint64_t> {
    if (name.empty() || name[0] == '_') return std::nullopt;
    return 0x4000 + name.size() * 8;
  };
  auto compiled = compile_probe(*spec, site, 7);
  if (!compiled) return;
  check_recipe(compiled->main, spec_text);
  size_t emits = 0;
  for (uint32_t i = 0; i < compiled->main.n_ops; ++i)
    emits += compiled->main.ops[i].code == TOP_EMIT || compiled->main.ops[i].code == TOP_EMIT_STR ||
             compiled->main.ops[i].code == TOP_EMIT_COMM;
  if (emits != compiled->fields.size()) broken("emits differ from output fields", spec_text);

  RecipeInput in = input_of(bytes);
  if (compiled->entry) {
    check_recipe(*compiled->entry, spec_text);
    RecipeRun saved = interpret_recipe(*compiled->entry, in);
    if (saved.outcome != RecipeOutcome::SavedEntry) broken("entry half did not save", spec_text);
    in.entry = saved.slots;
  }
  RecipeRun run = interpret_recipe(compiled->main, in);
  if (run.outcome == RecipeOutcome::Malformed) broken("dropped as malformed", spec_text);
  if (run.ops_run > compiled->main.n_ops) broken("ran more ops than the recipe has", spec_text);
  if (run.outcome != RecipeOutcome::Emitted) return;
  if (run.payload.size() > TRACE_MAX_DATA) broken("payload past TRACE_MAX_DATA", spec_text);
  auto values = decode_payload(compiled->fields, run.payload);
  if (!values) broken(values.error().message.c_str(), spec_text);
  for (const auto& v : *values)
    if (v.text.size() > kMaxStringBytes) broken("string past kMaxStringBytes", spec_text);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view rest(reinterpret_cast<const char*>(data), size);
  if (!rest.empty() && static_cast<uint8_t>(rest[0]) == 0xff) {
    rest.remove_prefix(1);
    uscope_recipe r{};
    std::memcpy(&r, rest.data(), std::min(rest.size(), sizeof(r)));
    rest.remove_prefix(std::min(rest.size(), sizeof(r)));
    RecipeRun run = interpret_recipe(r, input_of(rest));
    if (run.payload.size() > TRACE_MAX_DATA) broken("payload past TRACE_MAX_DATA", "raw recipe");
    return 0;
  }
  std::string_view spec = line(rest);
  std::string_view usdt_args = line(rest);
  run_compiled(spec, usdt_args, rest);
  return 0;
}
