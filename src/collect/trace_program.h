#pragma once
// The generic tracing program (trace.bpf.c) loaded with one recipe per attach site, attached, and
// read back: ring-buffer events, per-recipe counters, latency histograms, user stacks.
#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "attach/uprobe_links.h"
#include "bpf/trace.h"
#include "util/result.h"

struct trace;        // the bpftool skeleton
struct ring_buffer;  // libbpf

namespace uscope {

struct RecipeCounters {
  uint64_t hits = 0, emitted = 0, lost = 0, filtered = 0, read_errors = 0, no_entry = 0,
           entry_save_failed = 0, matched = 0;
};

class TraceProgram {
 public:
  // `tgid` 0 traces every process. Uses uprobe_multi links when `use_multi` and available.
  // `ring_bytes` sizes the event ring buffer (a power of two of at least a page; 0 = default).
  // `only_after_exec`: `tgid` is a command uscope forked; no event before its exec.
  static Result<TraceProgram> load(std::span<const uscope_recipe> recipes, pid_t tgid,
                                   bool use_multi, uint32_t ring_bytes = 0,
                                   bool only_after_exec = false);
  TraceProgram(TraceProgram&&) noexcept;
  TraceProgram& operator=(TraceProgram&&) noexcept;
  ~TraceProgram();

  // Each site's cookie is the index of its recipe. With `skip_refused`, sites the kernel cannot
  // probe are left out (see refused()).
  Result<void> attach(const std::vector<AttachSite>& sites, bool skip_refused = false);
  const std::vector<UprobeLinks::Refused>& refused() const { return links_.refused(); }
  void detach() { links_.detach_all(); }
  bool uses_multi() const { return multi_; }
  size_t link_count() const { return links_.link_count(); }

  // Events are handed to `on_event` (header + data_len bytes) from poll()/consume().
  using EventHandler = std::function<void(const uscope_event& ev, std::span<const uint8_t> data)>;
  Result<void> open_events(EventHandler on_event);
  int events_epoll_fd() const;
  // Reads what is in the ring buffer now; returns the number of events.
  Result<int> consume();

  Result<std::vector<RecipeCounters>> counters() const;
  Result<std::vector<uint64_t>> histogram(uint32_t recipe) const;  // TRACE_HIST_BUCKETS
  // User stack addresses of a stack id from an event (innermost first).
  Result<std::vector<uint64_t>> user_stack(int32_t stack_id) const;

 private:
  struct SkelDeleter {
    void operator()(::trace* s) const;
  };
  struct RingDeleter {
    void operator()(ring_buffer* r) const;
  };
  TraceProgram(std::unique_ptr<::trace, SkelDeleter> skel, size_t recipes, pid_t tgid, bool multi);
  static int on_sample(void* ctx, void* data, size_t size);

  std::unique_ptr<::trace, SkelDeleter> skel_;
  size_t n_recipes_ = 0;
  bool multi_ = false;
  UprobeLinks links_;
  std::unique_ptr<EventHandler> handler_;
  std::unique_ptr<ring_buffer, RingDeleter> ring_;
};

}  // namespace uscope
