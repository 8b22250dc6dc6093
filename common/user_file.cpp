#include "common/user_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "common/unique_fd.hpp"

namespace safe {
namespace {

std::string errno_text(const std::string& path) { return path + ": " + std::strerror(errno); }

// The checks every read shares: a regular file, not a link, owned by `owner`.
Result<struct stat> check_regular(int fd, const std::string& path, std::optional<uid_t> owner) {
  struct stat st {};
  if (fstat(fd, &st) != 0) return Error{errno_text(path)};
  if (!S_ISREG(st.st_mode)) return Error{path + ": not a regular file"};
  if (owner && st.st_uid != *owner)
    return Error{path + ": owned by uid " + std::to_string(st.st_uid) + ", not by uid " + std::to_string(*owner)};
  return st;
}

// The file at `path` (relative to `dirfd`) opened for reading, reached through the O_PATH
// descriptor that was checked.
Result<int> open_checked(int dirfd, const std::string& path, std::optional<uid_t> owner, struct stat& st) {
  if (path.empty()) return Error{"no path"};
  UniqueFd handle(::openat(dirfd, path.c_str(), O_PATH | O_NOFOLLOW | O_CLOEXEC));
  if (handle.get() < 0) return Error{errno_text(path)};
  auto checked = check_regular(handle.get(), path, owner);
  if (!checked) return Error{checked.error()};
  std::string self = "/proc/self/fd/" + std::to_string(handle.get());
  int fd = ::open(self.c_str(), O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
  if (fd < 0) return Error{errno_text(path)};
  if (fstat(fd, &st) != 0 || st.st_ino != checked->st_ino || st.st_dev != checked->st_dev) {
    ::close(fd);
    return Error{path + ": changed while it was opened"};
  }
  return fd;
}

Result<std::string> read_range(int fd, const std::string& path, off_t from, std::size_t length) {
  std::string out(length, '\0');
  std::size_t got = 0;
  while (got < length) {
    ssize_t n = pread(fd, out.data() + got, length - got, from + static_cast<off_t>(got));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Error{errno_text(path)};
    if (n == 0) break;  // truncated meanwhile
    got += static_cast<std::size_t>(n);
  }
  out.resize(got);
  return out;
}

}  // namespace

Result<UserFileInfo> stat_user_file(const std::string& path, std::optional<uid_t> owner) {
  if (path.empty()) return Error{"no path"};
  UniqueFd handle(::open(path.c_str(), O_PATH | O_NOFOLLOW | O_CLOEXEC));
  if (handle.get() < 0) return Error{errno_text(path)};
  auto st = check_regular(handle.get(), path, owner);
  if (!st) return Error{st.error()};
  return UserFileInfo{static_cast<long long>(st->st_size), static_cast<long long>(st->st_mtime), st->st_uid};
}

Result<std::string> read_user_file_tail(const std::string& path, std::optional<uid_t> owner, std::size_t max_bytes) {
  struct stat st {};
  auto fd = open_checked(AT_FDCWD, path, owner, st);
  if (!fd) return Error{fd.error()};
  UniqueFd file(*fd);
  auto size = static_cast<std::size_t>(st.st_size);
  std::size_t from = size > max_bytes ? size - max_bytes : 0;
  return read_range(file.get(), path, static_cast<off_t>(from), size - from);
}

Result<std::string> read_user_file(const std::string& path, std::optional<uid_t> owner, std::size_t max_bytes) {
  return read_user_file_at(AT_FDCWD, path, owner, max_bytes);
}

Result<std::string> read_user_file_at(int dirfd, const std::string& path, std::optional<uid_t> owner,
                                      std::size_t max_bytes) {
  struct stat st {};
  auto fd = open_checked(dirfd, path, owner, st);
  if (!fd) return Error{fd.error()};
  UniqueFd file(*fd);
  if (static_cast<std::size_t>(st.st_size) > max_bytes)
    return Error{path + ": " + std::to_string(st.st_size) + " bytes, larger than the " + std::to_string(max_bytes) +
                 " bytes read here"};
  return read_range(file.get(), path, 0, static_cast<std::size_t>(st.st_size));
}

}  // namespace safe
