#include "common/process_runner.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <thread>

namespace safe {
namespace {

using Clock = std::chrono::steady_clock;

int remaining_ms(Clock::time_point deadline) {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
  return left < 0 ? 0 : static_cast<int>(left);
}

void close_fd(int& fd) {
  if (fd >= 0) close(fd);
  fd = -1;
}

}  // namespace

std::string ProcessResult::describe() const {
  switch (outcome) {
    case Outcome::exited: return "exited with " + std::to_string(exit_code);
    case Outcome::signaled: return std::string("killed by signal ") + std::to_string(signal);
    case Outcome::timed_out: return "timed out and was killed";
    case Outcome::failed_to_start: return "could not start: " + error;
  }
  return "?";
}

ProcessResult SystemProcessRunner::run(const std::vector<std::string>& argv, std::chrono::milliseconds timeout) {
  ProcessResult result;
  if (argv.empty()) {
    result.error = "empty command";
    return result;
  }
  // Everything the child needs is prepared before fork: after fork only async-signal-safe calls.
  std::vector<char*> cargv;
  for (const auto& a : argv) cargv.push_back(const_cast<char*>(a.c_str()));
  cargv.push_back(nullptr);

  int out_pipe[2], err_pipe[2], exec_pipe[2];
  if (pipe2(out_pipe, O_CLOEXEC) != 0) {
    result.error = std::strerror(errno);
    return result;
  }
  if (pipe2(err_pipe, O_CLOEXEC) != 0) {
    result.error = std::strerror(errno);
    close(out_pipe[0]), close(out_pipe[1]);
    return result;
  }
  if (pipe2(exec_pipe, O_CLOEXEC) != 0) {
    result.error = std::strerror(errno);
    close(out_pipe[0]), close(out_pipe[1]), close(err_pipe[0]), close(err_pipe[1]);
    return result;
  }
  int devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);

  pid_t pid = fork();
  if (pid < 0) {
    result.error = std::strerror(errno);
    for (int fd : {out_pipe[0], out_pipe[1], err_pipe[0], err_pipe[1], exec_pipe[0], exec_pipe[1], devnull})
      if (fd >= 0) close(fd);
    return result;
  }
  if (pid == 0) {
    setpgid(0, 0);
    if (devnull >= 0) dup2(devnull, STDIN_FILENO);
    dup2(out_pipe[1], STDOUT_FILENO);
    dup2(err_pipe[1], STDERR_FILENO);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    execvp(cargv[0], cargv.data());
    int e = errno;
    ssize_t ignored = write(exec_pipe[1], &e, sizeof e);
    (void)ignored;
    _exit(127);
  }
  setpgid(pid, pid);  // also here, so the kill below finds the group even if the child is slow to start
  close(out_pipe[1]);
  close(err_pipe[1]);
  close(exec_pipe[1]);
  if (devnull >= 0) close(devnull);

  int exec_errno = 0;
  ssize_t n = read(exec_pipe[0], &exec_errno, sizeof exec_errno);  // returns 0 once exec succeeded
  close(exec_pipe[0]);
  if (n == static_cast<ssize_t>(sizeof exec_errno)) {
    close(out_pipe[0]), close(err_pipe[0]);
    waitpid(pid, nullptr, 0);
    result.error = argv[0] + ": " + std::strerror(exec_errno);
    return result;
  }

  auto deadline = Clock::now() + timeout;
  int fds[2] = {out_pipe[0], err_pipe[0]};
  std::string* sinks[2] = {&result.out, &result.err};
  bool timed_out = false;
  while (fds[0] >= 0 || fds[1] >= 0) {
    pollfd p[2];
    int count = 0;
    int which[2];
    for (int i = 0; i < 2; ++i)
      if (fds[i] >= 0) p[count] = {fds[i], POLLIN, 0}, which[count++] = i;
    int left = remaining_ms(deadline);
    if (left == 0) {
      timed_out = true;
      break;
    }
    int ready = poll(p, count, left);
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) {
      timed_out = ready == 0;
      break;
    }
    for (int k = 0; k < count; ++k) {
      if (!(p[k].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      char buf[8192];
      ssize_t got = read(p[k].fd, buf, sizeof buf);
      if (got < 0 && errno == EINTR) continue;
      if (got <= 0) {
        close_fd(fds[which[k]]);
        continue;
      }
      std::string& sink = *sinks[which[k]];
      if (sink.size() < max_output_) sink.append(buf, std::min<std::size_t>(got, max_output_ - sink.size()));
    }
  }
  close_fd(fds[0]);
  close_fd(fds[1]);

  // Wait for the exit without reaping: while the child is a zombie its PID (the group's id) cannot
  // be reused, so the group kill below cannot hit an unrelated process group.
  bool exited = false;
  while (!timed_out && !exited) {
    siginfo_t info{};
    int rc = waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOHANG | WNOWAIT);
    if (rc == 0 && info.si_pid == pid) {
      exited = true;
      break;
    }
    if (rc < 0 && errno != EINTR) break;
    if (remaining_ms(deadline) == 0) {
      timed_out = true;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  int status = 0;
  if (timed_out) {
    kill(-pid, SIGKILL);
    kill(pid, SIGKILL);
    waitpid(pid, &status, 0);
    result.outcome = ProcessResult::Outcome::timed_out;
    return result;
  }
  // Children the program left behind in its group must not outlive it (NHC issue #104).
  kill(-pid, SIGKILL);
  if (!exited || waitpid(pid, &status, 0) != pid) {
    result.error = "lost track of the child process (is SIGCHLD ignored?)";
    return result;
  }
  if (WIFEXITED(status)) {
    result.outcome = ProcessResult::Outcome::exited;
    result.exit_code = WEXITSTATUS(status);
  } else {
    result.outcome = ProcessResult::Outcome::signaled;
    result.signal = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
  }
  return result;
}

}  // namespace safe
