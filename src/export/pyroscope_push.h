#pragma once
// A profile pushed to a Pyroscope-compatible server: POST {base}/ingest with the application
// name and labels in the query (name=SERVICE{label=value,...}, from, until, sampleRate,
// spyName) and the pprof in a multipart/form-data part named "profile", as Pyroscope's push API
// takes it (its Go and eBPF clients send the same).
#include <cstdint>
#include <string>

#include "export/http_push.h"
#include "model/metrics.h"

namespace uscope {

struct ProfilePush {
  std::string base_url;     // e.g. http://127.0.0.1:4040
  std::string service;      // service_name: the program's name unless the config says otherwise
  MetricAttributes labels;  // process, executable, pid, container_id, host
  uint64_t from_unix_s = 0, until_unix_s = 0;
  int sample_hz = 0;
  std::string pprof;  // profile.proto bytes, gzip'd or not (Pyroscope takes both)
};

PushRequest pyroscope_request(const ProfilePush& p);

}  // namespace uscope
