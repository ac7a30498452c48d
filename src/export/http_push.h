#pragma once
// Pushes to the URLs the agent's config names (Pyroscope's /ingest, an OTLP collector's
// /v1/metrics) with libcurl, on a thread of their own: a slow or dead receiver never stalls the
// event loop. The queue is bounded: when it is full the oldest payload is dropped and counted.
// Only http:// and https:// (with the system's CAs) are allowed, and redirects are not followed,
// so uscope sends nothing to a URL its config does not name.
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "util/result.h"

namespace uscope {

struct PushPart {  // one part of a multipart/form-data body
  std::string name, filename, content_type, data;
};

struct PushRequest {
  std::string url;  // the whole URL, query included
  std::string content_type;
  std::string body;  // or, when parts is not empty, a multipart/form-data body
  std::vector<PushPart> parts;
  std::vector<std::string> headers;  // "Name: value"
};

struct PushReply {
  long status = 0;
  std::string body;
};

// One request now, on the calling thread; the error names the URL and what failed.
Result<PushReply> http_push(const PushRequest& request, std::chrono::milliseconds timeout);

// Checks a push URL from a config: http or https, with a host.
Result<void> check_push_url(const std::string& url);

struct PushCounters {
  uint64_t sent = 0;     // answered 2xx
  uint64_t failed = 0;   // no answer, or not 2xx
  uint64_t dropped = 0;  // the queue was full
  std::string last_error;
};

class Pusher {
 public:
  explicit Pusher(size_t queue_max = 4,
                  std::chrono::milliseconds timeout = std::chrono::seconds(10));
  ~Pusher();  // finishes the request in flight, drops the rest (counted)
  Pusher(const Pusher&) = delete;
  Pusher& operator=(const Pusher&) = delete;

  void push(PushRequest request);
  PushCounters counters() const;
  // Waits until the queue is empty and nothing is in flight (tests, and a clean stop).
  void drain();

 private:
  void run();
  const size_t queue_max_;
  const std::chrono::milliseconds timeout_;
  mutable std::mutex mu_;
  std::condition_variable wake_, idle_;
  std::deque<PushRequest> queue_;
  bool busy_ = false, stopping_ = false;
  PushCounters counters_;
  std::thread worker_;
};

}  // namespace uscope
