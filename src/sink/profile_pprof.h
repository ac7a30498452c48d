#pragma once
// A profile as pprof's profile.proto, gzipped: what `uscope profile -o x.pb.gz` writes and what
// the agent pushes to Pyroscope or writes to its directory.
#include <string>

#include "model/profile.h"
#include "util/result.h"

namespace uscope {

Result<std::string> pprof_gzip(const Profile& profile);

}  // namespace uscope
