#include "common/atomic_file.hpp"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>

namespace safe {

Status write_file_atomically(const std::string& path, const std::string& text) {
  std::string tmp = path + ".tmp." + std::to_string(getpid());
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << text;
    out.flush();
    if (!out) {
      std::string why = tmp + ": " + std::strerror(errno);
      unlink(tmp.c_str());
      return Error{why};
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::string why = path + ": " + std::strerror(errno);
    unlink(tmp.c_str());
    return Error{why};
  }
  return ok_status();
}

}  // namespace safe
