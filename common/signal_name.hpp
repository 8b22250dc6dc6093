// Signal names as users write them in --safe-ckpt-signal and safe.yaml ("USR1", "SIGTERM", "10").
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace safe {

// The signals a job may ask to receive before its nodes are taken away. KILL and STOP are not
// among them: a job cannot act on them, so they could never trigger a checkpoint.
std::optional<int> checkpoint_signal_number(std::string_view name);

// "USR1" for SIGUSR1; the bare name, without the SIG prefix. Empty for an unknown number.
std::string signal_name(int signo);

}  // namespace safe
