#pragma once
// Keeps the unwinder's tables (attach/unwind_maps.h) following the processes: the walker's
// requests (a process met without tables, a pc in a mapping it does not know: a dlopen; an exec;
// an exit) are read from its ring, merged, and served between batches of the command's own
// records, through the command's ring reader (one epoll fd for both). And the walk counts: why
// each stack ended, how its frames were found.
#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "attach/unwind_maps.h"
#include "collect/ring_reader.h"
#include "model/unwind_ends.h"
#include "util/result.h"

namespace uscope {

class UnwindFollower {
 public:
  static constexpr std::chrono::milliseconds kReloadInterval{20};

  explicit UnwindFollower(UnwindMaps& maps) : maps_(maps) {}

  // Reads the request ring through `reader` from now on.
  Result<void> listen(RingReader& reader);
  // Or through a reader of its own, read by serve(): for a command with no ring of its own.
  Result<void> listen_alone();
  // Loads (or drops) what the requests read since the last call asked for; a process loaded
  // less than kReloadInterval ago stays pending until then: call serve() at least every
  // kServePeriod.
  void serve();
  static constexpr std::chrono::milliseconds kServePeriod{10};

  // Walks by how they ended and frames by how they were found, by stable name: "entry",
  // "truncated", "fp_chain_end", "unsupported_cfi", "read_failed", "bad_frame", "unloaded",
  // "frames_cfi", "frames_fp", "frames_unloaded", "requests_lost", "request_short", and for
  // Python (bpf/python.h) "frames_python", "python_no_thread", "python_read_failed",
  // "python_unmatched", and for V8 (bpf/v8.h) "frames_v8".
  Result<std::vector<std::pair<std::string, uint64_t>>> walk_counts() const;
  uint64_t reloads() const { return reloads_; }

 private:
  RingReader::Handler handler();

  UnwindMaps& maps_;
  std::optional<RingReader> own_;
  std::set<pid_t> load_, forget_, execed_;
  // When each process was last loaded: a process asks again while a pc stays in no mapping it
  // knows (a broken frame-pointer walk's garbage, a mapping /proc does not show yet), and is
  // reloaded at most every kReloadInterval unless it exec'd.
  std::map<pid_t, std::chrono::steady_clock::time_point> loaded_at_;
  uint64_t reloads_ = 0;
  uint64_t short_records_ = 0;
};

}  // namespace uscope
