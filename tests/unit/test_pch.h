#pragma once
// What nearly every unit and end-to-end test includes, precompiled once for all of them
// (tests/unit/CMakeLists.txt): parsing these took a third of a test's compile time.
#include <fmt/core.h>
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <tl/expected.hpp>
#include <vector>
