#pragma once
// The probes' cost to the target (collect/overhead.h) as people and programs read it: one summary
// line, a JSON object, and per site for -v. Every number is an estimate: two significant digits
// and "≈", never more digits than the model has.
#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>

#include "model/overhead.h"
#include "sink/output_format.h"

namespace uscope {

// The model in a few lines, for the --help of the commands that print it.
extern const char* const kOverheadHelp;

// "≈ 41 ms", "≈ 410 ns", "≈ 1.2 s": two significant digits.
std::string approx_duration(double ns);
// "≈ 38%", "≈ 0.41%", "< 0.01%".
std::string approx_share(double share);

// "probes cost the target ≈ 41 ms (≈ 38% of its 108 ms CPU time): ...", without "uscope: ".
std::string overhead_summary(const Overhead& o);
// Stable field names; times in ns rounded to two significant digits.
nlohmann::json overhead_json(const Overhead& o);
// One line per site with hits, for -v.
void print_overhead_sites(const Overhead& o, std::FILE* out);
// What count and latency print at exit on `out` (stderr; their stdout holds only table rows): the
// sites with -v, then the summary line, or for OutputFormat::Json one {"kind":"overhead",...} line.
void print_overhead(const Overhead& o, OutputFormat format, bool verbose, std::FILE* out);

}  // namespace uscope
