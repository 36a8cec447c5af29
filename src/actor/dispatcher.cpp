#include "actor/dispatcher.h"

#include "base/assert.h"

#include <pthread.h>

#include <algorithm>
#include <utility>

namespace starling::actor {
namespace detail {
namespace {

// The dispatcher whose worker runs on this thread, so stop() can refuse to join itself.
thread_local const dispatcher_core* current_core = nullptr;

void name_thread(const std::string& base, std::size_t index) {
    // Linux limits thread names to 15 characters; keep the tail (the index) readable.
    std::string name = base.substr(0, 11) + "-" + std::to_string(index);
    name.resize(std::min<std::size_t>(name.size(), 15));
    pthread_setname_np(pthread_self(), name.c_str());
}

}  // namespace

dispatcher_core::dispatcher_core(std::string name, std::size_t threads)
    : name_(std::move(name)), thread_count_(std::max<std::size_t>(threads, 1)) {}

dispatcher_core::~dispatcher_core() { stop(); }

void dispatcher_core::start() {
    std::lock_guard lifecycle(lifecycle_mutex_);
    {
        std::lock_guard lock(mutex_);
        if (state_.load(std::memory_order_relaxed) != state::created) {
            return;  // already running, or stopped: not restartable
        }
        state_.store(state::running, std::memory_order_release);
    }
    workers_.reserve(thread_count_);
    for (std::size_t i = 0; i < thread_count_; ++i) {
        workers_.emplace_back([this, i] { worker_loop(i); });
    }
}

void dispatcher_core::stop() {
    if (current_core == this) {
        STARLING_PANIC("dispatcher::stop() called from one of its own workers");
    }
    std::lock_guard lifecycle(lifecycle_mutex_);
    {
        std::lock_guard lock(mutex_);
        if (state_.load(std::memory_order_relaxed) == state::stopped) {
            return;
        }
        state_.store(state::stopping, std::memory_order_release);
    }
    wake_.notify_all();
    for (auto& worker : workers_) {
        worker.join();
    }
    workers_.clear();

    // Mailboxes still queued are dropped; destroy them (and the messages they hold) outside the
    // lock, since a mailbox's destructor runs its owner's handler destructor.
    std::deque<std::shared_ptr<schedulable>> dropped;
    {
        std::lock_guard lock(mutex_);
        dropped.swap(run_queue_);
        state_.store(state::stopped, std::memory_order_release);
    }
    for (auto& work : dropped) {
        work->discard_queued();  // no worker runs now; tells are refused while stopping
    }
}

bool dispatcher_core::schedule(std::shared_ptr<schedulable> work) {
    {
        std::lock_guard lock(mutex_);
        if (state_.load(std::memory_order_relaxed) >= state::stopping) {
            return false;
        }
        run_queue_.push_back(std::move(work));
    }
    wake_.notify_one();
    return true;
}

std::size_t dispatcher_core::run_queue_depth() const {
    std::lock_guard lock(mutex_);
    return run_queue_.size();
}

void dispatcher_core::worker_loop(std::size_t index) {
    name_thread(name_, index);
    current_core = this;
    for (;;) {
        std::shared_ptr<schedulable> work;
        {
            std::unique_lock lock(mutex_);
            wake_.wait(lock, [this] {
                return state_.load(std::memory_order_relaxed) >= state::stopping ||
                       !run_queue_.empty();
            });
            if (state_.load(std::memory_order_relaxed) >= state::stopping) {
                break;
            }
            work = std::move(run_queue_.front());
            run_queue_.pop_front();
        }
        work->run_turn();
        stats_.turns.fetch_add(1, std::memory_order_relaxed);
        // `work` is released here; if it was the last reference the mailbox dies on this thread.
    }
    current_core = nullptr;
}

}  // namespace detail

dispatcher::dispatcher(std::string name, std::size_t threads)
    : core_(std::make_shared<detail::dispatcher_core>(std::move(name), threads)) {}

dispatcher::~dispatcher() { core_->stop(); }

}  // namespace starling::actor
