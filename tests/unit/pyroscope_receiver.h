#pragma once
// A Pyroscope stand-in on 127.0.0.1 (libmicrohttpd, its own thread), and an OTLP collector's
// (the raw body kept): takes POST /ingest as Pyroscope's push API does, decodes the query and the
// multipart/form-data body with libmicrohttpd's own post processor (not uscope's code), keeps each
// push and answers 200.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <microhttpd.h>
#include <netinet/in.h>

#include <map>
#include <mutex>
#include <string>
#include <vector>

#include <fmt/core.h>

namespace uscope::test {

struct Ingest {
  std::string path;
  std::map<std::string, std::string> query;  // name, from, until, format, sampleRate, spyName
  std::string content_type;
  std::map<std::string, std::string> parts;  // form field -> its bytes
  std::map<std::string, std::string> filenames;
  std::string body;  // the raw body (an OTLP push's protobuf)
};

class PyroscopeReceiver {
 public:
  PyroscopeReceiver() {
    daemon_ =
        MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ERROR_LOG, 0, nullptr, nullptr,
                         &PyroscopeReceiver::answer, this, MHD_OPTION_SOCK_ADDR,
                         reinterpret_cast<const sockaddr*>(&loopback_), MHD_OPTION_NOTIFY_COMPLETED,
                         &PyroscopeReceiver::completed, this, MHD_OPTION_END);
    EXPECT_NE(daemon_, nullptr);
    if (daemon_) port_ = MHD_get_daemon_info(daemon_, MHD_DAEMON_INFO_BIND_PORT)->port;
  }
  ~PyroscopeReceiver() {
    if (daemon_) MHD_stop_daemon(daemon_);
  }
  PyroscopeReceiver(const PyroscopeReceiver&) = delete;
  PyroscopeReceiver& operator=(const PyroscopeReceiver&) = delete;

  std::string url() const { return fmt::format("http://127.0.0.1:{}", port_); }
  std::vector<Ingest> received() const {
    std::lock_guard lock(mu_);
    return received_;
  }

 private:
  struct Request {
    Ingest ingest;
    MHD_PostProcessor* post = nullptr;
  };

  static MHD_Result part(void* cls, MHD_ValueKind, const char* key, const char* filename,
                         const char*, const char*, const char* data, uint64_t, size_t size) {
    auto* r = static_cast<Request*>(cls);
    r->ingest.parts[key].append(data, size);
    if (filename) r->ingest.filenames[key] = filename;
    return MHD_YES;
  }

  static MHD_Result query(void* cls, MHD_ValueKind, const char* key, const char* value) {
    static_cast<Ingest*>(cls)->query[key] = value ? value : "";
    return MHD_YES;
  }

  static MHD_Result answer(void* self, MHD_Connection* c, const char* url, const char* method,
                           const char*, const char* upload, size_t* upload_size, void** state) {
    if (*state == nullptr) {  // the headers: set up the body's decoding
      auto* r = new Request;
      r->ingest.path = url;
      MHD_get_connection_values(c, MHD_GET_ARGUMENT_KIND, &query, &r->ingest);
      const char* ct = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Type");
      r->ingest.content_type = ct ? ct : "";
      if (std::string(method) == "POST")
        r->post = MHD_create_post_processor(c, 64 * 1024, &part, r);
      *state = r;
      return MHD_YES;
    }
    auto* r = static_cast<Request*>(*state);
    if (*upload_size != 0) {
      r->ingest.body.append(upload, *upload_size);
      if (r->post) MHD_post_process(r->post, upload, *upload_size);
      *upload_size = 0;
      return MHD_YES;
    }
    auto* receiver = static_cast<PyroscopeReceiver*>(self);
    {
      std::lock_guard lock(receiver->mu_);
      receiver->received_.push_back(r->ingest);
    }
    static const char ok[] = "";
    MHD_Response* reply =
        MHD_create_response_from_buffer(0, const_cast<char*>(ok), MHD_RESPMEM_PERSISTENT);
    const MHD_Result queued = MHD_queue_response(c, MHD_HTTP_OK, reply);
    MHD_destroy_response(reply);
    return queued;
  }

  static void completed(void*, MHD_Connection*, void** state, MHD_RequestTerminationCode) {
    auto* r = static_cast<Request*>(*state);
    if (!r) return;
    if (r->post) MHD_destroy_post_processor(r->post);
    delete r;
    *state = nullptr;
  }

  const sockaddr_in loopback_ = [] {
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    return a;
  }();
  MHD_Daemon* daemon_ = nullptr;
  uint16_t port_ = 0;
  mutable std::mutex mu_;
  std::vector<Ingest> received_;
};

}  // namespace uscope::test
