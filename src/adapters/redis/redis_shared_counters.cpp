#include "adapters/redis/redis_shared_counters.h"

#include "adapters/redis/counter_scripts.h"
#include "adapters/redis/redis_connection.h"
#include "adapters/redis/redis_errc.h"

#include <fmt/format.h>
#include <hiredis/hiredis.h>
#include <pthread.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <condition_variable>
#include <deque>
#include <functional>
#include <limits>
#include <mutex>
#include <thread>

namespace starling::adapters::redis {

namespace {

constexpr std::int64_t max_period_seconds =
    std::numeric_limits<std::int64_t>::max() / 1'000'000'000;

bool valid(const std::vector<bandwidth>& limits) {
    return !limits.empty() && std::all_of(limits.begin(), limits.end(), [](const bandwidth& b) {
        return b.capacity > 0 && b.period_seconds > 0 && b.period_seconds <= max_period_seconds;
    });
}

// An integer reply, or a bulk string holding one (GET); nil reads as 0 (absent counter).
result<std::int64_t> integer_of(const redisReply& reply) {
    if (reply.type == REDIS_REPLY_INTEGER) {
        return static_cast<std::int64_t>(reply.integer);
    }
    if (reply.type == REDIS_REPLY_NIL) {
        return std::int64_t{0};
    }
    if (reply.type == REDIS_REPLY_STRING) {
        const auto text = reply_text(reply);
        std::int64_t value = 0;
        const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
        if (ec == std::errc{} && ptr == text.data() + text.size()) {
            return value;
        }
    }
    return make_error_code(redis_errc::bad_reply);
}

}  // namespace

// The worker thread, its connection, the script SHA and the queue. Everything but post(),
// connected() and stop() runs on the worker thread (or, for start(), before it exists).
class redis_shared_counters::worker {
  public:
    // Runs on the worker with (&connection-owner, {}), or inline with (nullptr, error).
    using job = std::function<void(worker*, std::error_code)>;

    explicit worker(const redis_counters_config& config)
        : config_(config),
          connection_(redis_endpoint{config.host, config.port, config.db, config.username,
                                     config.password, config.connect_timeout,
                                     config.command_timeout, config.sentinel, config.cluster,
                                     config.tls}) {}
    ~worker() { stop(); }
    worker(const worker&) = delete;
    worker& operator=(const worker&) = delete;

    // The connection's account of its last failure (address, what the server answered).
    const std::string& last_error() const { return connection_.last_error(); }

    status start() {
        if (auto st = connect_and_load(); !st) {
            return st;
        }
        thread_ = std::thread([this] {
            pthread_setname_np(pthread_self(), "redis-counters");
            run();
        });
        return {};
    }

    void stop() {
        {
            std::lock_guard lock(mutex_);
            if (stopping_) {
                return;
            }
            stopping_ = true;
        }
        cv_.notify_all();
        if (thread_.joinable()) {
            thread_.join();
        }
        connected_ = false;
    }

    void post(job j) {
        std::error_code rejected;
        {
            std::lock_guard lock(mutex_);
            if (stopping_) {
                rejected = redis_errc::stopped;
            } else if (queue_.size() >= config_.queue_capacity) {
                rejected = redis_errc::queue_full;
            } else {
                queue_.push_back(std::move(j));
            }
        }
        if (rejected) {
            j(nullptr, rejected);
            return;
        }
        cv_.notify_one();
    }

    bool connected() const { return connected_.load(); }

    // One command; reconnects first when the connection is down and the interval allows.
    result<reply_ptr> command(std::span<const std::string_view> argv) {
        if (!ensure_connected()) {
            return make_error_code(redis_errc::not_connected);
        }
        auto reply = connection_.command(argv);
        if (!reply) {
            lost(reply.error());
            return reply.error();
        }
        if (is_error_reply(**reply)) {
            spdlog::warn("redis counters: {} failed on {}: {}", argv[0], connection_.address(),
                         reply_text(**reply));
            return make_error_code(redis_errc::server_error);
        }
        return reply;
    }

    // EVALSHA of the bucket script; NOSCRIPT (cache flushed, server restarted) loads it again
    // and retries once.
    result<reply_ptr> eval_bucket(std::span<const std::string_view> keys_and_args,
                                  std::size_t numkeys) {
        for (int attempt = 0;; ++attempt) {
            if (!ensure_connected()) {
                return make_error_code(redis_errc::not_connected);
            }
            const auto n = std::to_string(numkeys);
            std::vector<std::string_view> argv{"EVALSHA", sha_, n};
            argv.insert(argv.end(), keys_and_args.begin(), keys_and_args.end());
            auto reply = connection_.command(argv);
            if (!reply) {
                lost(reply.error());
                return reply.error();
            }
            if (!is_error_reply(**reply)) {
                return reply;
            }
            const auto text = reply_text(**reply);
            if (attempt == 0 && text.starts_with("NOSCRIPT")) {
                if (auto st = load(); !st) {
                    return st.error();
                }
                continue;
            }
            spdlog::warn("redis counters: bucket script failed on {}: {}", connection_.address(),
                         text);
            return make_error_code(redis_errc::server_error);
        }
    }

  private:
    status load() {
        const std::string_view argv[] = {"SCRIPT", "LOAD", bucket_script};
        auto reply = connection_.command(argv);
        if (!reply) {
            lost(reply.error());
            return reply.error();
        }
        if ((*reply)->type != REDIS_REPLY_STRING) {
            spdlog::error("redis counters: SCRIPT LOAD refused by {}: {}", connection_.address(),
                          reply_text(**reply));
            return make_error_code(redis_errc::server_error);
        }
        sha_ = std::string(reply_text(**reply));
        return {};
    }

