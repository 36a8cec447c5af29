#include "adapters/embedded/sqlite_worker.h"

#include "adapters/embedded/sqlite_error.h"
#include "base/assert.h"

#include <pthread.h>

#include <future>
#include <utility>

namespace starling::adapters::embedded {

sqlite_worker::sqlite_worker(options opts) : options_(std::move(opts)) {}

sqlite_worker::~sqlite_worker() { stop(); }

status sqlite_worker::start(std::function<status(sqlite_db&)> init) {
    STARLING_ASSERT(!thread_.joinable());
    std::promise<status> started;
    auto started_future = started.get_future();
    // The promise moves into the thread: nothing on this stack is touched after start() returns.
    thread_ = std::thread([this, init = std::move(init), started = std::move(started)]() mutable {
        pthread_setname_np(pthread_self(), options_.thread_name.substr(0, 15).c_str());
        auto db = sqlite_db::open(options_.path, options_.open);
        if (!db) {
            started.set_value(db.error());
            return;
        }
        if (auto st = init(**db); !st) {
            started.set_value(st);
            return;
        }
        {
            std::lock_guard lock(mutex_);
            accepting_ = !stopping_;
        }
        started.set_value(status{});
        run(std::move(*db));
    });
    auto st = started_future.get();
    if (!st) {
        thread_.join();
    }
    return st;
}

status sqlite_worker::post(task t) {
    {
        std::lock_guard lock(mutex_);
        if (!accepting_) {
            return make_error_code(store_errc::stopped);
        }
        if (queue_.size() >= options_.queue_capacity) {
            return make_error_code(store_errc::queue_full);
        }
        queue_.push_back(std::move(t));
    }
    wake_.notify_one();
    return {};
}

void sqlite_worker::stop() {
    {
        std::lock_guard lock(mutex_);
        stopping_ = true;
        accepting_ = false;
    }
    wake_.notify_one();
    if (thread_.joinable() && thread_.get_id() != std::this_thread::get_id()) {
        thread_.join();
    }
}

bool sqlite_worker::running() const {
    std::lock_guard lock(mutex_);
    return accepting_;
}

std::size_t sqlite_worker::queue_depth() const {
    std::lock_guard lock(mutex_);
    return queue_.size();
}

void sqlite_worker::run(std::unique_ptr<sqlite_db> db) {
    std::deque<task> batch;
    for (;;) {
        {
            std::unique_lock lock(mutex_);
            wake_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
            if (queue_.empty()) {
                break;  // stopping, and everything queued before stop() has run
            }
            batch.swap(queue_);
        }
        // Tasks run outside the lock so callers never wait on SQLite to post.
        for (auto& t : batch) {
            t(*db);
        }
        batch.clear();
    }
    db.reset();  // close the connection on the thread that used it
}

}  // namespace starling::adapters::embedded
