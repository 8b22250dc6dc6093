// safe-trainer: a stand-in for a training job, for end-to-end tests, demos and benchmarks. It
// advances steps at a fixed rate, checkpoints every K steps into $SAFE_CKPT_DIR the complete-marker
// way (new directory step-N-attempt-A, its files, then the COMPLETE marker last, labelled with the
// job and attempt so that SaFE can fence a superseded attempt's checkpoints), resumes from
// $SAFE_RESUME_FROM, checkpoints at once on $SAFE_CKPT_SIGNAL, touches $SAFE_HEARTBEAT_FILE, and
// prints one line per step ("step N attempt A"), so lost and recomputed work can be counted.
// One rank ($SLURM_PROCID, 0 unless --ckpt-rank says otherwise) writes checkpoints and prints
// steps; the others keep time.
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>

#include "common/signal_name.hpp"

namespace {

std::atomic<bool> g_checkpoint_now{false};
void on_checkpoint_signal(int) { g_checkpoint_now = true; }

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

// The directory's name says the attempt: a superseded attempt still running on a cut-off node
// must not write into the directory of the current attempt's checkpoint of the same step.
bool write_checkpoint(const std::string& dir, long step, long attempt, std::string& path) {
  path = dir + "/step-" + std::to_string(step) + "-attempt-" + std::to_string(attempt);
  mkdir(path.c_str(), 0755);
  {
    std::ofstream state(path + "/state");
    state << step << "\n";
    if (!state.flush()) return false;
  }
  std::ofstream marker(path + "/COMPLETE");  // last: the checkpoint counts from here on
  marker << "job=" << env("SLURM_JOB_ID") << " attempt=" << attempt << "\n";
  return static_cast<bool>(marker.flush());
}

int usage() {
  std::fprintf(stderr,
               "usage: safe-trainer [--steps N] [--rate STEPS_PER_S] [--ckpt-every K] [--exit-at STEP:CODE[:ATTEMPTS]]\n"
               "                    [--hang-at STEP[:ATTEMPTS]] [--ckpt-rank RANK]\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  long steps = 100, ckpt_every = 10, ckpt_rank = 0, exit_at = -1, exit_code = 0, exit_attempts = 1, hang_at = -1, hang_attempts = 1;
  double rate = 10;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (i + 1 >= argc) return usage();
    std::string v = argv[++i];
    if (a == "--steps") steps = std::stol(v);
    else if (a == "--rate") rate = std::stod(v);
    else if (a == "--ckpt-every") ckpt_every = std::stol(v);
    else if (a == "--exit-at") std::sscanf(v.c_str(), "%ld:%ld:%ld", &exit_at, &exit_code, &exit_attempts);
    else if (a == "--ckpt-rank") ckpt_rank = std::stol(v);
    else if (a == "--hang-at") std::sscanf(v.c_str(), "%ld:%ld", &hang_at, &hang_attempts);
    else return usage();
  }
  bool writer = std::atol(env("SLURM_PROCID").c_str()) == ckpt_rank;  // the rank that writes
  long attempt = env("SAFE_ATTEMPT").empty() ? 1 : std::stol(env("SAFE_ATTEMPT"));
  std::string ckpt_dir = env("SAFE_CKPT_DIR"), heartbeat = env("SAFE_HEARTBEAT_FILE");
  std::string sig = env("SAFE_CKPT_SIGNAL");
  if (auto signo = safe::checkpoint_signal_number(sig.substr(0, sig.find('@')))) {
    struct sigaction sa {};
    sa.sa_handler = on_checkpoint_signal;
    sigaction(*signo, &sa, nullptr);
  }
  long step = 0;
  if (std::string from = env("SAFE_RESUME_FROM"); !from.empty()) {
    std::ifstream state(from + "/state");
    state >> step;
    if (writer) std::printf("resumed from step %ld (%s) attempt %ld\n", step, from.c_str(), attempt);
  } else if (writer) {
    std::printf("starting attempt %ld\n", attempt);
  }
  std::fflush(stdout);
  auto period = std::chrono::duration<double>(1.0 / rate);
  auto next = std::chrono::steady_clock::now();
  while (step < steps) {
    if (hang_at >= 0 && step + 1 >= hang_at && attempt <= hang_attempts) {
      if (writer) std::printf("hanging at step %ld\n", step + 1);
      std::fflush(stdout);
      for (;;) pause();
    }
    next += std::chrono::duration_cast<std::chrono::steady_clock::duration>(period);
    // A trainer that was stopped (SIGSTOP, as a hung collective is simulated) or starved of CPU
    // does not race through the steps it missed: it goes on at its rate from now.
    if (auto now = std::chrono::steady_clock::now(); now - next > period) next = now;
    std::this_thread::sleep_until(next);
    ++step;
    if (!writer) continue;
    std::printf("step %ld attempt %ld\n", step, attempt);
    if (!heartbeat.empty()) {
      std::ofstream touch(heartbeat, std::ios::trunc);
      touch << step << "\n";
    }
    bool on_signal = g_checkpoint_now.exchange(false);
    if (!ckpt_dir.empty() && (on_signal || (ckpt_every > 0 && step % ckpt_every == 0))) {
      std::string path;
      if (write_checkpoint(ckpt_dir, step, attempt, path))
        std::printf("checkpoint step %ld%s\n", step, on_signal ? " (on signal)" : "");
    }
    std::fflush(stdout);
    if (exit_at >= 0 && step == exit_at && attempt <= exit_attempts) {
      std::printf("exiting with code %ld at step %ld\n", exit_code, step);
      std::fflush(stdout);
      return static_cast<int>(exit_code);
    }
  }
  if (writer) std::printf("done %ld steps attempt %ld\n", steps, attempt);
  return 0;
}
