#pragma once

// consumer_pool: a fixed set of threads that run many log consumers, each a pooled_task whose
// step() polls without waiting. It replaces one thread blocked in poll() per consumer: a node
// with 10,000 persistent APPLICATION clients connected ran 10,000 such threads (issue 13 §7).
//
// A task runs when something asks for it: its log consumer's ready callback (records, a
// rebalance — log_consumer::set_ready_callback), its owner (room in its buffer), or a timer it
// armed (a retry after a failure, a commit due, the idle tick). Each request before the task
// runs is one run; a request while it runs makes it run once more afterwards, so no signal is
// lost between a poll that found nothing and the end of the turn.
//
// Guarantees: a task runs on one thread at a time (a log consumer is used by one thread at a
// time); it never runs again once retire() returned; the ready queue holds each task at most
// once, so it is bounded by the number of tasks, and the timer queue by the timers armed.
//
// Lifecycle: threads start with the first task scheduled; stop() (or the destructor) joins
// them; tasks still queued are dropped (their owners retire and finish them).
// Concurrency: every member function may be called from any thread, including from inside a
// step() (the pool's lock is not held while a task runs) and from a ready callback.

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <queue>
#include <string>
#include <thread>
#include <vector>

namespace starling::broker {

class consumer_pool;

class pooled_task : public std::enable_shared_from_this<pooled_task> {
  public:
    using clock = std::chrono::steady_clock;
    virtual ~pooled_task() = default;

  protected:
    pooled_task() = default;
    // One turn: poll without waiting, hand over what arrived, arm a timer if needed. Runs on a
    // pool thread.
    virtual void step() = 0;
    // The task's last work after retire() (commit, leave the group): run by retire()'s caller,
    // or by the pool right after the turn when retire() was called from inside that turn.
    virtual void finish() = 0;

  private:
    friend class consumer_pool;
    enum class run_state : std::uint8_t { idle, queued, running, running_again };
    // All guarded by the pool's mutex.
    run_state state_ = run_state::idle;
    bool retired_ = false;
    bool finish_in_pool_ = false;  // retired from inside its own turn
    std::thread::id runner_;
    std::optional<clock::time_point> timer_;  // the earliest timer armed
};

class consumer_pool {
  public:
    using clock = pooled_task::clock;

    // `name` prefixes the threads' names ("app-consumer" → app-consumer-0, ...).
    consumer_pool(std::string name, std::size_t threads);
    ~consumer_pool();
    consumer_pool(const consumer_pool&) = delete;
    consumer_pool& operator=(const consumer_pool&) = delete;

    // Runs the task soon (again, if it is running now).
    void schedule(const std::shared_ptr<pooled_task>& task);
    // Runs the task at `when`, unless a timer at or before `when` is armed already. A timer is
    // disarmed when it fires; schedule() does not disarm it.
    void schedule_at(const std::shared_ptr<pooled_task>& task, clock::time_point when);

    // The task never runs again. Returns once a turn in progress on another thread ended.
    // True: the caller runs finish(). False: the caller is inside the task's own turn (a step
    // that dropped the last reference to the task's owner); the pool runs finish() when that
    // turn returns.
    bool retire(pooled_task& task);

    void stop();

    // Tasks waiting for a thread (a gauge for tests and metrics).
    std::size_t queued() const;
    std::size_t threads() const { return size_; }

  private:
    struct timer_entry {
        clock::time_point when;
        std::weak_ptr<pooled_task> task;
        bool operator>(const timer_entry& other) const { return when > other.when; }
    };

    void run(std::size_t index);
    void schedule_locked(std::shared_ptr<pooled_task> task);
    void start_locked();

    const std::string name_;
    const std::size_t size_;
    mutable std::mutex mutex_;
    std::condition_variable work_;      // a task queued, a timer armed earlier, stop
    std::condition_variable turn_end_;  // a turn ended (retire() waits for it)
    std::deque<std::shared_ptr<pooled_task>> ready_;
    std::priority_queue<timer_entry, std::vector<timer_entry>, std::greater<>> timers_;
    std::vector<std::thread> threads_;
    bool stopping_ = false;
};

}  // namespace starling::broker
