// The agent's config (YAML; written by whoever may configure the node's agent, read as root) and
// the container id read from a process's cgroup path (/proc/PID/cgroup: the path is the choice of
// whoever made the cgroup). Any bytes must parse or be refused with a message, never crash.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "agent/agent_config.h"
#include "agent/process_match.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  if (auto c = uscope::parse_agent_config(text, "fuzz.yaml"); !c) {
    if (c.error().message.empty()) __builtin_trap();  // a refusal always says why
  }
  const std::string id = uscope::container_id_of(text);
  if (id.size() > text.size()) __builtin_trap();  // an id is a piece of the path
  return 0;
}
