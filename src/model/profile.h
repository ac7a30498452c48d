#pragma once
// The profile model every profile output reads (folded stacks, pprof, SVG flame graph, speedscope,
// the top table): pprof's own shape, so that the richest format loses nothing and the others
// derive from it. Samples are stacks of locations; a location is one address in one mapping and
// holds one line per function at that address (more than one when calls were inlined there).
// symbolize/profile_builder.h fills it; sinks only read it (no target memory, no symbol lookups).
#include <sys/types.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace uscope {

// Where a frame's code lives, which the folded and SVG outputs show as a suffix after the name,
// as FlameGraph's stackcollapse-perf does: "_[k]" kernel, "_[j]" JIT code (named by a perf map,
// or Java compiled by C2, a JNI wrapper, a JVM stub); as async-profiler does for Java, "_[1]" a
// method C1 compiled and "_[i]" a method inlined into JIT code. Interpreted: a function of an
// interpreted language (a Python code object, an interpreted Java method), named with its file
// and line in labels.
enum class FrameKind : uint8_t { User, Kernel, Jit, JitC1, Interpreted };

struct ProfileMapping {
  uint64_t start = 0, limit = 0;  // runtime addresses [start, limit) in the sampled process
  uint64_t file_offset = 0;       // of `start` in `file`
  std::string file;               // path as the process mapped it, "[vdso]", "[kernel.kallsyms]"
  std::string build_id;           // lowercase hex, "" when none
  bool has_functions = false;     // some address here was named
  bool has_lines = false;         // some address here has a file:line
};

struct ProfileFunction {
  std::string name;         // what people read: demangled, "[unknown: libfoo.so has no symbols]"
  std::string system_name;  // as in the symbol table (mangled); == name when not mangled
  std::string file;         // source file, "" unless known (--lines)
};

struct ProfileLine {
  uint32_t function = 0;  // index into Profile::functions
  int64_t line = 0;       // 0 when unknown
};

struct ProfileLocation {
  uint64_t address = 0;  // runtime address (a return address, as sampled, for callers)
  uint32_t mapping = 0;  // index into Profile::mappings + 1; 0: no mapping (unmapped, unknown)
  FrameKind kind = FrameKind::User;
  // Innermost first, as pprof orders them: [inlined callee, ..., the function that holds the
  // code]. One entry without inlined frames; never empty (unnamed addresses have one line
  // naming why).
  std::vector<ProfileLine> lines;
};

// What a profile's counts measure: CPU samples (`profile`), nanoseconds threads spent off their
// CPU (--off-cpu), nanoseconds of either (--wall: samples count 1/frequency s each), or bytes
// allocated and not freed (`memleak`: each sample also counts its blocks).
enum class ProfileMeasure : uint8_t { CpuSamples, OffCpuTime, WallTime, LiveBytes };

struct ProfileSample {
  std::vector<uint32_t> locations;  // indices into Profile::locations, leaf (innermost) first
  uint64_t count = 0;   // samples with exactly this stack; nanoseconds when the profile is of time;
                        // bytes outstanding in memleak's
  uint64_t blocks = 0;  // memleak: the blocks outstanding (an estimate when sampled)
  pid_t pid = 0;
  pid_t tid = 0;     // 0 unless the profile is split by thread (--threads)
  std::string comm;  // the process's name (the thread's with --threads)
  // Its user stack reaches the thread's entry point (_start, main, start_thread, clone3, ...):
  // the stack is complete, not cut by a frame the unwinder could not walk.
  bool complete = false;
  bool user_stack_missing = false;    // no user stack could be taken (see losses)
  bool kernel_stack_missing = false;  // no kernel stack could be taken (see losses)
};

struct Profile {
  std::vector<ProfileMapping> mappings;
  std::vector<ProfileFunction> functions;
  std::vector<ProfileLocation> locations;
  std::vector<ProfileSample> samples;

  ProfileMeasure measure = ProfileMeasure::CpuSamples;
  uint64_t frequency_hz = 0;  // sampling frequency asked for (-F); 0 without CPU samples
  // memleak --sample-bytes: one block followed per this many bytes allocated on average, so that
  // the bytes and blocks are estimates; 0: every block was followed.
  uint64_t sample_bytes = 0;
  int64_t start_unix_ns = 0;  // when sampling began (wall clock)
  int64_t duration_ns = 0;    // how long it sampled
  bool user_frames = true;    // -K leaves them out
  bool kernel_frames = true;  // -U leaves them out

  // Every loss by cause, with a stable name ("user_stack_failed", "stack_collided",
  // "map_full", ...): printed in the summary and kept in formats that have room for it.
  std::vector<std::pair<std::string, uint64_t>> losses;

  // Sum of the samples' counts.
  uint64_t total_samples() const;
  // Counts are nanoseconds (off-CPU, wall), not samples.
  bool counts_time() const {
    return measure == ProfileMeasure::OffCpuTime || measure == ProfileMeasure::WallTime;
  }
  bool counts_bytes() const { return measure == ProfileMeasure::LiveBytes; }
  // Distinct processes among the samples.
  size_t process_count() const;
  // Samples whose stack is complete (ProfileSample::complete), summed.
  uint64_t complete_samples() const;
  // A location's line as a frame label for folded stacks and flame graphs: the function name
  // with the kind's suffix ("do_syscall_64_[k]", "Interpreter_[j]"); `inlined`: a line before
  // the location's last (a call inlined into the code), "_[i]" in JIT code.
  std::string frame_label(const ProfileLine& line, FrameKind kind, bool inlined = false) const;
};

}  // namespace uscope
