#include "agent/profile_source.h"

#include <unistd.h>

#include "util/names.h"

namespace uscope {

ProfileSource profile_source(const ProcessFacts& facts, const std::string& service,
                             const std::string& host) {
  ProfileSource s;
  const std::string exe_name(file_name(facts.exe));
  s.service = !service.empty() ? service : !exe_name.empty() ? exe_name : facts.comm;
  s.labels.emplace_back("process", facts.comm);
  if (!facts.exe.empty()) s.labels.emplace_back("executable", facts.exe);
  s.labels.emplace_back("pid", std::to_string(facts.pid));
  if (!facts.container_id.empty()) s.labels.emplace_back("container_id", facts.container_id);
  if (!host.empty()) s.labels.emplace_back("host", host);
  return s;
}

ProfileSourceOf profile_sources(std::string host, std::function<std::string(pid_t)> service_of) {
  return [host = std::move(host), service_of = std::move(service_of)](pid_t pid,
                                                                      const std::string& comm) {
    auto facts = process_facts(pid, false);
    ProcessFacts gone;
    gone.pid = pid;
    // Gone, or its PID reused by another program since it was sampled: what the sample knew.
    if (!facts || facts->comm != comm) gone.comm = comm;
    return profile_source(facts && facts->comm == comm ? *facts : gone,
                          service_of ? service_of(pid) : "", host);
  };
}

std::string host_name() {
  char buf[256] = "";
  if (gethostname(buf, sizeof buf - 1) != 0) return "";
  return buf;
}

}  // namespace uscope
