#include "broker/consumer_pool.h"

#include <pthread.h>

#include <algorithm>
#include <utility>

namespace starling::broker {

consumer_pool::consumer_pool(std::string name, std::size_t threads)
    : name_(std::move(name)), size_(std::max<std::size_t>(1, threads)) {}

consumer_pool::~consumer_pool() { stop(); }

void consumer_pool::start_locked() {
    if (!threads_.empty() || stopping_) {
        return;
    }
    threads_.reserve(size_);
    for (std::size_t i = 0; i < size_; ++i) {
        threads_.emplace_back(&consumer_pool::run, this, i);
    }
}

void consumer_pool::schedule(const std::shared_ptr<pooled_task>& task) {
    std::lock_guard lock(mutex_);
    if (stopping_) {
        return;
    }
    schedule_locked(task);
}

void consumer_pool::schedule_locked(std::shared_ptr<pooled_task> task) {
    if (task->retired_) {
        return;
    }
    switch (task->state_) {
        case pooled_task::run_state::idle:
            task->state_ = pooled_task::run_state::queued;
            ready_.push_back(std::move(task));
            start_locked();
            work_.notify_one();
            break;
        case pooled_task::run_state::running:
            task->state_ = pooled_task::run_state::running_again;
            break;
        case pooled_task::run_state::queued:
        case pooled_task::run_state::running_again:
            break;
    }
}

void consumer_pool::schedule_at(const std::shared_ptr<pooled_task>& task, clock::time_point when) {
    std::lock_guard lock(mutex_);
    if (stopping_ || task->retired_ || (task->timer_ && *task->timer_ <= when)) {
        return;
    }
    // A later timer armed before stays in the queue and is ignored when it fires (it no longer
    // matches timer_): entries are never searched for, and at most one per call is added.
    task->timer_ = when;
    timers_.push(timer_entry{when, task});
    start_locked();
    work_.notify_one();
}

bool consumer_pool::retire(pooled_task& task) {
    std::unique_lock lock(mutex_);
    if (task.retired_) {
        return false;
    }
    task.retired_ = true;
    task.timer_.reset();
    auto in_turn = [&] {
        return task.state_ == pooled_task::run_state::running ||
               task.state_ == pooled_task::run_state::running_again;
    };
    if (in_turn() && task.runner_ == std::this_thread::get_id()) {
        task.finish_in_pool_ = true;
        return false;
    }
    turn_end_.wait(lock, [&] { return !in_turn(); });
    return true;
}

void consumer_pool::stop() {
    std::vector<std::thread> threads;
    {
        std::lock_guard lock(mutex_);
        stopping_ = true;
        threads.swap(threads_);
    }
    work_.notify_all();
    for (auto& t : threads) {
        if (t.get_id() == std::this_thread::get_id()) {
            t.detach();  // stop() from a task's turn: that thread leaves its loop after the turn
        } else {
            t.join();
        }
    }
    std::deque<std::shared_ptr<pooled_task>> dropped;
    decltype(timers_) timers;
    {
        std::lock_guard lock(mutex_);
        dropped.swap(ready_);
        timers.swap(timers_);
    }
    // Released here, outside the lock: a task's destructor may close a log consumer.
}

std::size_t consumer_pool::queued() const {
    std::lock_guard lock(mutex_);
    return ready_.size();
}

void consumer_pool::run(std::size_t index) {
    const std::string thread_name = (name_ + "-" + std::to_string(index)).substr(0, 15);
    pthread_setname_np(pthread_self(), thread_name.c_str());

    std::unique_lock lock(mutex_);
    // References released only with the lock released: the last reference to a task may be the
    // pool's, and its destructor closes a log consumer.
    std::vector<std::shared_ptr<pooled_task>> release;
    auto release_unlocked = [&] {
        if (release.empty()) {
            return;
        }
        lock.unlock();
        release.clear();
        lock.lock();
    };
    while (!stopping_) {
        const auto now = clock::now();
        while (!timers_.empty() && timers_.top().when <= now) {
            timer_entry fired = timers_.top();
            timers_.pop();
            auto task = fired.task.lock();
            if (task && task->timer_ == fired.when) {
                task->timer_.reset();
                schedule_locked(task);
            }
            if (task) {
                release.push_back(std::move(task));
            }
        }
        release_unlocked();
        if (stopping_) {
            break;
        }
        if (ready_.empty()) {
            if (timers_.empty()) {
                work_.wait(lock);
            } else {
                // A copy: the heap may reallocate while this thread waits.
                const clock::time_point next = timers_.top().when;
                work_.wait_until(lock, next);
            }
            continue;
        }
        std::shared_ptr<pooled_task> task = std::move(ready_.front());
        ready_.pop_front();
        if (task->retired_) {
            release.push_back(std::move(task));
            release_unlocked();
            continue;
        }
        task->state_ = pooled_task::run_state::running;
        task->runner_ = std::this_thread::get_id();
        lock.unlock();
        task->step();
        lock.lock();
        task->runner_ = {};
        const bool finish = task->retired_ && task->finish_in_pool_;
        if (!task->retired_ && task->state_ == pooled_task::run_state::running_again) {
            task->state_ = pooled_task::run_state::queued;
            ready_.push_back(task);
            work_.notify_one();
        } else {
            task->state_ = pooled_task::run_state::idle;
        }
        turn_end_.notify_all();
        lock.unlock();
        if (finish) {
            task->finish();
        }
        task.reset();
        lock.lock();
    }
}

}  // namespace starling::broker
