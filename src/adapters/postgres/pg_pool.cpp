#include "adapters/postgres/pg_pool.h"

#include "adapters/postgres/pg_error.h"
#include "base/assert.h"

#include <pqxx/nontransaction>
#include <pthread.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <utility>

namespace starling::adapters::postgres {

// --- pg_session ------------------------------------------------------------------------------

bool pg_session::try_connect() {
    connection_.reset();
    try {
        connection_ = pool_.connect();
    } catch (const std::exception& e) {
        pool_.healthy_.store(false, std::memory_order_relaxed);
        backoff_ = backoff_.count() == 0 ? pool_.options_.backoff_initial
                                         : std::min(backoff_ * 2, pool_.options_.backoff_max);
        next_attempt_ = steady::now() + backoff_;
        if (!reported_down_) {
            spdlog::warn(
                "postgres {}: connection {} cannot connect, retrying with backoff up to "
                "{} ms: {}",
                pool_.options_.description, index_, pool_.options_.backoff_max.count(), e.what());
            reported_down_ = true;
        }
        return false;
    }
    if (reported_down_) {
        spdlog::info("postgres {}: connection {} re-established", pool_.options_.description,
                     index_);
        reported_down_ = false;
    }
    backoff_ = std::chrono::milliseconds{0};
    last_used_ = steady::now();
    pool_.healthy_.store(true, std::memory_order_relaxed);
    return true;
}

pqxx::connection_base* pg_session::connection() {
    last_used_ = steady::now();
    if (connection_) {
        return connection_.get();
    }
    if (steady::now() < next_attempt_) {
        return nullptr;  // fail fast until the next attempt is due
    }
    return try_connect() ? connection_.get() : nullptr;
}

pqxx::connection_base* pg_session::reconnect_now() {
    return try_connect() ? connection_.get() : nullptr;
}

void pg_session::mark_broken() {
    connection_.reset();
    pool_.healthy_.store(false, std::memory_order_relaxed);
}

void pg_session::note_reachable() { pool_.healthy_.store(true, std::memory_order_relaxed); }

pg_session::steady::time_point pg_session::idle_deadline() const {
    return connection_ ? last_used_ + pool_.options_.keepalive : next_attempt_;
}

void pg_session::idle_tick() {
    if (!connection_) {
        if (steady::now() >= next_attempt_) {
            try_connect();
        }
        return;
    }
    if (steady::now() < last_used_ + pool_.options_.keepalive) {
        return;
    }
    last_used_ = steady::now();
    try {
        pqxx::nontransaction tx(*connection_);
        tx.exec("SELECT 1");
        pool_.healthy_.store(true, std::memory_order_relaxed);
    } catch (const std::exception& e) {
        if (is_connection_loss(error_from_exception(e))) {
            mark_broken();
            try_connect();
        }
    }
}

// --- pg_pool ---------------------------------------------------------------------------------

pg_pool::pg_pool(options opts) : options_(std::move(opts)) {}

pg_pool::~pg_pool() { stop(); }

std::unique_ptr<pqxx::connection> pg_pool::connect() const {
    return std::make_unique<pqxx::connection>(options_.conninfo);
}

status pg_pool::start(const std::function<status(pqxx::connection_base&)>& init) {
    STARLING_ASSERT(workers_.empty());
    if (options_.size == 0 || options_.queue_capacity == 0) {
        return make_error_code(pg_errc::invalid_argument);
    }
    std::vector<std::unique_ptr<worker>> workers;
    for (std::size_t i = 0; i < options_.size; ++i) {
        auto w = std::make_unique<worker>();
        w->session.reset(new pg_session(*this, i));
        try {
            w->session->connection_ = connect();
        } catch (const std::exception& e) {
            spdlog::error("postgres {}: cannot connect: {}", options_.description, e.what());
            return make_error_code(pg_errc::unavailable);
        }
        if (i == 0) {
            if (auto st = init(*w->session->connection_); !st) {
                return st;
            }
        }
        workers.push_back(std::move(w));
    }
    healthy_.store(true, std::memory_order_relaxed);
    {
        std::lock_guard lock(mutex_);
        workers_ = std::move(workers);
        accepting_ = !stopping_;
    }
    for (std::size_t i = 0; i < workers_.size(); ++i) {
        workers_[i]->thread = std::thread([this, i] { run(i); });
    }
    return {};
}

status pg_pool::post_to(std::size_t index, task t) {
    {
        std::lock_guard lock(mutex_);
        if (!accepting_) {
            return make_error_code(pg_errc::stopped);
        }
        if (queued_ >= options_.queue_capacity) {
            return make_error_code(pg_errc::queue_full);
        }
        workers_[index]->queue.push_back(std::move(t));
        ++queued_;
    }
    workers_[index]->wake.notify_one();
    return {};
}

status pg_pool::post(std::size_t key_hash, task t) {
    if (workers_.empty()) {
        return make_error_code(pg_errc::stopped);
    }
    return post_to(key_hash % workers_.size(), std::move(t));
}

status pg_pool::post_any(task t) {
    std::size_t best = 0;
    {
        std::lock_guard lock(mutex_);
        if (workers_.empty()) {
            return make_error_code(pg_errc::stopped);
        }
        for (std::size_t i = 1; i < workers_.size(); ++i) {
            if (workers_[i]->queue.size() < workers_[best]->queue.size()) {
                best = i;
            }
        }
    }
    return post_to(best, std::move(t));
}

void pg_pool::stop() {
    {
        std::lock_guard lock(mutex_);
        stopping_ = true;
        accepting_ = false;
    }
    for (auto& w : workers_) {
        w->wake.notify_one();
    }
    for (auto& w : workers_) {
        if (w->thread.joinable() && w->thread.get_id() != std::this_thread::get_id()) {
            w->thread.join();
        }
    }
    healthy_.store(false, std::memory_order_relaxed);
}

bool pg_pool::running() const {
    std::lock_guard lock(mutex_);
    return accepting_;
}

std::size_t pg_pool::queue_depth() const {
    std::lock_guard lock(mutex_);
    return queued_;
}

void pg_pool::run(std::size_t index) {
    const std::string name = options_.thread_name + "-" + std::to_string(index);
    pthread_setname_np(pthread_self(), name.substr(0, 15).c_str());
    worker& w = *workers_[index];
    pg_session& session = *w.session;
    for (;;) {
        task t;
        {
            std::unique_lock lock(mutex_);
            const auto deadline = session.idle_deadline();
            w.wake.wait_until(lock, deadline, [&] { return stopping_ || !w.queue.empty(); });
            if (w.queue.empty()) {
                if (stopping_) {
                    break;  // stopping, and everything queued before stop() has run
                }
                lock.unlock();
                session.idle_tick();  // reconnect or keepalive, outside the lock
                continue;
            }
            t = std::move(w.queue.front());
            w.queue.pop_front();
            --queued_;
        }
        t(session);
    }
    session.connection_.reset();  // close on the thread that used it
}

}  // namespace starling::adapters::postgres
