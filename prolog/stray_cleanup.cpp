#include "prolog/stray_cleanup.hpp"

#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>

namespace safe {

std::vector<int> processes_on(const GpuSnapshot& s, const std::vector<int>& gpus) {
  std::vector<int> pids;
  for (const auto& g : s.gpus)
    if (std::count(gpus.begin(), gpus.end(), g.index))
      for (const auto& p : g.processes)
        if (p.pid > 0 && !std::count(pids.begin(), pids.end(), p.pid)) pids.push_back(p.pid);
  return pids;
}

long long process_uid(const NodeFs& fs, int pid) {
  auto status = fs.read("/proc/" + std::to_string(pid) + "/status");
  if (!status) return -1;
  std::size_t pos = status->find("\nUid:");
  if (pos == std::string::npos) return -1;
  return std::atoll(status->c_str() + pos + 5);
}

std::vector<int> killable(const NodeFs& fs, const std::vector<int>& pids, long long job_uid) {
  std::vector<int> out;
  if (job_uid <= 0) return out;
  for (int pid : pids)
    if (process_uid(fs, pid) == job_uid) out.push_back(pid);
  return out;
}

bool kill_if_owned(const NodeFs& fs, int pid, long long uid) {
  int pidfd = static_cast<int>(syscall(SYS_pidfd_open, pid, 0));
  if (pidfd < 0) return false;  // gone already
  bool owned = process_uid(fs, pid) == uid;
  // Still alive after the read (signal 0): the PID cannot have been reused, so the uid read was
  // this process's.
  bool alive = syscall(SYS_pidfd_send_signal, pidfd, 0, nullptr, 0) == 0;
  bool killed = owned && alive && syscall(SYS_pidfd_send_signal, pidfd, SIGKILL, nullptr, 0) == 0;
  close(pidfd);
  return killed;
}

void clear_sim_processes(GpuSnapshot& s, const std::vector<int>& gpus) {
  for (auto& g : s.gpus)
    if (std::count(gpus.begin(), gpus.end(), g.index)) {
      g.processes.clear();
      g.memory_used_mib = 0;
    }
}

}  // namespace safe
