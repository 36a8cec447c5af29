#include "actor/timer_service.h"

#include "base/assert.h"

#include <pthread.h>

#include <algorithm>
#include <utility>

namespace starling::actor {
namespace {

// Below this many heap entries stale ones are not worth a rebuild.
constexpr std::size_t min_heap_for_rebuild = 64;

}  // namespace

timer_service::timer_service(std::string name, const starling::clock& clock)
    : name_(std::move(name)), clock_(clock) {}

timer_service::~timer_service() { stop(); }

void timer_service::start() {
    std::lock_guard lifecycle(lifecycle_mutex_);
    {
        std::lock_guard lock(mutex_);
        if (state_ != state::created) {
            return;
        }
        state_ = state::running;
    }
    thread_ = std::thread([this] { run(); });
}

void timer_service::stop() {
    std::lock_guard lifecycle(lifecycle_mutex_);
    {
        std::lock_guard lock(mutex_);
        if (state_ == state::stopped) {
            return;
        }
        state_ = state::stopped;
    }
    wake_.notify_all();
    if (thread_.joinable()) {
        if (thread_.get_id() == std::this_thread::get_id()) {
            STARLING_PANIC("timer_service::stop() called from a timer callback");
        }
        thread_.join();
    }
    // Pending timers are dropped; destroy their callbacks (and whatever they captured) outside
    // the lock.
    std::unordered_map<std::uint64_t, timer> dropped;
    {
        std::lock_guard lock(mutex_);
        dropped.swap(timers_);
        heap_.clear();
    }
}

timer_handle timer_service::schedule_after(duration delay, callback fn) {
    return schedule_at(clock_.steady_now() + delay, std::move(fn));
}

timer_handle timer_service::schedule_at(time_point when, callback fn) {
    bool earliest = false;
    timer_handle handle;
    {
        std::lock_guard lock(mutex_);
        if (state_ == state::stopped) {
            return {};
        }
        handle.id = next_id_++;
        timers_.emplace(handle.id, timer{when, std::move(fn)});
        push_locked(entry{when, handle.id});
        earliest = heap_.front().id == handle.id;
    }
    if (earliest) {
        wake_.notify_one();  // the thread may be sleeping until a later deadline
    }
    return handle;
}

bool timer_service::cancel(timer_handle handle) {
    callback doomed;
    {
        std::lock_guard lock(mutex_);
        auto it = timers_.find(handle.id);
        if (it == timers_.end()) {
            return false;
        }
        doomed = std::move(it->second.fn);
        timers_.erase(it);
        if (heap_.size() > min_heap_for_rebuild && heap_.size() > 2 * timers_.size()) {
            rebuild_heap_locked();
        }
    }
    // No wake-up needed: the thread skips the stale entry when it reaches the top.
    return true;
}

void timer_service::poke() {
    std::lock_guard lock(mutex_);
    wake_.notify_all();
}

std::size_t timer_service::pending() const {
    std::lock_guard lock(mutex_);
    return timers_.size();
}

std::uint64_t timer_service::fired() const {
    std::lock_guard lock(mutex_);
    return fired_;
}

std::size_t timer_service::heap_size_for_test() const {
    std::lock_guard lock(mutex_);
    return heap_.size();
}

void timer_service::push_locked(entry e) {
    heap_.push_back(e);
    std::push_heap(heap_.begin(), heap_.end(), later{});
}

void timer_service::rebuild_heap_locked() {
    heap_.clear();
    heap_.reserve(timers_.size());
    for (const auto& [id, t] : timers_) {
        heap_.push_back(entry{t.deadline, id});
    }
    std::make_heap(heap_.begin(), heap_.end(), later{});
    if (heap_.capacity() > 4 * heap_.size() + min_heap_for_rebuild) {
        heap_.shrink_to_fit();
    }
}

void timer_service::run() {
    pthread_setname_np(pthread_self(), name_.substr(0, 15).c_str());
    std::unique_lock lock(mutex_);
    while (state_ == state::running) {
        while (!heap_.empty() && !timers_.contains(heap_.front().id)) {
            std::pop_heap(heap_.begin(), heap_.end(), later{});
            heap_.pop_back();  // cancelled
        }
        if (heap_.empty()) {
            wake_.wait(lock);
            continue;
        }
        const entry top = heap_.front();
        const time_point now = clock_.steady_now();
        if (top.deadline > now) {
            // Sleep for the interval the clock port still reports; with a manual clock a
            // poke() cuts this short. Spurious wake-ups just loop.
            wake_.wait_for(lock, top.deadline - now);
            continue;
        }
        std::pop_heap(heap_.begin(), heap_.end(), later{});
        heap_.pop_back();
        auto it = timers_.find(top.id);
        callback fn = std::move(it->second.fn);
        timers_.erase(it);
        ++fired_;

        lock.unlock();
        try {
            fn();
        } catch (...) {
            STARLING_BUG(false, "timer callback threw");
        }
        fn = nullptr;  // destroy captures outside the lock
        lock.lock();
    }
}

}  // namespace starling::actor
