// The line every profile ends with. The complete share is rounded down, so that a profile with
// one cut stack never reads "100.0%".
#include <fmt/core.h>

#include <optional>
#include <regex>
#include <string_view>

#include "model/unwind_ends.h"
#include "sink/profile_sink.h"
#include "sink/profile_stacks.h"
#include "sink/profile_writers.h"

namespace uscope {

namespace {

// Nanoseconds with a unit a person reads: "2.50 s", "12.3 ms", "4.1 us", "80 ns".
std::string time_text(uint64_t ns) {
  const double v = static_cast<double>(ns);
  if (v >= 1e9) return fmt::format("{:.2f} s", v / 1e9);
  if (v >= 1e6) return fmt::format("{:.1f} ms", v / 1e6);
  if (v >= 1e3) return fmt::format("{:.1f} us", v / 1e3);
  return fmt::format("{} ns", ns);
}

// What a summary's total says it measures.
std::string measured(const Profile& profile, uint64_t total) {
  switch (profile.measure) {
    case ProfileMeasure::CpuSamples:
      return fmt::format("{} sample{}", grouped(total), total == 1 ? "" : "s");
    case ProfileMeasure::OffCpuTime:
      return count_text(profile, total) + " off-CPU";
    case ProfileMeasure::WallTime:
      return count_text(profile, total) + " of wall-clock time";
    case ProfileMeasure::LiveBytes:
      break;
  }
  uint64_t blocks = 0;
  for (const auto& s : profile.samples) blocks += s.blocks;
  const char* about = profile.sample_bytes ? "~" : "";
  return fmt::format("{}{} outstanding in {}{} block{}{}", about, count_text(profile, total), about,
                     grouped(blocks), blocks == 1 ? "" : "s",
                     profile.sample_bytes ? fmt::format(" (estimated: one block per {} sampled)",
                                                        bytes_text(profile.sample_bytes))
                                          : "");
}

// Loss causes (ProfileProgram::losses()' stable names) as a person reads them after their count:
// what was lost, then why. A cause not listed keeps its name, '_' read as ' '.
std::string loss_text(std::string_view cause, uint64_t n) {
  struct Known {
    std::string_view cause, one, many, why;
  };
  static constexpr Known kKnown[] = {
      {"user_stack_failed", "user stack", "user stacks", "walk failed"},
      {"kernel_stack_failed", "kernel stack", "kernel stacks", "walk failed"},
      {"user_stacks_full", "user stack", "user stacks", "stack table full"},
      {"kernel_stack_collided", "kernel stack", "kernel stacks", "collided"},
      {"stack_unreadable", "stack", "stacks", "unreadable"},
      {"map_full", "sample", "samples", "count table full"},
      {"process_record_lost", "process record", "process records", "ring full"},
      {"process_record_short", "process record", "process records", "short"},
      {"walk_requests_lost", "unwinder request", "unwinder requests", "ring full"},
      {"walk_request_short", "unwinder request", "unwinder requests", "short"},
      {"walk_python_no_thread", "stack", "stacks", "no Python thread state: native frames only"},
      {"walk_python_read_failed", "Python stack", "Python stacks",
       "a frame unreadable: cut short there"},
      {"walk_python_unmatched", "Python frame", "Python frames",
       "their eval call not met: put at the stack's outer end"},
      {"walk_java_no_blob", "Java frame", "Java frames",
       "no code blob found for the pc: walked by frame pointer"},
      {"walk_java_no_return", "Java stack", "Java stacks",
       "a compiled frame's return address not found: cut short there"},
      {"walk_java_bad_interpreter_frame", "Java stack", "Java stacks",
       "an interpreted frame unreadable: cut short there"},
      {"java_code_gone", "Java frame", "Java frames",
       "the nmethod that ran flushed and its memory reused before it was read: unnamed"},
      {"python_code_gone", "Python code object", "Python code objects",
       "freed before it was read, as a module's body is once run: unnamed"},
      {"java_method_reused", "Java method", "Java methods",
       "their memory reused by another after their class was unloaded: interpreted frames "
       "unnamed"},
      {"off_cpu_threads_full", "wait", "waits", "thread table full: not counted"},
      {"off_cpu_unseen", "wait", "waits", "began before the profile: not counted"},
      {"off_cpu_short", "wait", "waits", "shorter than --min-block: left out"},
      {"go_parked_full", "goroutine wait", "goroutine waits",
       "parked-goroutine table full: not counted"},
      {"alloc_blocks_full", "block", "blocks", "block table full: not followed"},
      {"alloc_rows_full", "block", "blocks", "stack table full: not followed"},
      {"alloc_thread_lost", "allocator call", "allocator calls",
       "no per-thread storage: not followed"},
  };
  // A time lost, in nanoseconds: "off_cpu_unseen_ns".
  if (cause.ends_with("_ns")) {
    std::string what(cause.substr(0, cause.size() - 3));
    for (char& c : what)
      if (c == '_') c = ' ';
    return fmt::format("{} ({})", time_text(n), what);
  }
  // How user-stack walks that did not reach the thread's entry stopped (unwind.bpf.h).
  if (cause.starts_with("walk_"))
    if (const char* why = unwind_end_text(cause.substr(5)))
      return fmt::format("{} user stack{} ({})", grouped(n), n == 1 ? "" : "s", why);
  for (const auto& k : kKnown)
    if (k.cause == cause)
      return fmt::format("{} {} ({})", grouped(n), n == 1 ? k.one : k.many, k.why);
  std::string text(cause);
  for (char& c : text)
    if (c == '_') c = ' ';
  return fmt::format("{} {}", grouped(n), text);
}

}  // namespace

std::string grouped(uint64_t n) {
  std::string digits = std::to_string(n), out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

std::string bytes_text(uint64_t bytes) {
  const double v = static_cast<double>(bytes);
  if (v >= 1024.0 * 1024 * 1024) return fmt::format("{:.2f} GiB", v / (1024.0 * 1024 * 1024));
  if (v >= 1024.0 * 1024) return fmt::format("{:.2f} MiB", v / (1024.0 * 1024));
  if (v >= 10 * 1024.0) return fmt::format("{:.1f} KiB", v / 1024.0);
  return fmt::format("{} B", grouped(bytes));
}

std::string count_text(const Profile& profile, uint64_t count) {
  if (profile.counts_bytes()) return bytes_text(count);
  return profile.counts_time() ? time_text(count) : grouped(count);
}

std::string profile_summary(const Profile& profile) {
  uint64_t total = profile.total_samples();
  size_t processes = profile.process_count();
  std::string line = measured(profile, total);
  line += fmt::format(" from {} process{}", processes, processes == 1 ? "" : "es");
  if (profile.duration_ns > 0)
    line += fmt::format(" in {:.1f} s", static_cast<double>(profile.duration_ns) / 1e9);
  if (profile.frequency_hz > 0) line += fmt::format(" at {} Hz", profile.frequency_hz);

  std::string lost;
  for (const auto& [cause, n] : profile.losses) {
    if (n == 0) continue;
    lost += lost.empty() ? "" : ", ";
    lost += loss_text(cause, n);
  }
  line += "; lost: " + (lost.empty() ? std::string("0") : lost);

  line += "; complete stacks: ";
  if (!profile.user_frames) {
    line += "n/a (-K: no user frames)";
  } else if (total == 0) {
    line += profile.measure == ProfileMeasure::OffCpuTime  ? "n/a (no thread waited)"
            : profile.measure == ProfileMeasure::LiveBytes ? "n/a (nothing outstanding)"
                                                           : "n/a (no samples)";
  } else {
    uint64_t permille = profile.complete_samples() * 1000 / total;
    line +=
        fmt::format("{}.{}% (reach _start/main/start_thread/clone3)", permille / 10, permille % 10);
  }
  return line;
}

std::optional<std::string> debug_package_hint(const Profile& profile) {
  // Debian ships the interpreter's symbols apart (python3.X-dbg: debug files found by build-id);
  // without them its static functions have no name. Other packages' -dbgsym need a repository
  // most machines do not have, so only the interpreter's are named.
  static const std::regex kPython(R"((lib)?python(3\.[0-9]+)[^/]*$)");
  uint64_t total = profile.total_samples(), unnamed = 0;
  std::string package;
  for (const ProfileSample& s : profile.samples) {
    for (uint32_t id : s.locations) {
      const ProfileLocation& loc = profile.locations[id];
      if (loc.kind != FrameKind::User || loc.mapping == 0) continue;
      std::smatch m;
      const std::string& file = profile.mappings[loc.mapping - 1].file;
      if (!std::regex_search(file, m, kPython)) break;  // the innermost user frame is not Python's
      const ProfileLine& line = loc.lines.back();
      if (line.function < profile.functions.size() &&
          is_unknown_function(profile.functions[line.function])) {
        unnamed += s.count;
        package = "python" + m[2].str() + "-dbg";
      }
      break;
    }
  }
  if (total == 0 || unnamed * 20 < total) return std::nullopt;  // under 5%: not worth a line
  return fmt::format(
      "{}% of samples stop in the Python interpreter's unnamed functions: `apt install {}` "
      "names them (its debug files, found by build-id)",
      unnamed * 100 / total, package);
}

void print_profile_summary(const Profile& profile, std::FILE* out) {
  fmt::print(out, "uscope: {}\n", profile_summary(profile));
  if (auto hint = debug_package_hint(profile)) fmt::print(out, "uscope: {}\n", *hint);
  std::fflush(out);
}

}  // namespace uscope
