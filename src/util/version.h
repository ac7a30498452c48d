#pragma once
// uscope's version, as --version prints it and the agent's pushes name their sender.
namespace uscope {
inline constexpr const char* kUscopeVersion = "0.1";
}  // namespace uscope
