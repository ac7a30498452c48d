#include "agent/agent_config.h"

#include <yaml-cpp/yaml.h>

#include <charconv>
#include <fstream>
#include <set>
#include <sstream>

#include "export/http_push.h"
#include "util/names.h"

namespace uscope {
namespace {

// Errors carry the place: "agent.yaml:7:5: ...".
struct Place {
  const std::string& source;
  template <class... Args>
  tl::unexpected<Error> at(const YAML::Node& n, fmt::format_string<Args...> f,
                           Args&&... args) const {
    const YAML::Mark m = n.Mark();
    return tl::unexpected(Error{fmt::format("{}:{}:{}: {}", source, m.line + 1, m.column + 1,
                                            fmt::format(f, std::forward<Args>(args)...)),
                                0});
  }
};

Result<void> known_keys(const Place& p, const YAML::Node& map, const std::string& where,
                        const std::vector<std::string>& keys) {
  if (!map.IsMap()) return p.at(map, "{} must be a mapping of {}", where, join(keys));
  for (const auto& kv : map) {
    // YAML allows any node as a key ("? [a, b]: 1"); ours are all plain names.
    if (!kv.first.IsScalar())
      return p.at(kv.first, "keys in {} must be plain names; known: {}", where, join(keys));
    const std::string k = kv.first.Scalar();
    if (std::find(keys.begin(), keys.end(), k) != keys.end()) continue;
    auto close = closest_names(k, keys, 1);
    return p.at(kv.first, "unknown key '{}' in {}{}; known: {}", k, where,
                close.empty() ? "" : fmt::format(" (did you mean '{}'?)", close[0]), join(keys));
  }
  return {};
}

Result<std::string> text(const Place& p, const YAML::Node& n, const std::string& key) {
  if (!n.IsScalar()) return p.at(n, "'{}' must be a single value", key);
  return n.as<std::string>();
}

Result<bool> boolean(const Place& p, const YAML::Node& n, const std::string& key) {
  bool b = false;
  if (!n.IsScalar() || !YAML::convert<bool>::decode(n, b))
    return p.at(n, "'{}' must be true or false, not '{}'", key, n.IsScalar() ? n.Scalar() : "");
  return b;
}

Result<long> integer(const Place& p, const YAML::Node& n, const std::string& key, long lo,
                     long hi) {
  long v = 0;
  const std::string s = n.IsScalar() ? n.Scalar() : "";
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc() || end != s.data() + s.size() || v < lo || v > hi)
    return p.at(n, "'{}' must be a whole number from {} to {}, not '{}'", key, lo, hi, s);
  return v;
}

// "10s", "500ms", "2m", or a number of seconds.
Result<std::chrono::milliseconds> duration(const Place& p, const YAML::Node& n,
                                           const std::string& key) {
  const std::string s = n.IsScalar() ? n.Scalar() : "";
  double v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  const std::string unit(end, s.data() + s.size());
  double scale = unit == "ms" ? 1 : unit == "s" || unit.empty() ? 1000 : unit == "m" ? 60000 : 0;
  if (s.empty() || ec != std::errc() || scale == 0 || v <= 0)
    return p.at(n, "'{}' must be a duration such as 10s, 500ms or 2m, not '{}'", key, s);
  const auto ms = std::chrono::milliseconds(static_cast<long>(v * scale));
  if (ms < std::chrono::seconds(1)) return p.at(n, "'{}' must be at least 1s", key);
  return ms;
}

Result<std::string> push_url(const Place& p, const YAML::Node& n, const std::string& key) {
  auto s = text(p, n, key);
  if (!s) return s;
  if (auto ok = check_push_url(*s); !ok) return p.at(n, "{}", ok.error().message);
  return s;
}

Result<ProcessSelector> selector(const Place& p, const YAML::Node& n) {
  if (auto ok = known_keys(p, n, "a select entry",
                           {"exe", "service", "go_http", "cgroup", "container", "port"});
      !ok)
    return tl::unexpected(ok.error());
  ProcessSelector s;
  s.line = n.Mark().line + 1;
  for (const auto& kv : n) {
    const std::string k = kv.first.Scalar();  // known_keys: every key is a scalar
    const YAML::Node& v = kv.second;
    Result<void> r;
    auto set = [&](auto got, auto& field) -> Result<void> {
      if (!got) return tl::unexpected(got.error());
      field = *got;
      return {};
    };
    if (k == "exe") r = set(text(p, v, k), s.exe);
    if (k == "service") r = set(text(p, v, k), s.service);
    if (k == "go_http") r = set(boolean(p, v, k), s.go_http);
    if (k == "cgroup") r = set(text(p, v, k), s.cgroup);
    if (k == "container") r = set(text(p, v, k), s.container);
    if (k == "port") {
      auto port = integer(p, v, k, 1, 65535);
      if (!port) return tl::unexpected(port.error());
      s.port = static_cast<int>(*port);
    }
    if (!r) return tl::unexpected(r.error());
  }
  if (s.exe.empty() && !s.go_http && s.cgroup.empty() && s.container.empty() && s.port == 0)
    return p.at(n, "a select entry needs one of exe, go_http, cgroup, container or port");
  return s;
}

}  // namespace

