#include "common/signal_name.hpp"

#include <csignal>
#include <cstdlib>

namespace safe {
namespace {

struct SignalEntry {
  const char* name;
  int number;
};

constexpr SignalEntry kCheckpointSignals[] = {
    {"HUP", SIGHUP},   {"INT", SIGINT},   {"QUIT", SIGQUIT}, {"ABRT", SIGABRT}, {"USR1", SIGUSR1},
    {"USR2", SIGUSR2}, {"ALRM", SIGALRM}, {"TERM", SIGTERM}, {"CONT", SIGCONT}, {"URG", SIGURG},
    {"WINCH", SIGWINCH},
};

}  // namespace

std::optional<int> checkpoint_signal_number(std::string_view name) {
  if (name.starts_with("SIG")) name.remove_prefix(3);
  if (name.empty()) return std::nullopt;
  bool numeric = name.find_first_not_of("0123456789") == std::string_view::npos;
  for (const auto& entry : kCheckpointSignals) {
    if (numeric ? std::to_string(entry.number) == name : name == entry.name) return entry.number;
  }
  return std::nullopt;
}

std::string signal_name(int signo) {
  for (const auto& entry : kCheckpointSignals)
    if (entry.number == signo) return entry.name;
  if (signo == SIGKILL) return "KILL";
  if (signo == SIGSTOP) return "STOP";
  return {};
}

}  // namespace safe
