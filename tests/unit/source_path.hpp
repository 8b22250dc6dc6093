#pragma once
// A file of the source tree, for tests that read the project's own files (fixtures, docs).
#include <string>

namespace safe::test {

// source_path("docs/config.md") -> "<source dir>/docs/config.md".
std::string source_path(const std::string& relative);

}  // namespace safe::test
