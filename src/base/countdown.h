#pragma once

// A shared countdown for "wait until N asynchronous completions ran, or a deadline passed".
// Hold it by shared_ptr: a completion that runs after the waiter gave up must not touch the
// waiter's stack frame.

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <mutex>

namespace starling {

class countdown {
  public:
    void add(std::size_t n = 1) {
        std::lock_guard lock(mutex_);
        outstanding_ += n;
    }
    void done() {
        std::lock_guard lock(mutex_);
        if (outstanding_ > 0 && --outstanding_ == 0) {
            cv_.notify_all();
        }
    }
    // True when every completion arrived before the deadline.
    bool wait_until(std::chrono::steady_clock::time_point deadline) {
        std::unique_lock lock(mutex_);
        return cv_.wait_until(lock, deadline, [this] { return outstanding_ == 0; });
    }
    std::size_t outstanding() const {
        std::lock_guard lock(mutex_);
        return outstanding_;
    }

  private:
    mutable std::mutex mutex_;
    std::condition_variable cv_;
    std::size_t outstanding_ = 0;
};

}  // namespace starling
