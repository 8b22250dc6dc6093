// Internal to common/: the schema walker shared by parse_config and config_key_paths.
#pragma once

#include <string>
#include <vector>

#include "common/config.hpp"
#include "common/yaml_document.hpp"

namespace safe {

// Reads `root` into `out`, appending every problem to `errors`. With `key_paths` set, also
// records every key the schema asks for (including those of list items when lists are empty).
void read_config_document(const yaml::Node& root, SafeConfig& out, std::vector<ConfigError>& errors,
                          const std::string& file, std::vector<std::string>* key_paths);

}  // namespace safe
