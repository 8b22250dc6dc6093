// Writing a file whole or not at all: a temporary file beside it (never through a symbolic link),
// flushed to disk, then rename(2), so that a reader (a health checker, a load balancer) never sees
// half of it and a crash leaves the old file or the new one.
#pragma once

#include <sys/types.h>

#include <string>

#include "common/result.hpp"

namespace safe {

Status write_file_atomically(const std::string& path, const std::string& text, mode_t mode = 0644);

}  // namespace safe
