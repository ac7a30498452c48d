#include "cli/trace_options.h"

#include <fmt/core.h>

#include <cstdio>
#include <fstream>

#include "plan/recipe.h"
#include "symbolize/symbol_text.h"

namespace uscope::cli {

namespace {

Expr equals(Expr::Op what, int64_t value) {
  Expr lhs, rhs, e;
  lhs.op = what;
  rhs.op = Expr::Op::Int;
  rhs.value = value;
  e.op = Expr::Op::Binary;
  e.op_text = "==";
  e.children = {std::move(lhs), std::move(rhs)};
  return e;
}

void and_into(std::optional<Expr>& predicate, Expr filter) {
  if (!predicate) {
    predicate = std::move(filter);
    return;
  }
  Expr both;
  both.op = Expr::Op::Binary;
  both.op_text = "&&";
  both.column = predicate->column;
  both.children = {std::move(filter), std::move(*predicate)};
  predicate = std::move(both);
}

}  // namespace

Result<void> apply_filters(std::vector<ProbeSpec>& specs, const BccFilters& f) {
  if (f.string_size && (*f.string_size < 1 || *f.string_size > kMaxStringBytes))
    return fail("-Z {}: a string size goes from 1 to {} bytes", *f.string_size, kMaxStringBytes);
  for (auto& spec : specs) {
    if (f.tid) and_into(spec.predicate, equals(Expr::Op::Tid, *f.tid));
    if (f.uid) and_into(spec.predicate, equals(Expr::Op::Uid, *f.uid));
    if (!f.string_size) continue;
    // bcc's -Z: the most bytes read of any string printed. str(ptr, N) keeps its own N.
    for (auto& arg : spec.args) {
      if (arg.op != Expr::Op::Str || arg.children.size() != 1) continue;
      Expr len;
      len.op = Expr::Op::Int;
      len.value = *f.string_size;
      len.column = arg.column;
      arg.children.push_back(std::move(len));
    }
  }
  return {};
}

Result<pid_t> process_of_thread(pid_t tid) {
  std::ifstream status(fmt::format("/proc/{}/status", tid));
  for (std::string line; std::getline(status, line);) {
    if (line.rfind("Tgid:", 0) == 0) return static_cast<pid_t>(std::stol(line.substr(5)));
  }
  return fail("-L {}: no such thread (no /proc/{}/status)", tid, tid);
}

bool comm_contains(const uscope_event& ev, std::string_view name) {
  size_t n = 0;
  while (n < sizeof(ev.comm) && ev.comm[n]) ++n;
  return std::string_view(ev.comm, n).find(name) != std::string_view::npos;
}

EventSymbols::EventSymbols(const TracePlan& plan, bool user_stack, bool kernel_stack)
    : user_stack_(user_stack), kernel_stack_(kernel_stack), needs_kernel_(kernel_stack) {
  for (const auto& p : plan.probes) {
    std::vector<SymbolField> f;
    for (size_t i = 0; i < p.spec.conversions.size(); ++i) {
      char c = p.spec.conversions[i].conv;
      if (c == 'U' || c == 'K') f.push_back({i, c == 'K'});
      needs_kernel_ |= c == 'K';
    }
    fields_.push_back(std::move(f));
  }
}

Result<void> EventSymbols::load_kernel_symbols() {
  if (!needs_kernel_ || kernel_) return {};
  auto k = KernelSymbols::load();
  if (!k) return tl::unexpected(k.error());
  if (k->size() == 0)
    fmt::print(stderr,
               "uscope: /proc/kallsyms shows no addresses (kernel.kptr_restrict): kernel symbols "
               "show as [unknown: no symbols] [kernel]\n");
  kernel_ = std::move(*k);
  return {};
}

Frame EventSymbols::kernel_frame(uint64_t address) const {
  if (kernel_) return kernel_->frame(address);
  Frame unknown;  // kallsyms not read: the frame still says why it has no name
  unknown.address = address;
  unknown.miss = FrameMiss::NoSymbols;
  unknown.object = "kernel";
  return unknown;
}

bool EventSymbols::needs_user_symbols() const {
  bool user_symbols = user_stack_;
  for (const auto& f : fields_)
    for (const auto& s : f) user_symbols |= !s.kernel;
  return user_symbols;
}

void EventSymbols::remember_process(pid_t pid) {
  if (needs_user_symbols()) symbols_.symbolizer().remember(pid);
}

Result<void> EventSymbols::follow_exits(pid_t pid, const std::string& started_as) {
  if (needs_user_symbols()) symbols_.follow_exits(pid, started_as, "%U and -U");
  return {};
}

void EventSymbols::catch_up() {
  symbols_.catch_up();
}

EventStacks EventSymbols::resolve(DecodedEvent& ev) {
  const auto pid = static_cast<pid_t>(ev.header.tgid);
  if (ev.header.probe_id < fields_.size()) {
    for (const auto& f : fields_[ev.header.probe_id]) {
      if (f.value >= ev.n_values) continue;
      DecodedValue& v = ev.values[f.value];
      Frame frame =
          f.kernel ? kernel_frame(v.number) : symbols_.symbolizer().symbolize(pid, v.number);
      v.symbol = symbol_text(frame);
    }
  }
  EventStacks stacks;
  if (user_stack_) {
    // A stack seen before costs a lookup; a new one is symbolized (which allocates) once.
    stacks.user = &user_stacks_.frames(symbols_.symbolizer(), pid, ev.user_stack);
  }
  if (kernel_stack_) {
    kernel_frames_.clear();
    for (uint64_t a : ev.kernel_stack) kernel_frames_.push_back(kernel_frame(a));
    stacks.kernel = &kernel_frames_;
  }
  return stacks;
}

}  // namespace uscope::cli
