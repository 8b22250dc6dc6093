// After a job: processes still holding its GPUs are strays (a hung rank, a leaked daemon). The
// epilog kills those owned by the job's user, never anyone else's and never root's.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "common/gpu_snapshot.hpp"
#include "common/node_fs.hpp"

namespace safe {

// PIDs on the given GPUs, each once.
std::vector<int> processes_on(const GpuSnapshot& snapshot, const std::vector<int>& gpus);

// The real UID of a process from /proc/PID/status; -1 when it is gone or unreadable.
long long process_uid(const NodeFs& fs, int pid);

// Which of `pids` may be killed: owned by job_uid, and job_uid is not root.
std::vector<int> killable(const NodeFs& fs, const std::vector<int>& pids, long long job_uid);

// SIGKILL to `pid` if it is `uid`'s. The check and the kill go through one pidfd: a stray that
// exits meanwhile and whose PID another user's new process gets is never the one killed.
bool kill_if_owned(const NodeFs& fs, int pid, long long uid);

// The sim backend's cleanup: drop the processes (and their memory) from the job's GPUs.
void clear_sim_processes(GpuSnapshot& snapshot, const std::vector<int>& gpus);

}  // namespace safe
