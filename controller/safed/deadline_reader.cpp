#include "controller/safed/deadline_reader.hpp"

#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <utility>

namespace safe {

using SteadyClock = std::chrono::steady_clock;

struct DeadlineReader::Shared {
  Settings settings;
  Clock clock;
  std::mutex mutex;
  std::condition_variable work;  // a task was queued, or stopping
  std::condition_variable done;  // a read finished or timed out; a worker exited

  struct Entry {
    std::optional<Answer> answer;
    bool queued = false;   // waiting for a worker
    bool running = false;  // a worker is reading it
    bool stuck = false;    // running past its deadline
    bool urgent = false;
    bool retry = false;    // the last answer was a queued read's timeout: read again when asked
    bool stale = false;    // the read under way started before a clock step: its answer is dropped
    unsigned long long seq = 0;  // of the read in flight
    SteadyClock::time_point queued_since, running_since, last_asked;
  };
  struct Task {
    std::string key;
    Read read;
    unsigned long long seq;
  };
  std::unordered_map<std::string, Entry> entries;
  std::deque<Task> queue;
  unsigned long long next_seq = 0;
  int workers = 0;  // live threads
  int stuck = 0;
  bool stopping = false;
  long long reads = 0, timeouts = 0;

  void start_worker(std::shared_ptr<Shared> self) {
    ++workers;
    std::thread([self] { self->work_loop(); }).detach();
  }

  void work_loop() {
    std::unique_lock lock(mutex);
    while (true) {
      work.wait(lock, [&] { return stopping || !queue.empty(); });
      if (stopping) break;
      Task task = std::move(queue.front());
      queue.pop_front();
      auto it = entries.find(task.key);
      if (it == entries.end() || it->second.seq != task.seq) continue;  // forgotten meanwhile
      it->second.queued = false;
      it->second.running = true;
      it->second.running_since = SteadyClock::now();
      long long started = clock();
      ++reads;
      lock.unlock();
      std::any value;
      try {
        value = task.read();
      } catch (...) {
        value = std::any();  // a read that throws answers "nothing": never worse than a timeout
      }
      lock.lock();
      it = entries.find(task.key);
      bool was_stuck = false;
      if (it != entries.end() && it->second.seq == task.seq) {
        was_stuck = it->second.stuck;
        it->second.running = it->second.stuck = false;
        if (!std::exchange(it->second.stale, false)) it->second.answer = Answer{started, false, std::move(value)};
      }
      if (was_stuck) {
        --stuck;
        // Written off and replaced: one thread too many now, unless more are stuck than spare.
        if (workers > settings.workers + stuck) break;
      }
      done.notify_all();
    }
    --workers;
    done.notify_all();
  }
};

DeadlineReader::DeadlineReader(Settings settings, Clock clock) : shared_(std::make_shared<Shared>()) {
  shared_->settings = settings;
  shared_->clock = std::move(clock);
  std::lock_guard lock(shared_->mutex);
  for (int i = 0; i < settings.workers; ++i) shared_->start_worker(shared_);
}

DeadlineReader::~DeadlineReader() {
  std::unique_lock lock(shared_->mutex);
  shared_->stopping = true;
  shared_->work.notify_all();
  // Idle workers leave at once; stuck ones keep `shared_` alive and end with the process.
  shared_->done.wait_for(lock, std::chrono::seconds(1), [&] { return shared_->workers <= shared_->stuck; });
}

void DeadlineReader::check_deadlines() {
  Shared& s = *shared_;
  auto now = SteadyClock::now();
  bool dropped = false;
  // Every worker is stuck (the cap of replacements reached): nothing queued will be read until a
  // hung mount answers. A worker that is merely busy frees up, so reads wait for it.
  bool none_free = s.workers <= s.stuck;
  for (auto& [key, e] : s.entries) {
    if (e.queued && none_free && now - e.queued_since >= s.settings.deadline) {
      // Unknown, like a read that hung. A new seq orphans its task in the queue; the next ask
      // queues it again (`retry`), whatever freshness it asks for.
      e.queued = false;
      e.retry = true;
      e.seq = ++s.next_seq;
      e.answer = Answer{s.clock(), true, {}};
      ++s.timeouts;
      dropped = true;
      s.done.notify_all();
      continue;
    }
    if (!e.running || e.stuck || now - e.running_since < s.settings.deadline) continue;
    e.stuck = true;
    e.answer = Answer{s.clock(), true, {}};
    ++s.timeouts;
    ++s.stuck;
    if (s.stuck <= s.settings.max_stuck) s.start_worker(shared_);
    s.done.notify_all();
  }
  if (dropped)  // orphaned tasks would pile up while no worker is free to skip them
    std::erase_if(s.queue, [&](const Shared::Task& t) {
      auto it = s.entries.find(t.key);
      return it == s.entries.end() || it->second.seq != t.seq;
    });
}

std::optional<DeadlineReader::Answer> DeadlineReader::get(const std::string& key, long long accept_since,
                                                          long long want_since, const Read& read, bool urgent) {
  Shared& s = *shared_;
  std::lock_guard lock(s.mutex);
  check_deadlines();
  Shared::Entry& e = s.entries[key];
  e.last_asked = SteadyClock::now();
  bool busy = e.queued || e.running;
  if (!busy && (!e.answer || e.answer->started < want_since || e.retry)) {
    e.queued = true;
    e.retry = false;
    e.queued_since = SteadyClock::now();
    e.urgent = urgent;
    e.seq = ++s.next_seq;
    s.queue.push_back({key, read, e.seq});
    s.work.notify_one();
  } else if (busy && urgent) {
    e.urgent = true;
  }
  if (e.answer && e.answer->started >= accept_since) return e.answer;
  return std::nullopt;
}

bool DeadlineReader::wait_for_urgent(std::chrono::milliseconds max) {
  Shared& s = *shared_;
  std::unique_lock lock(s.mutex);
  auto pending = [&] {
    for (const auto& [key, e] : s.entries)
      if (e.urgent && (e.queued || (e.running && !e.stuck))) return true;
    return false;
  };
  if (!pending()) return false;
  auto until = SteadyClock::now() + max;
  while (pending() && SteadyClock::now() < until) {
    s.done.wait_until(lock, std::min(until, SteadyClock::now() + std::chrono::milliseconds(50)));
    check_deadlines();
  }
  for (auto& [key, e] : s.entries)
    if (!e.queued && !e.running) e.urgent = false;
  return !pending();
}

void DeadlineReader::forget_idle(std::chrono::seconds idle) {
  Shared& s = *shared_;
  std::lock_guard lock(s.mutex);
  auto now = SteadyClock::now();
  for (auto it = s.entries.begin(); it != s.entries.end();) {
    const auto& e = it->second;
    if (!e.queued && !e.running && now - e.last_asked > idle) it = s.entries.erase(it);
    else ++it;
  }
}

void DeadlineReader::drop_answers() {
  std::lock_guard lock(shared_->mutex);
  for (auto& [key, e] : shared_->entries) {
    e.answer.reset();
    e.stale = e.running;
  }
}

DeadlineReader::Stats DeadlineReader::stats() const {
  std::lock_guard lock(shared_->mutex);
  return {shared_->reads, shared_->timeouts, shared_->stuck, shared_->workers};
}

}  // namespace safe
