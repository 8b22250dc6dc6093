// TimedTask: run a function on its own thread and wait for it only until a deadline. A check that
// hangs (statvfs on a dead NFS server, a stuck sysfs read) is abandoned as "unknown"; its thread
// is detached and dies with the process, which ends with _exit for that reason.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>

namespace safe {

template <class T>
class TimedTask {
 public:
  // `fn` must own what it uses (capture by value): it may outlive the caller.
  explicit TimedTask(std::function<T()> fn) : state_(std::make_shared<State>()) {
    std::thread([state = state_, fn = std::move(fn)] {
      std::optional<T> value;
      try {
        value = fn();
      } catch (...) {
        // An exception is reported like a hang: no value.
      }
      std::lock_guard<std::mutex> lock(state->mutex);
      state->value = std::move(value);
      state->done = true;
      state->cv.notify_all();
    }).detach();
  }

  // The value, or nullopt when the task did not finish by `deadline` (or threw).
  std::optional<T> wait_until(std::chrono::steady_clock::time_point deadline) {
    std::unique_lock<std::mutex> lock(state_->mutex);
    state_->cv.wait_until(lock, deadline, [&] { return state_->done; });
    if (!state_->done) return std::nullopt;
    return state_->value;
  }

 private:
  struct State {
    std::mutex mutex;
    std::condition_variable cv;
    bool done = false;
    std::optional<T> value;
  };
  std::shared_ptr<State> state_;
};

}  // namespace safe
