// Writing a file whole or not at all: a temporary file beside it, then rename(2), so that a reader
// (a health checker, a load balancer) never sees half of it.
#pragma once

#include <string>

#include "common/result.hpp"

namespace safe {

Status write_file_atomically(const std::string& path, const std::string& text);

}  // namespace safe
