#pragma once
// A daemon's log lines on stderr, with their priority where the journal can record it.
//
// Under systemd, a service's stderr is a stream into the journal, and $JOURNAL_STREAM names that
// stream ("DEVICE:INODE"). A line that starts with "<N>" (a syslog priority) is recorded at that
// priority, the prefix stripped (SyslogLevelPrefix=, on by default), so `journalctl -p warning -u
// safed` shows what needs a look; the journal stamps the time itself. Anywhere else (a terminal,
// the test cluster's log files) a line starts with its UTC time instead.
#include <ctime>
#include <string>
#include <string_view>

namespace safe {

enum class LogPriority { error = 3, warning = 4, notice = 5, info = 6 };

// A line a part of a daemon kept for the daemon to write (safed's planner logs under its lock).
struct LogEntry {
  LogPriority priority;
  std::string text;
};

// One line's text, newline included: "<4>LINE\n" for the journal, "2026-12-03T16:11:42 LINE\n"
// elsewhere. Newlines inside LINE become spaces: each journal record is one line.
std::string format_log_line(LogPriority priority, std::string_view line, bool journal, std::time_t now);

// Whether `fd` is the stream `journal_stream` ($JOURNAL_STREAM's value, may be null) names.
bool is_journal_stream(int fd, const char* journal_stream);

// Writes the line to stderr in one write(2), so lines of several threads never interleave.
// Whether stderr is the journal is decided once, at the first line.
void log_line(LogPriority priority, std::string_view line);
// The same, from a printf format.
void log_linef(LogPriority priority, const char* format, ...) __attribute__((format(printf, 2, 3)));

}  // namespace safe
