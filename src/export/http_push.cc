#include "export/http_push.h"

#include <curl/curl.h>

#include <memory>

namespace uscope {
namespace {

size_t append(char* data, size_t size, size_t n, void* out) {
  static_cast<std::string*>(out)->append(data, size * n);
  return size * n;
}

// curl_global_init is not thread-safe: done once, before any thread pushes.
void init_curl() {
  static const bool done = [] { return curl_global_init(CURL_GLOBAL_DEFAULT) == CURLE_OK; }();
  (void)done;
}

}  // namespace

Result<void> check_push_url(const std::string& url) {
  init_curl();
  std::unique_ptr<CURLU, decltype(&curl_url_cleanup)> u(curl_url(), curl_url_cleanup);
  if (curl_url_set(u.get(), CURLUPART_URL, url.c_str(), 0) != CURLUE_OK)
    return fail("'{}' is not a URL; use e.g. http://127.0.0.1:4040", url);
  char* scheme = nullptr;
  curl_url_get(u.get(), CURLUPART_SCHEME, &scheme, 0);
  const std::string s = scheme ? scheme : "";
  curl_free(scheme);
  if (s != "http" && s != "https")
    return fail("'{}': uscope pushes over http:// or https:// only", url);
  return {};
}

Result<PushReply> http_push(const PushRequest& r, std::chrono::milliseconds timeout) {
  init_curl();
  std::unique_ptr<CURL, decltype(&curl_easy_cleanup)> c(curl_easy_init(), curl_easy_cleanup);
  if (!c) return fail("cannot push to {}: libcurl could not start", r.url);
  PushReply reply;
  char error[CURL_ERROR_SIZE] = "";
  curl_slist* headers = nullptr;
  for (const std::string& h : r.headers) headers = curl_slist_append(headers, h.c_str());
  if (r.parts.empty() && !r.content_type.empty())
    headers = curl_slist_append(headers, ("Content-Type: " + r.content_type).c_str());
  headers = curl_slist_append(headers, "Expect:");  // no 100-continue round trip
  std::unique_ptr<curl_slist, decltype(&curl_slist_free_all)> own_headers(headers,
                                                                          curl_slist_free_all);
  std::unique_ptr<curl_mime, decltype(&curl_mime_free)> mime(nullptr, curl_mime_free);
  curl_easy_setopt(c.get(), CURLOPT_URL, r.url.c_str());
  curl_easy_setopt(c.get(), CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(c.get(), CURLOPT_FOLLOWLOCATION, 0L);
  curl_easy_setopt(c.get(), CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(c.get(), CURLOPT_TIMEOUT_MS, static_cast<long>(timeout.count()));
  curl_easy_setopt(c.get(), CURLOPT_ERRORBUFFER, error);
  curl_easy_setopt(c.get(), CURLOPT_HTTPHEADER, headers);
  curl_easy_setopt(c.get(), CURLOPT_USERAGENT, "uscope-agent");
  curl_easy_setopt(c.get(), CURLOPT_WRITEFUNCTION, append);
  curl_easy_setopt(c.get(), CURLOPT_WRITEDATA, &reply.body);
  if (!r.parts.empty()) {
    mime.reset(curl_mime_init(c.get()));
    for (const PushPart& p : r.parts) {
      curl_mimepart* part = curl_mime_addpart(mime.get());
      curl_mime_name(part, p.name.c_str());
      if (!p.filename.empty()) curl_mime_filename(part, p.filename.c_str());
      if (!p.content_type.empty()) curl_mime_type(part, p.content_type.c_str());
      curl_mime_data(part, p.data.data(), p.data.size());
    }
    curl_easy_setopt(c.get(), CURLOPT_MIMEPOST, mime.get());
  } else {
    curl_easy_setopt(c.get(), CURLOPT_POSTFIELDS, r.body.data());
    curl_easy_setopt(c.get(), CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(r.body.size()));
  }
  if (CURLcode rc = curl_easy_perform(c.get()); rc != CURLE_OK)
    return fail("cannot push to {}: {}", r.url, error[0] ? error : curl_easy_strerror(rc));
  curl_easy_getinfo(c.get(), CURLINFO_RESPONSE_CODE, &reply.status);
  return reply;
}

Pusher::Pusher(size_t queue_max, std::chrono::milliseconds timeout)
    : queue_max_(queue_max), timeout_(timeout) {
  init_curl();
  worker_ = std::thread([this] { run(); });
}

Pusher::~Pusher() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
    counters_.dropped += queue_.size();
    queue_.clear();
  }
  wake_.notify_all();
  worker_.join();
}

void Pusher::push(PushRequest request) {
  {
    std::lock_guard lock(mu_);
    if (queue_.size() >= queue_max_) {
      queue_.pop_front();
      ++counters_.dropped;
    }
    queue_.push_back(std::move(request));
  }
  wake_.notify_one();
}

PushCounters Pusher::counters() const {
  std::lock_guard lock(mu_);
  return counters_;
}

void Pusher::drain() {
  std::unique_lock lock(mu_);
  idle_.wait(lock, [&] { return queue_.empty() && !busy_; });
}

void Pusher::run() {
  std::unique_lock lock(mu_);
  for (;;) {
    wake_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
    if (queue_.empty()) return;  // stopping
    PushRequest r = std::move(queue_.front());
    queue_.pop_front();
    busy_ = true;
    lock.unlock();
    auto reply = http_push(r, timeout_);
    lock.lock();
    busy_ = false;
    if (!reply) {
      ++counters_.failed;
      counters_.last_error = reply.error().message;
    } else if (reply->status < 200 || reply->status > 299) {
      ++counters_.failed;
      counters_.last_error =
          fmt::format("{} answered {}: {}", r.url, reply->status, reply->body.substr(0, 200));
    } else {
      ++counters_.sent;
    }
    if (queue_.empty()) idle_.notify_all();
    if (stopping_) return;
  }
}

}  // namespace uscope
