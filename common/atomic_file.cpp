#include "common/atomic_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace safe {

Status write_file_atomically(const std::string& path, const std::string& text, mode_t mode) {
  std::string tmp = path + ".tmp." + std::to_string(getpid());
  unlink(tmp.c_str());  // one a crash left behind
  int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
  if (fd < 0) return Error{tmp + ": " + std::strerror(errno)};
  std::size_t done = 0;
  while (done < text.size()) {
    ssize_t n = write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    done += static_cast<std::size_t>(n);
  }
  bool ok = done == text.size() && fchmod(fd, mode) == 0 && fsync(fd) == 0;
  std::string why = ok ? "" : tmp + ": " + std::strerror(errno);
  if (close(fd) != 0 && ok) {
    ok = false;
    why = tmp + ": " + std::strerror(errno);
  }
  if (ok && std::rename(tmp.c_str(), path.c_str()) != 0) {
    ok = false;
    why = path + ": " + std::strerror(errno);
  }
  if (!ok) {
    unlink(tmp.c_str());
    return Error{why};
  }
  return ok_status();
}

}  // namespace safe
