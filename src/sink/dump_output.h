#pragma once
// `uscope dump`'s text: the process and its runtimes, then each thread's heading and its frames,
// as py-spy dump and jstack show them.
#include <string>

#include "model/thread_dump.h"

namespace uscope {

std::string dump_text(const ThreadDump& d);

}  // namespace uscope
