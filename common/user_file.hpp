// Reading files that users control (job output, heartbeats, checkpoint directories) from a
// process that is root or otherwise privileged. A user can replace such a file at any time with
// a FIFO (an open would block), a device (an open has side effects: /dev/watchdog), a symbolic
// link to someone else's file, or a huge file. So every access here:
//   - looks the path up with O_PATH | O_NOFOLLOW, which opens nothing for I/O, and checks with
//     fstat that it is a regular file (or directory) owned by the expected user;
//   - reads only through that same inode (reopened via /proc/self/fd), never the path again;
//   - reads at most a given number of bytes, without blocking (O_NONBLOCK).
// A stalled file system can still block a call: callers that must not wait run these on a
// worker with a deadline (controller/safed/deadline_reader.hpp).
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <optional>
#include <string>

#include "common/result.hpp"

namespace safe {

struct UserFileInfo {
  long long size = 0;
  long long mtime = 0;
  uid_t owner = 0;
};

// `owner`: the uid the file must belong to; nullopt: any owner (for files root writes).
Result<UserFileInfo> stat_user_file(const std::string& path, std::optional<uid_t> owner);

// The last `max_bytes` bytes of the file.
Result<std::string> read_user_file_tail(const std::string& path, std::optional<uid_t> owner, std::size_t max_bytes);

// The whole file, when it holds at most `max_bytes` bytes.
Result<std::string> read_user_file(const std::string& path, std::optional<uid_t> owner, std::size_t max_bytes);

// The same, for `path` relative to the directory open as `dirfd` (a checked descriptor: nothing
// above it is looked up again).
Result<std::string> read_user_file_at(int dirfd, const std::string& path, std::optional<uid_t> owner,
                                      std::size_t max_bytes);

}  // namespace safe
