#pragma once
// A managed runtime's threads as `uscope threads` sees them (bcc's uthreads): each start and end
// the runtime's probes mark, with the thread's name and ids; the threads started while uscope
// watched and still running at its stop, and the ends of threads started before it.
#include <cstdint>
#include <map>
#include <string>

namespace uscope {

struct RuntimeThread {
  std::string name;     // the runtime's name for it ("worker-3")
  int64_t id = 0;       // the runtime's own id (Java's Thread.getId()); 0 when it has none
  uint32_t native = 0;  // the kernel's thread id
  bool daemon = false;
};

class ThreadLedger {
 public:
  void started(const RuntimeThread& t);
  // False for a thread whose start came before the probes went in (counted).
  bool ended(const RuntimeThread& t);
  uint64_t starts() const { return starts_; }
  uint64_t ends() const { return ends_; }
  uint64_t ends_of_older_threads() const { return older_; }
  // Started while watched and not ended: by native id.
  const std::map<uint32_t, RuntimeThread>& running() const { return running_; }

 private:
  std::map<uint32_t, RuntimeThread> running_;
  uint64_t starts_ = 0, ends_ = 0, older_ = 0;
};

}  // namespace uscope
