#pragma once
// What the probes cost the traced program, estimated at the end of a session:
//
//   overhead = sum over attach addresses of  traps x trap cost of the site's class
//                                            (plan/site_cost.h: HitCosts, measured by bench/)
//            + return-probe hits x the return trampoline's cost
//            + BPF program runs x the programs' own run time per run (the kernel's BPF stats
//              for this session; the table's value for the program when stats are off)
//
// Sites on one address share one trap (latency's entry and return halves; two probes on one
// instruction), so traps per address are the largest hit count among its sites. The share is
// that total over the target's CPU time during the session (the trap and the BPF program run on
// the target's thread and are charged to it as system time), so it is the part of the target's
// CPU time spent in probes. The table is good to ~25% and the CPU time to a clock tick: the
// printed numbers say "≈" and carry two significant digits.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "model/bpf_run_time.h"
#include "plan/attach_site.h"
#include "plan/site_cost.h"

namespace uscope {

struct OverheadSite {
  std::string label;   // the function or probe as the command shows it
  std::string object;  // display path
  std::string path;    // attach address: sites with the same (path, offset) share a trap
  uint64_t offset = 0;
  bool retprobe = false;
  SiteCost cost = SiteCost::Emulated;
  uint64_t hits = 0;  // runs of the BPF program at this site
};

struct OverheadInput {
  std::vector<OverheadSite> sites;
  // Measured run time of the session's programs; nullopt: stats were off (why in bpf_note).
  std::optional<BpfRunTime> bpf;
  double table_bpf_ns_per_run = 0;  // used when `bpf` is nullopt
  std::string bpf_note;
  // The target's CPU time over the session; nullopt: no share, for the reason in cpu_note.
  std::optional<uint64_t> target_cpu_ns;
  std::string cpu_note;
  bool system_wide = false;  // every process that hits the sites, not one target
};

struct SiteOverhead {
  OverheadSite site;
  uint64_t traps = 0;  // traps charged to this site (0 when it shares another's)
  double ns = 0;
};

struct Overhead {
  uint64_t hits = 0;   // BPF program runs at the sites
  uint64_t traps = 0;  // uprobe traps: emulated + single_stepped
  uint64_t emulated_traps = 0;
  uint64_t single_stepped_traps = 0;
  uint64_t returns = 0;  // return-probe hits
  double trap_ns = 0;
  double return_ns = 0;
  double bpf_ns = 0;
  double total_ns = 0;
  double bpf_ns_per_run = 0;
  bool bpf_measured = false;
  std::string bpf_note;
  std::optional<uint64_t> target_cpu_ns;
  std::optional<double> share;  // total_ns / target_cpu_ns
  std::string cpu_note;
  bool system_wide = false;
  std::vector<SiteOverhead> sites;  // in input order
};

Overhead estimate_overhead(const OverheadInput& in);

// An attach site as the model sees it, with the BPF runs its counter recorded.
OverheadSite overhead_site(const AttachSite& a, std::string label, SiteCost cost, uint64_t hits);

}  // namespace uscope
