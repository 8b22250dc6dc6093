// The one file compiled with the source tree's path: a definition every test file had would make
// each clone at another path recompile them all (ccache keys on it).
#include "tests/unit/source_path.hpp"

namespace safe::test {

std::string source_path(const std::string& relative) { return std::string(SAFE_SOURCE_DIR) + "/" + relative; }

}  // namespace safe::test
