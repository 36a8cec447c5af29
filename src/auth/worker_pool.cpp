#include "auth/worker_pool.h"

#include <pthread.h>

namespace starling::auth {

worker_pool::worker_pool(std::string name, std::size_t threads, std::size_t queue_limit)
    : queue_limit_(queue_limit) {
    for (std::size_t i = 0; i < std::max<std::size_t>(1, threads); ++i) {
        threads_.emplace_back([this] { run(); });
        // Thread names are limited to 15 characters.
        ::pthread_setname_np(threads_.back().native_handle(), name.substr(0, 15).c_str());
    }
}

worker_pool::~worker_pool() { stop(); }

bool worker_pool::submit(std::function<void()> job) {
    {
        std::lock_guard lock(mutex_);
        if (stopping_ || jobs_.size() >= queue_limit_) {
            return false;
        }
        jobs_.push_back(std::move(job));
    }
    wake_.notify_one();
    return true;
}

void worker_pool::stop() {
    {
        std::lock_guard lock(mutex_);
        if (stopping_ && threads_.empty()) {
            return;
        }
        stopping_ = true;
        jobs_.clear();
    }
    wake_.notify_all();
    for (auto& t : threads_) {
        if (t.joinable()) {
            t.join();
        }
    }
    threads_.clear();
}

void worker_pool::run() {
    for (;;) {
        std::function<void()> job;
        {
            std::unique_lock lock(mutex_);
            wake_.wait(lock, [this] { return stopping_ || !jobs_.empty(); });
            if (stopping_) {
                return;
            }
            job = std::move(jobs_.front());
            jobs_.pop_front();
        }
        job();
    }
}

}  // namespace starling::auth
