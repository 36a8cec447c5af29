#include "auth/worker_pool.h"

#include <pthread.h>

#include <algorithm>

namespace starling::auth {

worker_pool::worker_pool(std::string name, std::size_t threads, std::size_t queue_limit,
                         std::chrono::milliseconds max_queue_wait, const starling::clock& clk)
    : queue_limit_(queue_limit), max_queue_wait_(max_queue_wait), clock_(clk) {
    for (std::size_t i = 0; i < std::max<std::size_t>(1, threads); ++i) {
        threads_.emplace_back([this] { run(); });
        // Thread names are limited to 15 characters.
        ::pthread_setname_np(threads_.back().native_handle(), name.substr(0, 15).c_str());
    }
}

worker_pool::~worker_pool() { stop(); }

bool worker_pool::submit(std::function<void()> job, std::function<void()> on_expired, lane l) {
    {
        std::lock_guard lock(mutex_);
        auto& queue = lane_of(l);
        if (stopping_ || queue.size() >= queue_limit_) {
            return false;
        }
        queue.push_back({std::move(job), std::move(on_expired), clock_.steady_now()});
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
        normal_.clear();
        low_.clear();
    }
    wake_.notify_all();
    for (auto& t : threads_) {
        if (t.joinable()) {
            t.join();
        }
    }
    threads_.clear();
}

std::size_t worker_pool::queued(lane l) const {
    std::lock_guard lock(mutex_);
    return l == lane::low ? low_.size() : normal_.size();
}

std::uint64_t worker_pool::expired() const {
    std::lock_guard lock(mutex_);
    return expired_;
}

void worker_pool::run() {
    std::vector<std::function<void()>> expired;
    for (;;) {
        std::function<void()> job;
        {
            std::unique_lock lock(mutex_);
            wake_.wait(lock, [this] { return stopping_ || !normal_.empty() || !low_.empty(); });
            if (stopping_) {
                return;
            }
            // Oldest first in each lane: everything that waited too long is at the front.
            if (max_queue_wait_.count() > 0) {
                const auto oldest_allowed = clock_.steady_now() - max_queue_wait_;
                for (auto* queue : {&normal_, &low_}) {
                    while (!queue->empty() && queue->front().enqueued < oldest_allowed) {
                        expired.push_back(std::move(queue->front().on_expired));
                        queue->pop_front();
                        ++expired_;
                    }
                }
            }
            auto& queue = !normal_.empty() ? normal_ : low_;
            if (!queue.empty()) {
                job = std::move(queue.front().job);
                queue.pop_front();
            }
        }
        for (auto& on_expired : expired) {
            if (on_expired) {
                on_expired();
            }
        }
        expired.clear();
        if (job) {
            job();
        }
    }
}

}  // namespace starling::auth
