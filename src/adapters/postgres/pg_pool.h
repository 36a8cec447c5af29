#pragma once

// pg_pool: the PostgreSQL adapter's bounded worker pool — N threads, each owning one libpq
// connection, fed from per-thread queues that share one capacity.
//
// Why: every libpqxx call blocks (network round trips, server locks), and no blocking call may
// run on an I/O thread or in an actor turn (docs/architecture.md §6). One connection per thread
// keeps each connection single-threaded, as libpq requires, without a lock around it.
//
// Ordering: post(key, ...) sends every task of a key to the same thread (key hash modulo N),
// so calls about one client or one credentials id run in call order; post_any() goes to the
// shortest queue.
//
// Lost database: a worker whose connection broke reconnects with exponential backoff
// (backoff_initial doubling to backoff_max) — in the background while idle, and never more
// often than that for tasks: a task arriving before the next attempt is due runs without a
// connection (pg_session::connection() returns nullptr) and fails at once. While idle, an
// open connection is checked every keepalive interval (SELECT 1), so healthy() notices a lost
// server without traffic.
//
// Lifecycle: construct; start() opens every connection on the caller's thread (failing when
// the server is unreachable) and runs `init` on the first one (migrations), then starts the
// threads; post() any number of tasks; stop() stops accepting, runs what is queued, closes the
// connections and joins (idempotent; the destructor calls it). A worker blocked in a connect
// attempt finishes it first (bounded by connect_timeout).
// Concurrency: post(), post_any(), stop(), healthy(), queue_depth() and running() are
// thread-safe. Tasks run on the worker threads.

#include "base/result.h"

#include <pqxx/connection>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace starling::adapters::postgres {

class pg_pool;

// A worker's connection as a task sees it. Worker thread only.
class pg_session {
  public:
    // The open connection, opening one if there is none and the backoff allows; nullptr when
    // the database cannot be reached now.
    pqxx::connection_base* connection();
    // Drops the connection and opens a new one at once, ignoring the backoff once (a task
    // retrying after its connection broke). nullptr when that fails.
    pqxx::connection_base* reconnect_now();
    // The connection broke under a task: drop it; the next connection() call reconnects.
    void mark_broken();
    // A round trip completed (even one the server answered with an error): the database is
    // reachable, so the pool is healthy again.
    void note_reachable();

  private:
    friend class pg_pool;
    using steady = std::chrono::steady_clock;

    pg_session(pg_pool& pool, std::size_t index) : pool_(pool), index_(index) {}
    bool try_connect();
    void idle_tick();
    steady::time_point idle_deadline() const;

    pg_pool& pool_;
    const std::size_t index_;
    std::unique_ptr<pqxx::connection> connection_;
    steady::time_point next_attempt_{};
    std::chrono::milliseconds backoff_{0};
    steady::time_point last_used_{steady::now()};
    bool reported_down_ = false;
};

class pg_pool {
  public:
    using task = std::function<void(pg_session&)>;

    struct options {
        std::string conninfo;     // libpq keyword/value string
        std::string description;  // host:port/database, for log lines (no password)
        std::size_t size = 8;
        std::size_t queue_capacity = 10000;
        std::chrono::milliseconds backoff_initial{100};
        std::chrono::milliseconds backoff_max{5000};
        std::chrono::milliseconds keepalive{5000};
        std::string thread_name = "pg-meta";  // "-<index>" is appended; 15 characters at most
    };

    explicit pg_pool(options opts);
    ~pg_pool();
    pg_pool(const pg_pool&) = delete;
    pg_pool& operator=(const pg_pool&) = delete;

    // Opens the connections, runs `init` on the first, starts the threads. Call once.
    status start(const std::function<status(pqxx::connection_base&)>& init);

    status post(std::size_t key_hash, task t);
    status post_any(task t);
    void stop();

    bool running() const;
    // False while the database is unreachable: the last connect attempt, keepalive or task of
    // any worker found the connection down; true again after the next success.
    bool healthy() const { return healthy_.load(std::memory_order_relaxed); }
    std::size_t queue_depth() const;
    std::size_t size() const { return options_.size; }

  private:
    friend class pg_session;

    struct worker {
        std::deque<task> queue;  // guarded by pool mutex_
        std::condition_variable wake;
        std::thread thread;
        std::unique_ptr<pg_session> session;
    };

    status post_to(std::size_t index, task t);
    void run(std::size_t index);
    std::unique_ptr<pqxx::connection> connect() const;  // throws libpqxx's exceptions

    const options options_;
    std::atomic<bool> healthy_{false};
    mutable std::mutex mutex_;
    std::vector<std::unique_ptr<worker>> workers_;
    std::size_t queued_ = 0;  // guarded by mutex_: tasks waiting, all workers
    bool accepting_ = false;  // guarded by mutex_
    bool stopping_ = false;   // guarded by mutex_
};

}  // namespace starling::adapters::postgres