    status connect_and_load() {
        last_attempt_ = std::chrono::steady_clock::now();
        if (auto st = connection_.connect(); !st) {
            return st;
        }
        if (auto st = load(); !st) {
            connection_.close();
            return st;
        }
        connected_ = true;
        return {};
    }

    // Reconnects at most once per reconnect_interval (real time: it paces network attempts,
    // which a test's manual clock must not freeze).
    bool ensure_connected() {
        if (connection_.connected()) {
            return true;
        }
        if (std::chrono::steady_clock::now() < last_attempt_ + config_.reconnect_interval) {
            return false;
        }
        if (auto st = connect_and_load(); !st) {
            spdlog::debug("redis counters: reconnect to {} failed: {}", connection_.address(),
                          connection_.last_error());
            return false;
        }
        spdlog::info("redis counters: connection to {} restored", connection_.address());
        return true;
    }

    void lost(std::error_code ec) {
        if (connected_.exchange(false)) {
            spdlog::warn("redis counters: connection to {} lost ({}): {}", connection_.address(),
                         ec.message(), connection_.last_error());
        }
        // One immediate retry: a single dropped connection should cost one failed call.
        last_attempt_ = {};
    }

    void run() {
        for (;;) {
            job next;
            {
                std::unique_lock lock(mutex_);
                cv_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
                if (queue_.empty()) {
                    return;  // stopping, and every queued call ran
                }
                next = std::move(queue_.front());
                queue_.pop_front();
            }
            next(this, {});
        }
    }

    const redis_counters_config& config_;
    redis_connection connection_;  // worker thread only
    std::string sha_;
    std::chrono::steady_clock::time_point last_attempt_{};

    std::mutex mutex_;
    std::condition_variable cv_;
    std::deque<job> queue_;
    bool stopping_ = false;
    std::thread thread_;
    std::atomic<bool> connected_{false};
};

result<std::unique_ptr<redis_shared_counters>> open_redis_shared_counters(
    const redis_counters_config& config, const clock& clk, std::string* failure_detail) {
    std::unique_ptr<redis_shared_counters> counters(new redis_shared_counters(config, clk));
    if (auto st = counters->worker_->start(); !st) {
        spdlog::error("redis counters: cannot start ({}): {}: {}",
                      describe_endpoint(config.host, config.port, config.sentinel, config.cluster),
                      st.error().message(), counters->worker_->last_error());
        if (failure_detail != nullptr) {
            *failure_detail = counters->worker_->last_error();
        }
        return st.error();
    }
    return counters;
}

redis_shared_counters::redis_shared_counters(const redis_counters_config& config, const clock& clk)
    : config_(config), clock_(clk), worker_(std::make_unique<worker>(config_)) {}

redis_shared_counters::~redis_shared_counters() { stop(); }

void redis_shared_counters::stop() { worker_->stop(); }

bool redis_shared_counters::healthy() const { return worker_->connected(); }

void redis_shared_counters::add(std::string key, std::int64_t delta, callback<std::int64_t> done) {
    worker_->post([key = config_.key_prefix + key, delta, done = std::move(done)](
                      worker* w, std::error_code ec) mutable {
        if (w == nullptr) {
            done(ec);
            return;
        }
        const auto d = std::to_string(delta);
        const std::string_view argv[] = {"INCRBY", key, d};
        auto reply = w->command(argv);
        done(reply ? integer_of(**reply) : result<std::int64_t>(reply.error()));
    });
}

void redis_shared_counters::get(std::string key, callback<std::int64_t> done) {
    worker_->post([key = config_.key_prefix + key, done = std::move(done)](
                      worker* w, std::error_code ec) mutable {
        if (w == nullptr) {
            done(ec);
            return;
        }
        const std::string_view argv[] = {"GET", key};
        auto reply = w->command(argv);
        done(reply ? integer_of(**reply) : result<std::int64_t>(reply.error()));
    });
}

void redis_shared_counters::try_consume(std::string key, std::vector<bandwidth> limits,
                                        std::int64_t tokens, callback<std::int64_t> done) {
    bucket_call(std::move(key), limits, tokens, false, std::move(done));
}

void redis_shared_counters::refund(std::string key, std::vector<bandwidth> limits,
                                   std::int64_t tokens, callback<std::int64_t> done) {
    bucket_call(std::move(key), limits, tokens, true, std::move(done));
}

void redis_shared_counters::bucket_call(std::string key, const std::vector<bandwidth>& limits,
                                        std::int64_t tokens, bool refund,
                                        callback<std::int64_t> done) {
    if (tokens < 0 || !valid(limits)) {
        done(std::make_error_code(std::errc::invalid_argument));
        return;
    }
    // Arguments are built here, on the caller's thread, with the time of the call: the wall
    // clock (shared meaning across nodes), read through the injected clock.
    std::vector<std::string> args;
    args.reserve(5 + 2 * limits.size());
    args.push_back(config_.key_prefix + key);
    args.push_back(std::to_string(clock_.epoch_ms()));
    args.emplace_back(refund ? "refund" : "consume");
    args.push_back(std::to_string(tokens));
    args.push_back(std::to_string(limits.size()));
    for (const auto& b : limits) {
        args.push_back(std::to_string(b.capacity));
        args.push_back(std::to_string(b.period_seconds));
    }
    worker_->post(
        [args = std::move(args), done = std::move(done)](worker* w, std::error_code ec) mutable {
            if (w == nullptr) {
                done(ec);
                return;
            }
            std::vector<std::string_view> argv(args.begin(), args.end());
            auto reply = w->eval_bucket(argv, 1);
            done(reply ? integer_of(**reply) : result<std::int64_t>(reply.error()));
        });
}

}  // namespace starling::adapters::redis
