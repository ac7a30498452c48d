#include "export/pyroscope_push.h"

#include <curl/curl.h>

namespace uscope {
namespace {

// The name's label syntax has no quoting: characters that would end a label are replaced.
std::string label_value(const std::string& v) {
  std::string out = v;
  for (char& c : out)
    if (c == ',' || c == '{' || c == '}' || c == '=' || c == ' ') c = '_';
  return out;
}

std::string escaped(const std::string& s) {
  char* e = curl_easy_escape(nullptr, s.c_str(), static_cast<int>(s.size()));
  std::string out = e ? e : "";
  curl_free(e);
  return out;
}

}  // namespace

PushRequest pyroscope_request(const ProfilePush& p) {
  std::string name = label_value(p.service) + "{service_name=" + label_value(p.service);
  for (const auto& [k, v] : p.labels) name += "," + k + "=" + label_value(v);
  name += "}";
  std::string base = p.base_url;
  while (base.ends_with('/')) base.pop_back();
  PushRequest r;
  r.url =
      fmt::format("{}/ingest?name={}&from={}&until={}&format=pprof&sampleRate={}&spyName=uscope",
                  base, escaped(name), p.from_unix_s, p.until_unix_s, p.sample_hz);
  r.parts.push_back({"profile", "profile.pprof", "application/octet-stream", p.pprof});
  return r;
}

}  // namespace uscope