AgentConfig default_agent_config() {
  AgentConfig c;
  c.listen = *parse_listen_address("127.0.0.1:9464");
  return c;
}

Result<AgentConfig> parse_agent_config(const std::string& yaml, const std::string& source) {
  const Place p{source};
  YAML::Node root;
  try {
    root = YAML::Load(yaml);
  } catch (const YAML::Exception& e) {
    return fail("{}:{}:{}: not valid YAML: {}", source, e.mark.line + 1, e.mark.column + 1, e.msg);
  }
  AgentConfig c = default_agent_config();
  if (root.IsNull()) return c;
  if (auto ok = known_keys(p, root, "the config",
                           {"listen", "select", "metrics", "profiles", "otlp", "limits"});
      !ok)
    return tl::unexpected(ok.error());
  if (auto n = root["listen"]) {
    auto s = text(p, n, "listen");
    if (!s) return tl::unexpected(s.error());
    auto a = parse_listen_address(*s);
    if (!a) return p.at(n, "{}", a.error().message);
    c.listen = *a;
  }
  if (auto n = root["select"]) {
    if (!n.IsSequence()) return p.at(n, "'select' must be a list of selectors (- exe: ...)");
    for (const auto& e : n) {
      auto s = selector(p, e);
      if (!s) return tl::unexpected(s.error());
      c.select.push_back(*s);
    }
  }
  if (auto m = root["metrics"]) {
    if (auto ok = known_keys(p, m, "metrics", {"http", "go_runtime", "runtime", "functions"}); !ok)
      return tl::unexpected(ok.error());
    if (auto n = m["http"]) {
      auto b = boolean(p, n, "http");
      if (!b) return tl::unexpected(b.error());
      c.http_metrics = *b;
    }
    if (auto n = m["go_runtime"]) {
      auto b = boolean(p, n, "go_runtime");
      if (!b) return tl::unexpected(b.error());
      c.go_runtime_metrics = *b;
    }
    if (auto n = m["runtime"]) {
      auto b = boolean(p, n, "runtime");
      if (!b) return tl::unexpected(b.error());
      c.runtime_metrics = *b;
    }
    if (auto n = m["functions"]) {
      if (!n.IsSequence()) return p.at(n, "'functions' must be a list of FILE:FUNCTION");
      for (const auto& f : n) {
        auto s = text(p, f, "functions");
        if (!s) return tl::unexpected(s.error());
        c.functions.push_back(*s);
      }
    }
  }
  if (auto m = root["profiles"]) {
    if (auto ok = known_keys(p, m, "profiles", {"hz", "period", "push", "directory"}); !ok)
      return tl::unexpected(ok.error());
    c.profiles = true;
    if (auto n = m["hz"]) {
      auto hz = integer(p, n, "hz", 1, 1000);
      if (!hz) return tl::unexpected(hz.error());
      c.profile_hz = static_cast<int>(*hz);
    }
    if (auto n = m["period"]) {
      auto d = duration(p, n, "period");
      if (!d) return tl::unexpected(d.error());
      c.profile_period = *d;
    }
    if (auto n = m["push"]) {
      auto u = push_url(p, n, "push");
      if (!u) return tl::unexpected(u.error());
      c.profile_push = *u;
    }
    if (auto n = m["directory"]) {
      auto d = text(p, n, "directory");
      if (!d) return tl::unexpected(d.error());
      c.profile_directory = *d;
    }
    if (c.profile_push.empty() && c.profile_directory.empty())
      return p.at(m, "profiles need somewhere to go: 'push: URL' or 'directory: PATH'");
  }
  if (auto m = root["otlp"]) {
    if (auto ok = known_keys(p, m, "otlp", {"endpoint", "period"}); !ok)
      return tl::unexpected(ok.error());
    if (!m["endpoint"]) return p.at(m, "otlp needs 'endpoint: URL' (e.g. http://127.0.0.1:4318)");
    auto u = push_url(p, m["endpoint"], "endpoint");
    if (!u) return tl::unexpected(u.error());
    c.otlp_endpoint = *u;
    if (auto n = m["period"]) {
      auto d = duration(p, n, "period");
      if (!d) return tl::unexpected(d.error());
      c.otlp_period = *d;
    }
  }
  if (auto m = root["limits"]) {
    if (auto ok = known_keys(p, m, "limits", {"series", "stacks"}); !ok)
      return tl::unexpected(ok.error());
    if (auto n = m["series"]) {
      auto v = integer(p, n, "series", 1, 10'000'000);
      if (!v) return tl::unexpected(v.error());
      c.max_series = static_cast<size_t>(*v);
    }
    if (auto n = m["stacks"]) {
      auto v = integer(p, n, "stacks", 1, 10'000'000);
      if (!v) return tl::unexpected(v.error());
      c.max_stacks = static_cast<size_t>(*v);
    }
  }
  return c;
}

Result<AgentConfig> load_agent_config(const std::string& path) {
  std::ifstream in(path);
  if (!in) return fail_errno(errno, "cannot read the config {}: {}", path, std::strerror(errno));
  std::stringstream s;
  s << in.rdbuf();
  return parse_agent_config(s.str(), path);
}

}  // namespace uscope
