#pragma once
// The agent's continuous profiles: each period's profile (model/profile_period.h) capped to
// limits.stacks, split by process, rendered as gzipped pprof and pushed to a Pyroscope-compatible
// server (one push per process: Pyroscope keys a profile by its service name and labels) and/or
// written as DIR/<service>-<pid>-<unix_from>.pb.gz. Files go only into the directory the config
// names (created 0750 if missing), created 0640, never over an existing file or through a link.
#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "export/http_push.h"
#include "model/metrics.h"
#include "model/profile.h"
#include "util/result.h"
#include "util/unique_fd.h"

namespace uscope {

// Whose profile it is: service_name and the labels beside it (process, executable, pid,
// container_id, host), as Pyroscope shows them.
struct ProfileSource {
  std::string service;
  MetricAttributes labels;
};
// The source of a sampled process, by PID and the name it was sampled under (the process may
// have exited since): the agent reads /proc (agent/profile_source.h); tests give their own.
using ProfileSourceOf = std::function<ProfileSource(pid_t pid, const std::string& comm)>;

struct ProfileExportOptions {
  std::string push_url;         // Pyroscope's base URL (http://host:4040); "": no push
  std::string directory;        // "": no files
  size_t max_stacks = 100'000;  // distinct stacks a period keeps (limits.stacks)
  size_t push_queue = 256;      // pushes waiting at most (one per process and period)
};

struct ProfileExportCounters {
  uint64_t periods = 0;
  uint64_t profiles = 0;       // per-process profiles made
  uint64_t files_written = 0;  // into the directory
  uint64_t files_failed = 0;
  uint64_t stacks_dropped = 0;  // over max_stacks, and their samples:
  uint64_t samples_dropped = 0;
  std::string last_error;
};

class ProfileExport {
 public:
  // Checks the URL (http or https) and opens the directory (made 0750 when it is missing, its
  // parent must exist); says which and why when it cannot.
  static Result<std::unique_ptr<ProfileExport>> open(const ProfileExportOptions& options,
                                                     ProfileSourceOf source_of);
  ProfileExport(const ProfileExport&) = delete;
  ProfileExport& operator=(const ProfileExport&) = delete;

  // One period's profile (ProfileSession::period()'s): capped, split, rendered, queued for the push
  // and written. Every process is handled even when one fails; the error names the first failure.
  Result<void> export_period(Profile period);

  const ProfileExportCounters& counters() const { return counters_; }
  // The pusher's sent / failed / dropped (queue full); zero without a push URL.
  PushCounters push_counters() const;
  // Waits for the queued pushes (tests, and a clean stop).
  void drain();

 private:
  ProfileExport(const ProfileExportOptions& options, ProfileSourceOf source_of);
  Result<void> write_file(const std::string& name, const std::string& bytes);

  ProfileExportOptions options_;
  ProfileSourceOf source_of_;
  std::unique_ptr<Pusher> pusher_;
  UniqueFd directory_;
  ProfileExportCounters counters_;
};

// DIR/<service>-<pid>-<unix_from>.pb.gz's name: the service's characters other than letters,
// digits, '.', '_' and '-' (and a leading '.') become '_', so the name stays in the directory.
std::string profile_file_name(const std::string& service, pid_t pid, int64_t from_unix_s);

}  // namespace uscope
