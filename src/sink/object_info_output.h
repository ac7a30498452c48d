#pragma once
// Rendering of `uscope list --info`: aligned lines for people, or one JSON object (a JSON Lines
// file of one line, "kind":"info") with stable field names.
#include <cstdio>
#include <nlohmann/json_fwd.hpp>
#include <string>

#include "discover/object_info.h"
#include "sink/output_format.h"

namespace uscope {

std::string object_info_text(const ObjectInfo& info);
nlohmann::json object_info_json(const ObjectInfo& info);
// The text, or the JSON object and a newline, for OutputFormat::Json.
void print_object_info(const ObjectInfo& info, OutputFormat format, std::FILE* out);

}  // namespace uscope
