#include "model/runtime_threads.h"

namespace uscope {

void ThreadLedger::started(const RuntimeThread& t) {
  ++starts_;
  running_[t.native] = t;
}

bool ThreadLedger::ended(const RuntimeThread& t) {
  ++ends_;
  if (running_.erase(t.native)) return true;
  ++older_;
  return false;
}

}  // namespace uscope
