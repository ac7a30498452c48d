#include "export/profile_export.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstring>

#include "export/pyroscope_push.h"
#include "model/profile_period.h"
#include "sink/profile_pprof.h"

namespace uscope {

std::string profile_file_name(const std::string& service, pid_t pid, int64_t from_unix_s) {
  std::string name = service.empty() ? "unknown" : service;
  for (char& c : name)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '_' && c != '-') c = '_';
  if (name[0] == '.') name[0] = '_';  // neither hidden nor "..": a name in the directory
  return fmt::format("{}-{}-{}.pb.gz", name, pid, from_unix_s);
}

ProfileExport::ProfileExport(const ProfileExportOptions& options, ProfileSourceOf source_of)
    : options_(options), source_of_(std::move(source_of)) {}

Result<std::unique_ptr<ProfileExport>> ProfileExport::open(const ProfileExportOptions& options,
                                                           ProfileSourceOf source_of) {
  std::unique_ptr<ProfileExport> e(new ProfileExport(options, std::move(source_of)));
  if (!options.push_url.empty()) {
    if (auto r = check_push_url(options.push_url); !r) return tl::unexpected(r.error());
    e->pusher_ = std::make_unique<Pusher>(options.push_queue);
  }
  if (!options.directory.empty()) {
    const char* dir = options.directory.c_str();
    if (mkdir(dir, 0750) != 0 && errno != EEXIST)
      return fail_errno(errno, "cannot make the profile directory {}: {}", options.directory,
                        std::strerror(errno));
    e->directory_.reset(::open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!e->directory_.valid())
      return fail_errno(errno, "cannot open the profile directory {}: {} (give a directory)",
                        options.directory, std::strerror(errno));
  }
  return e;
}

Result<void> ProfileExport::write_file(const std::string& name, const std::string& bytes) {
  // O_EXCL and O_NOFOLLOW: never over a file that is there, never through a link planted there.
  UniqueFd fd(openat(directory_.get(), name.c_str(),
                     O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0640));
  auto failed = [&](int e) {
    return fail_errno(e, "cannot write {}/{}: {}", options_.directory, name, std::strerror(e));
  };
  if (!fd.valid()) return failed(errno);
  if (fchmod(fd.get(), 0640) != 0) return failed(errno);  // whatever the umask
  for (size_t at = 0; at < bytes.size();) {
    const ssize_t n = write(fd.get(), bytes.data() + at, bytes.size() - at);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int e = n < 0 ? errno : EIO;
      unlinkat(directory_.get(), name.c_str(), 0);  // no half profile left behind
      return failed(e);
    }
    at += static_cast<size_t>(n);
  }
  return {};
}

Result<void> ProfileExport::export_period(Profile period) {
  ++counters_.periods;
  const StackCap cap = cap_stacks(period, options_.max_stacks);
  counters_.stacks_dropped += cap.stacks_dropped;
  counters_.samples_dropped += cap.samples_dropped;
  const int64_t from_s = period.start_unix_ns / 1'000'000'000;
  const int64_t until_s = (period.start_unix_ns + period.duration_ns + 999'999'999) / 1'000'000'000;
  std::optional<Error> first_failure;
  auto failed = [&](const Error& e) {
    counters_.last_error = e.message;
    if (!first_failure) first_failure = e;
  };
  for (const Profile& p : split_by_process(period)) {
    const ProfileSample& first = p.samples.front();
    ProfileSource source = source_of_(first.pid, first.comm);
    if (source.service.empty()) source.service = first.comm;
    auto bytes = pprof_gzip(p);
    if (!bytes) {
      failed(bytes.error());
      continue;
    }
    ++counters_.profiles;
    if (pusher_)
      pusher_->push(pyroscope_request(
          {options_.push_url, source.service, source.labels, static_cast<uint64_t>(from_s),
           static_cast<uint64_t>(until_s), static_cast<int>(p.frequency_hz), *bytes}));
    if (directory_.valid()) {
      if (auto r = write_file(profile_file_name(source.service, first.pid, from_s), *bytes); r) {
        ++counters_.files_written;
      } else {
        ++counters_.files_failed;
        failed(r.error());
      }
    }
  }
  if (first_failure) return tl::unexpected(*first_failure);
  return {};
}

PushCounters ProfileExport::push_counters() const {
  return pusher_ ? pusher_->counters() : PushCounters{};
}

void ProfileExport::drain() {
  if (pusher_) pusher_->drain();
}

}  // namespace uscope
