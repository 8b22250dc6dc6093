#include "common/daemon_log.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>

namespace safe {

std::string format_log_line(LogPriority priority, std::string_view line, bool journal, std::time_t now) {
  std::string out;
  if (journal) {
    out = "<" + std::to_string(static_cast<int>(priority)) + ">";
  } else {
    char stamp[32];
    std::tm tm{};
    gmtime_r(&now, &tm);
    std::strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%S ", &tm);
    out = stamp;
  }
  for (char c : line) out += (c == '\n' || c == '\r') ? ' ' : c;
  out += '\n';
  return out;
}

bool is_journal_stream(int fd, const char* journal_stream) {
  if (!journal_stream) return false;
  unsigned long long dev = 0, ino = 0;
  char tail = 0;
  if (std::sscanf(journal_stream, "%llu:%llu%c", &dev, &ino, &tail) != 2) return false;
  struct stat st {};
  if (fstat(fd, &st) != 0) return false;
  return static_cast<unsigned long long>(st.st_dev) == dev && static_cast<unsigned long long>(st.st_ino) == ino;
}

void log_line(LogPriority priority, std::string_view line) {
  static const bool journal = is_journal_stream(STDERR_FILENO, std::getenv("JOURNAL_STREAM"));
  std::string text = format_log_line(priority, line, journal, std::time(nullptr));
  const char* p = text.data();
  size_t left = text.size();
  while (left > 0) {
    ssize_t n = ::write(STDERR_FILENO, p, left);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;  // nowhere to log to: nothing else to do
    p += n;
    left -= static_cast<size_t>(n);
  }
}

void log_linef(LogPriority priority, const char* format, ...) {
  va_list args, again;
  va_start(args, format);
  va_copy(again, args);
  int n = std::vsnprintf(nullptr, 0, format, args);
  va_end(args);
  std::string line(n > 0 ? static_cast<size_t>(n) : 0, '\0');
  if (n > 0) std::vsnprintf(line.data(), line.size() + 1, format, again);
  va_end(again);
  log_line(priority, line);
}

}  // namespace safe
