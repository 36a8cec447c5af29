#pragma once

// sqlite_worker: one thread that owns one SQLite connection and runs the tasks posted to it in
// order, from a bounded queue.
//
// Why a dedicated thread: every SQLite call blocks (file I/O, fsync on checkpoints), and no
// blocking call may run on an I/O thread or in an actor turn (docs/architecture.md §6). One thread
// per database file also serializes all access to the connection, so the adapters need no
// locks and every task sees the effects of the ones before it.
//
// Lifecycle: construct, start() (opens the file and runs the adapter's schema set-up on the
// worker thread, waiting for it), post() any number of tasks, stop() (runs what is queued, then
// closes the connection and joins; idempotent; the destructor calls it).
// Concurrency: post(), stop(), queue_depth() and running() are thread-safe. Tasks run on the
// worker thread; a task may post() further tasks.
// Bound: at most `queue_capacity` tasks wait; post() beyond that fails with
// store_errc::queue_full, and after stop() with store_errc::stopped.

#include "adapters/embedded/sqlite_db.h"
#include "adapters/embedded/sqlite_error.h"
#include "base/result.h"

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

namespace starling::adapters::embedded {

class sqlite_worker {
  public:
    using task = std::function<void(sqlite_db&)>;

    struct options {
        std::filesystem::path path{};
        std::size_t queue_capacity = 8192;
        std::string thread_name = "sqlite";  // at most 15 characters (pthread limit)
        sqlite_open_options open{};
    };

    explicit sqlite_worker(options opts);
    ~sqlite_worker();
    sqlite_worker(const sqlite_worker&) = delete;
    sqlite_worker& operator=(const sqlite_worker&) = delete;

    // Starts the thread, opens the database and runs `init` on it (schema, migrations). Returns
    // the first failure; on failure the thread has already exited. Call once.
    status start(std::function<status(sqlite_db&)> init);

    // Queues `t` to run on the worker thread.
    status post(task t);

    // Runs the queued tasks, closes the connection and joins the thread.
    void stop();

    bool running() const;
    std::size_t queue_depth() const;
    std::size_t queue_capacity() const { return options_.queue_capacity; }

  private:
    void run(std::unique_ptr<sqlite_db> db);

    const options options_;
    mutable std::mutex mutex_;
    std::condition_variable wake_;
    std::deque<task> queue_;  // guarded by mutex_
    bool accepting_ = false;  // guarded by mutex_: started and not stopping
    bool stopping_ = false;   // guarded by mutex_
    std::thread thread_;
};

// The shape of every port call of the SQLite-backed adapters: runs `work(db)` (returning
// status or result<T>) on the worker and hands the result to `done` there. A rejected post
// (queue full, stopped) completes `done` inline on the caller's thread. `storage_ok` follows
// the outcome: false after a storage failure, true again after any success.
template <class R, class Work>
void post_call(sqlite_worker& worker, std::atomic<bool>& storage_ok, std::function<void(R)> done,
               Work work) {
    // `done` is copied into the task so it is still here to report a rejected post.
    auto st = worker.post([&storage_ok, done, work = std::move(work)](sqlite_db& db) mutable {
        R r = work(db);
        if (r.has_error()) {
            if (is_storage_failure(r.error())) {
                storage_ok.store(false, std::memory_order_relaxed);
            }
        } else {
            storage_ok.store(true, std::memory_order_relaxed);
        }
        done(std::move(r));
    });
    if (!st) {
        done(R(boost::system::in_place_error, st.error()));
    }
}

}  // namespace starling::adapters::embedded
