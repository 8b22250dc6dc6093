#include "kube-bridge/kube_entrypoint.hpp"

#include "common/signal_name.hpp"
#include "kube-bridge/shell_quote.hpp"

namespace safe::bridge {
namespace {

// Scan, in the order of common/checkpoint_scan: every entry of the directory (dot names too) that
// is a directory and not a symbolic link, whose marker is a regular file and not a link, both
// owned by the pod's user (-O), in a directory the user owns; the newest marker mtime (whole
// seconds, as st_mtime) wins, ties go to the greater name (bytes, so expr runs in the C locale).
// Trailing slashes of the directory are dropped as there.
constexpr const char* kResumeScan = R"(SAFE_RESUME_FROM=
if [ -n "${SAFE_CKPT_DIR:-}" ] && [ -d "$SAFE_CKPT_DIR" ] && [ -O "$SAFE_CKPT_DIR" ]; then
  safe_base=$SAFE_CKPT_DIR
  while [ "${#safe_base}" -gt 1 ] && [ "${safe_base%/}" != "$safe_base" ]; do safe_base=${safe_base%/}; done
  safe_best_t=
  for safe_d in "$safe_base"/* "$safe_base"/.[!.]* "$safe_base"/..?*; do
    [ -d "$safe_d" ] && [ ! -L "$safe_d" ] && [ -O "$safe_d" ] || continue
    [ -f "$safe_d/$safe_marker" ] && [ ! -L "$safe_d/$safe_marker" ] && [ -O "$safe_d/$safe_marker" ] || continue
    safe_t=$(stat -c %Y -- "$safe_d/$safe_marker" 2>/dev/null) || continue
    if [ -z "$safe_best_t" ] || [ "$safe_t" -gt "$safe_best_t" ] ||
      { [ "$safe_t" -eq "$safe_best_t" ] && LC_ALL=C expr "x${safe_d##*/}" \> "x${SAFE_RESUME_FROM##*/}" >/dev/null; }; then
      SAFE_RESUME_FROM=$safe_d
      safe_best_t=$safe_t
    fi
  done
fi
export SAFE_RESUME_FROM
)";

// SIGTERM (possibly before the command has started) becomes the checkpoint signal; `wait` is
// interrupted by the trap, so wait again while the command still exists (a zombie included),
// and leave with its status: 128 + N when a signal ended it, as a shell reports it.
constexpr const char* kSignalRelay = R"(safe_child= safe_term=
trap 'safe_term=1; [ -z "$safe_child" ] || kill -s "$safe_signal" "$safe_child" 2>/dev/null' TERM
"$@" &
safe_child=$!
[ -z "$safe_term" ] || kill -s "$safe_signal" "$safe_child" 2>/dev/null
while :; do
  wait "$safe_child"
  safe_rc=$?
  if [ "$safe_rc" -gt 128 ] && kill -0 "$safe_child" 2>/dev/null; then continue; fi
  exit "$safe_rc"
done
)";

}  // namespace

std::string kube_entrypoint_script(const std::string& complete_marker, int checkpoint_signal) {
  std::string signal = checkpoint_signal > 0 ? signal_name(checkpoint_signal) : "";
  if (signal.empty()) signal = "TERM";
  return "# SaFE (safe-kube-bridge): resume point and checkpoint signal, then the workload's command.\n"
         "safe_marker=" + shell_quote(complete_marker) + "\n" +
         "safe_signal=" + shell_quote(signal) + "\n" + kResumeScan + kSignalRelay;
}

std::vector<std::string> kube_container_command(const WorkloadSpec& spec, const std::string& complete_marker,
                                                int checkpoint_signal) {
  std::vector<std::string> argv = {"/bin/sh", "-c", kube_entrypoint_script(complete_marker, checkpoint_signal),
                                   "safe-entrypoint"};
  if (!spec.command.empty()) {
    argv.insert(argv.end(), spec.command.begin(), spec.command.end());
  } else {
    argv.insert(argv.end(), {"/bin/bash", "-c", spec.script});
  }
  return argv;
}

}  // namespace safe::bridge
