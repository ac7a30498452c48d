#include "sink/overhead_output.h"

#include <fmt/format.h>

#include <cmath>

namespace uscope {

const char* const kOverheadHelp =
    "At exit, the probes' cost to the target is estimated and printed (per site with -v): traps "
    "x the measured trap cost of each site's class (emulated or single-stepped, docs/"
    "BENCHMARKS.md), + return-probe hits x the return trampoline's cost, + BPF program runs x "
    "their run time per run from the kernel's BPF stats (turned on for the session; global, "
    "tens of ns per run of any BPF program while on). As a share of the target's CPU time over "
    "the session (/proc/PID/stat, or wait4 for -c); none system-wide. Good to ~25%: printed "
    "with \"≈\" and two significant digits.";

namespace {

double two_digits(double v) {
  if (v <= 0) return 0;
  double scale = std::pow(10.0, std::floor(std::log10(v)) - 1);
  return std::round(v / scale) * scale;
}

std::string trimmed(double v) {
  // Two significant digits: 1.2, 12, 120 (never 120.0 or 1.20).
  return v >= 10 ? fmt::format("{:.0f}", v) : fmt::format("{:.2g}", v);
}

}  // namespace

std::string approx_duration(double ns) {
  double v = two_digits(ns);
  if (v == 0) return "≈ 0";
  if (v < 1e3) return fmt::format("≈ {} ns", trimmed(v));
  if (v < 1e6) return fmt::format("≈ {} µs", trimmed(v / 1e3));
  if (v < 1e9) return fmt::format("≈ {} ms", trimmed(v / 1e6));
  return fmt::format("≈ {} s", trimmed(v / 1e9));
}

std::string approx_share(double share) {
  double pct = share * 100;
  if (pct < 0.01) return "< 0.01%";
  return fmt::format("≈ {}%", trimmed(two_digits(pct)));
}

std::string overhead_summary(const Overhead& o) {
  std::string share;
  if (o.share) {
    share = fmt::format(" ({} of its {} CPU time)", approx_share(*o.share),
                        approx_duration(static_cast<double>(*o.target_cpu_ns)).substr(4));
  } else {
    share = fmt::format(" (no share: {})", o.cpu_note);
  }
  std::string parts = fmt::format("{} traps {}", o.traps, approx_duration(o.trap_ns));
  if (o.single_stepped_traps) parts += fmt::format(" ({} single-stepped)", o.single_stepped_traps);
  if (o.returns) parts += fmt::format(", {} returns {}", o.returns, approx_duration(o.return_ns));
  parts += fmt::format(
      ", BPF {} ({} per run, {})", approx_duration(o.bpf_ns), approx_duration(o.bpf_ns_per_run),
      o.bpf_measured ? "measured by the kernel's BPF stats" : "from the table: " + o.bpf_note);
  std::string note = o.share && !o.cpu_note.empty() ? fmt::format("; {}", o.cpu_note) : "";
  return fmt::format("probes cost {} {}{}: {}{}",
                     o.system_wide ? "the traced processes" : "the target",
                     approx_duration(o.total_ns), share, parts, note);
}

nlohmann::json overhead_json(const Overhead& o) {
  nlohmann::json j = {
      {"total_ns", two_digits(o.total_ns)},
      {"trap_ns", two_digits(o.trap_ns)},
      {"return_ns", two_digits(o.return_ns)},
      {"bpf_ns", two_digits(o.bpf_ns)},
      {"bpf_ns_per_run", two_digits(o.bpf_ns_per_run)},
      {"bpf_measured", o.bpf_measured},
      {"hits", o.hits},
      {"traps", o.traps},
      {"emulated_traps", o.emulated_traps},
      {"single_stepped_traps", o.single_stepped_traps},
      {"returns", o.returns},
      {"approximate", true},
      {"system_wide", o.system_wide},
  };
  if (!o.bpf_note.empty()) j["bpf_note"] = o.bpf_note;
  if (o.target_cpu_ns) {
    j["target_cpu_ns"] = *o.target_cpu_ns;
  } else {
    j["target_cpu_ns"] = nullptr;
  }
  if (o.share) {
    j["share"] = two_digits(*o.share);
  } else {
    j["share"] = nullptr;
  }
  if (!o.cpu_note.empty()) j["cpu_note"] = o.cpu_note;
  return j;
}

void print_overhead_sites(const Overhead& o, std::FILE* out) {
  for (const SiteOverhead& s : o.sites) {
    if (s.site.hits == 0) continue;
    fmt::print(out, "overhead {:<28} {:<6} {:<14} {:>10} hits {:>10} traps  {}\n", s.site.label,
               s.site.retprobe ? "return" : "entry", site_cost_name(s.site.cost), s.site.hits,
               s.traps, approx_duration(s.ns));
  }
}

void print_overhead(const Overhead& o, OutputFormat format, bool verbose, std::FILE* out) {
  if (verbose) print_overhead_sites(o, out);
  if (format == OutputFormat::Json) {
    nlohmann::json j = overhead_json(o);
    j["kind"] = "overhead";
    fmt::print(out, "{}\n", j.dump());
  } else {
    fmt::print(out, "uscope: {}\n", overhead_summary(o));
  }
}

}  // namespace uscope
