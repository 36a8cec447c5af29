#include "adapters/redis/redis_device_inbox.h"

#include "adapters/redis/inbox_scripts.h"
#include "adapters/redis/redis_connection.h"
#include "adapters/redis/redis_errc.h"

#include <fmt/format.h>
#include <hiredis/hiredis.h>
#include <pthread.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <charconv>
#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>

namespace starling::adapters::redis {

namespace {

constexpr std::uint32_t max_inbox_messages = 65535;  // one message per MQTT packet id

std::string hash_tagged(const std::string& prefix, const std::string& client_id,
                        std::string_view suffix) {
    std::string key;
    key.reserve(prefix.size() + client_id.size() + suffix.size() + 2);
    key += prefix;
    key += '{';
    key += client_id;
    key += '}';
    key += suffix;
    return key;
}

// "<pubrel 0|1>|<expires_at_ms>|<record>" (inbox_scripts.h).
result<inbox_message> decode_message(long long packet_id, std::string_view value) {
    inbox_message message;
    if (packet_id < 1 || packet_id > 65535 || value.size() < 4 || value[1] != '|' ||
        (value[0] != '0' && value[0] != '1')) {
        return make_error_code(redis_errc::bad_reply);
    }
    message.packet_id = static_cast<std::uint16_t>(packet_id);
    message.pubrel = value[0] == '1';
    const auto rest = value.substr(2);
    const auto bar = rest.find('|');
    if (bar == std::string_view::npos) {
        return make_error_code(redis_errc::bad_reply);
    }
    const auto [ptr, ec] = std::from_chars(rest.data(), rest.data() + bar, message.expires_at_ms);
    if (ec != std::errc{} || ptr != rest.data() + bar) {
        return make_error_code(redis_errc::bad_reply);
    }
    message.record.assign(rest.substr(bar + 1));
    return message;
}

}  // namespace

std::optional<std::string> validate(const redis_inbox_config& config) {
    if (config.max_messages < 1 || config.max_messages > max_inbox_messages) {
        return fmt::format(
            "mqtt.persistent-session.device.persisted-messages.limit: \"{}\" is out of range "
            "(1..65535; a device inbox holds at most one message per MQTT packet id)",
            config.max_messages);
    }
    if (config.default_ttl.count() <= 0) {
        return fmt::format(
            "mqtt.persistent-session.device.persisted-messages.ttl: \"{}\" ms must be positive",
            config.default_ttl.count());
    }
    const bool standalone = config.sentinel.master.empty() && config.cluster.nodes.empty();
    if (!config.sentinel.master.empty() && !config.cluster.nodes.empty()) {
        return std::string(
            "redis.connection.type: Sentinel and Cluster settings at once (redis.sentinel.master "
            "and redis.cluster.nodes)");
    }
    if (!config.cluster.nodes.empty() && config.db != 0) {
        return fmt::format("redis.db: \"{}\" must be 0 with Redis Cluster", config.db);
    }
    if (!config.cluster.nodes.empty() && config.cluster.max_redirects == 0) {
        return std::string("redis.cluster.maxRedirects: must be at least 1");
    }
    if (standalone && config.host.empty()) {
        return std::string("redis.standalone.host: must not be empty");
    }
    if (standalone && config.port == 0) {
        return std::string("redis.standalone.port: \"0\" is not a Redis port");
    }
    if (!config.sentinel.master.empty() && config.sentinel.sentinels.empty()) {
        return std::string("redis.sentinel.sentinels: required with redis.sentinel.master");
    }
    if (config.connect_timeout.count() <= 0) {
        return std::string("redis.standalone.connectTimeout: must be positive");
    }
    if (config.command_timeout.count() <= 0) {
        return std::string("redis.standalone.readTimeout: must be positive");
    }
    if (config.connections == 0 || config.queue_capacity == 0 ||
        config.reconnect_min.count() <= 0 || config.reconnect_max < config.reconnect_min ||
        config.ping_interval.count() < 0) {
        return std::string(
            "redis device inbox: connections, queue_capacity and reconnect_min must be positive, "
            "reconnect_max >= reconnect_min and ping_interval >= 0");
    }
    return std::nullopt;
}

// One worker: a thread, its connection, its script SHAs and its bounded queue (class comment
// in the header). Everything but post(), connected() and stop() runs on the worker thread
// (or, for start(), before the thread exists).
class redis_device_inbox::worker {
  public:
    // Runs on the worker with (this, {}), or inline with (nullptr, error) when rejected.
    using job = std::function<void(worker*, std::error_code)>;

    worker(const redis_inbox_config& config, std::size_t index)
        : config_(config),
          index_(index),
          connection_(redis_endpoint{config.host, config.port, config.db, config.username,
                                     config.password, config.connect_timeout,
                                     config.command_timeout, config.sentinel, config.cluster,
                                     config.tls}),
          backoff_(config.reconnect_min) {}

    ~worker() { stop(); }
    worker(const worker&) = delete;
    worker& operator=(const worker&) = delete;

    // The connection's account of its last failure (address, what the server answered).
    const std::string& last_error() const { return connection_.last_error(); }

    status start() {
        if (auto st = connect_and_load(); !st) {
            return st;
        }
        connected_ = true;
        thread_ = std::thread([this] {
            // "redis-inbox-<n>" in top / gdb; the kernel limit is 15 characters.
            const auto name = "redis-inbox-" + std::to_string(index_ % 100);
            pthread_setname_np(pthread_self(), name.c_str());
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
    std::uint64_t script_reloads() const { return reloads_.load(); }

    // EVALSHA of one script; NOSCRIPT (script cache flushed or a restarted server) loads it
    // again and retries once. A Redis error reply is logged and becomes server_error.
    result<reply_ptr> eval(inbox_script script, std::span<const std::string_view> keys,
                           std::span<const std::string_view> args) {
        const auto numkeys = std::to_string(keys.size());
        std::vector<std::string_view> argv;
        argv.reserve(3 + keys.size() + args.size());
        argv.emplace_back("EVALSHA");
        argv.emplace_back(shas_[static_cast<std::size_t>(script)]);
        argv.emplace_back(numkeys);
        argv.insert(argv.end(), keys.begin(), keys.end());
        argv.insert(argv.end(), args.begin(), args.end());
        for (int attempt = 0;; ++attempt) {
            if (!connection_.connected()) {
                return make_error_code(redis_errc::not_connected);
            }
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
                reloads_.fetch_add(1);
                spdlog::info("redis inbox: script {} missing on {}, loading it again",
                             shas_[static_cast<std::size_t>(script)], connection_.address());
                if (auto st = load(script); !st) {
                    return st.error();
                }
                argv[1] = shas_[static_cast<std::size_t>(script)];
                continue;
            }
            spdlog::warn("redis inbox: script {} failed on {}: {}", static_cast<int>(script),
                         connection_.address(), text);
            return make_error_code(redis_errc::server_error);
        }
    }

    // redis.wait.replicas: WAIT until that many replicas acknowledged this connection's writes
    // so far. Fewer is not_replicated: the write is on the master only and a failover now would
    // lose it, so the caller must not count it as stored (it retries; the duplicate that may
    // leave is what QoS 1 allows).
    status wait_for_replicas() {
        if (config_.wait_replicas == 0) {
            return {};
        }
        const auto replicas = std::to_string(config_.wait_replicas);
        const auto timeout = std::to_string(config_.wait_timeout.count());
        const std::string_view argv[] = {"WAIT", replicas, timeout};
        auto reply = connection_.command(argv);
        if (!reply) {
            lost(reply.error());
            return reply.error();
        }
        const redisReply& r = **reply;
        if (r.type != REDIS_REPLY_INTEGER) {
            spdlog::warn("redis inbox: WAIT refused by {}: {}", connection_.address(),
                         reply_text(r));
            return make_error_code(redis_errc::server_error);
        }
        if (r.integer < static_cast<long long>(config_.wait_replicas)) {
            spdlog::warn("redis inbox: {} of {} replicas acknowledged a write within {} ms on {}",
                         r.integer, config_.wait_replicas, config_.wait_timeout.count(),
                         connection_.address());
            return make_error_code(redis_errc::not_replicated);
        }
        return {};
    }

  private:
    status load(inbox_script script) {
        const std::string_view argv[] = {"SCRIPT", "LOAD",
                                         inbox_scripts[static_cast<std::size_t>(script)]};
        auto reply = connection_.command(argv);
        if (!reply) {
            lost(reply.error());
            return reply.error();
        }
        if ((*reply)->type != REDIS_REPLY_STRING) {
            spdlog::error("redis inbox: SCRIPT LOAD refused by {}: {}", connection_.address(),
                          reply_text(**reply));
            return make_error_code(redis_errc::server_error);
        }
        shas_[static_cast<std::size_t>(script)] = std::string(reply_text(**reply));
        return {};
    }

    status connect_and_load() {
        if (auto st = connection_.connect(); !st) {
            return st;
        }
        for (std::size_t i = 0; i < inbox_script_count; ++i) {
            if (auto st = load(static_cast<inbox_script>(i)); !st) {
                connection_.close();
                return st;
            }
        }
        return {};
    }

    // A transport failure: the connection is closed already; try again right away once (a
    // single dropped connection should cost one failed call, not a backoff period).
    void lost(std::error_code ec) {
        if (connected_.exchange(false)) {
            spdlog::warn("redis inbox: connection {} to {} lost ({}): {}", index_,
                         connection_.address(), ec.message(), connection_.last_error());
        }
        next_attempt_ = std::chrono::steady_clock::now();
    }

    void reconnect() {
        if (auto st = connect_and_load(); st) {
            connected_ = true;
            backoff_ = config_.reconnect_min;
            spdlog::info("redis inbox: connection {} to {} restored", index_,
                         connection_.address());
            return;
        }
        // Backoff runs on the real steady clock, not the injected one: it paces network
        // retries, which a test's manual clock must not freeze.
        spdlog::warn("redis inbox: reconnect {} to {} failed: {}; next try in {} ms", index_,
                     connection_.address(), connection_.last_error(), backoff_.count());
        next_attempt_ = std::chrono::steady_clock::now() + backoff_;
        backoff_ = std::min(backoff_ * 2, config_.reconnect_max);
    }

    void ping() {
        const std::string_view argv[] = {"PING"};
        if (auto reply = connection_.command(argv); !reply) {
            lost(reply.error());
        }
    }

    void run() {
        for (;;) {
            job next;
            bool ping_due = false;
            {
                std::unique_lock lock(mutex_);
                for (;;) {
                    if (!queue_.empty()) {
                        next = std::move(queue_.front());
                        queue_.pop_front();
                        break;
                    }
                    if (stopping_) {
                        return;
                    }
                    const auto now = std::chrono::steady_clock::now();
                    if (!connection_.connected()) {
                        if (now >= next_attempt_) {
                            break;  // idle and disconnected: reconnect in the background
                        }
                        cv_.wait_until(lock, next_attempt_);
                    } else if (config_.ping_interval.count() == 0) {
                        cv_.wait(lock);
                    } else if (now >= last_used_ + config_.ping_interval) {
                        ping_due = true;  // idle: check the connection so healthy() is current
                        break;
                    } else {
                        cv_.wait_until(lock, last_used_ + config_.ping_interval);
                    }
                }
            }
            if (!connection_.connected() && std::chrono::steady_clock::now() >= next_attempt_) {
                reconnect();
            }
            last_used_ = std::chrono::steady_clock::now();
            if (ping_due) {
                ping();
            }
            if (next) {
                next(this, {});
            }
        }
    }

    const redis_inbox_config& config_;
    const std::size_t index_;
    redis_connection connection_;  // worker thread only
    std::array<std::string, inbox_script_count> shas_;
    std::chrono::milliseconds backoff_;
    std::chrono::steady_clock::time_point next_attempt_{};
    std::chrono::steady_clock::time_point last_used_{};  // last command or ping (idle check)

    std::mutex mutex_;
    std::condition_variable cv_;
    std::deque<job> queue_;
    bool stopping_ = false;
    std::thread thread_;

    std::atomic<bool> connected_{false};
    std::atomic<std::uint64_t> reloads_{0};
};

namespace {

// Queues `work` (worker& -> result<T>) on the worker and hands its result to `done`; a
// rejected call completes inline with the rejection.
template <class Worker, class Done, class Work>
void submit(Worker& w, Done done, Work work) {
    w.post(
        [done = std::move(done), work = std::move(work)](Worker* self, std::error_code ec) mutable {
            if (self == nullptr) {
                done(ec);
                return;
            }
            done(work(*self));
        });
}

}  // namespace

result<std::unique_ptr<redis_device_inbox>> open_redis_device_inbox(
    const redis_inbox_config& config, const clock& clk, std::string* failure_detail) {
    if (auto why = validate(config)) {
        spdlog::error("redis inbox: {}", *why);
        return make_error_code(redis_errc::invalid_config);
    }
    std::unique_ptr<redis_device_inbox> inbox(new redis_device_inbox(config, clk));
    for (auto& w : inbox->workers_) {
        if (auto st = w->start(); !st) {
            spdlog::error(
                "redis inbox: cannot start ({}): {}: {}",
                describe_endpoint(config.host, config.port, config.sentinel, config.cluster),
                st.error().message(), w->last_error());
            if (failure_detail != nullptr) {
                *failure_detail = w->last_error();
            }
            return st.error();
        }
    }
    spdlog::info("redis inbox: {} connection(s) to {} db {}, limit {}, ttl {} ms",
                 config.connections,
                 describe_endpoint(config.host, config.port, config.sentinel, config.cluster),
                 config.db, config.max_messages, config.default_ttl.count());
    return inbox;
}

redis_device_inbox::redis_device_inbox(const redis_inbox_config& config, const clock& clk)
    : config_(config), clock_(clk) {
    for (std::size_t i = 0; i < config_.connections; ++i) {
        workers_.push_back(std::make_unique<worker>(config_, i));
    }
}

redis_device_inbox::~redis_device_inbox() { stop(); }

void redis_device_inbox::stop() {
    for (auto& w : workers_) {
        w->stop();
    }
}

redis_device_inbox::worker& redis_device_inbox::worker_for(const std::string& client_id) {
    return *workers_[std::hash<std::string>{}(client_id) % workers_.size()];
}

std::string redis_device_inbox::messages_key(const std::string& client_id) const {
    return hash_tagged(config_.key_prefix, client_id, "_messages");
}

std::string redis_device_inbox::last_packet_id_key(const std::string& client_id) const {
    return hash_tagged(config_.key_prefix, client_id, "_last_packet_id");
}

std::string redis_device_inbox::log_positions_key(const std::string& client_id) const {
    return hash_tagged(config_.key_prefix, client_id, "_log_positions");
}

std::string redis_device_inbox::message_key(const std::string& client_id,
                                            std::uint16_t packet_id) const {
    return messages_key(client_id) + "_" + std::to_string(packet_id);
}

bool redis_device_inbox::healthy() const {
    return std::all_of(workers_.begin(), workers_.end(),
                       [](const auto& w) { return w->connected(); });
}

std::uint64_t redis_device_inbox::script_reloads() const {
    std::uint64_t total = 0;
    for (const auto& w : workers_) {
        total += w->script_reloads();
    }
    return total;
}

void redis_device_inbox::append(const std::string& client_id, std::vector<inbox_entry> batch,
                                callback<append_result> done) {
    submit(worker_for(client_id), std::move(done),
           [this, client_id, batch = std::move(batch)](worker& w) -> result<append_result> {
               const std::int64_t now = clock_.epoch_ms();
               const std::int64_t default_expiry = now + config_.default_ttl.count();
               // Three numbers per entry as text: expiry, log offset, log timestamp.
               std::vector<std::string> numbers;
               numbers.reserve(3 * batch.size());
               for (const auto& entry : batch) {
                   numbers.push_back(std::to_string(
                       entry.expires_at_ms == 0 ? default_expiry : entry.expires_at_ms));
                   numbers.push_back(std::to_string(entry.from.offset));
                   numbers.push_back(std::to_string(entry.from.timestamp_ms));
               }
               const auto now_text = std::to_string(now);
               const auto limit_text = std::to_string(config_.max_messages);
               std::vector<std::string_view> args{now_text, limit_text};
               args.reserve(2 + 5 * batch.size());
               for (std::size_t i = 0; i < batch.size(); ++i) {
                   args.emplace_back(numbers[3 * i]);
                   args.emplace_back(batch[i].from.log);
                   args.emplace_back(numbers[3 * i + 1]);
                   args.emplace_back(numbers[3 * i + 2]);
                   args.emplace_back(batch[i].record);
               }
               const auto messages = messages_key(client_id);
               const auto counter = last_packet_id_key(client_id);
               const auto positions = log_positions_key(client_id);
               const std::string_view keys[] = {messages, counter, positions};
               auto reply = w.eval(inbox_script::append, keys, args);
               if (!reply) {
                   return reply.error();
               }
               const redisReply& r = **reply;
               if (r.type != REDIS_REPLY_ARRAY || r.elements != batch.size() + 1) {
                   return make_error_code(redis_errc::bad_reply);
               }
               if (auto st = w.wait_for_replicas(); !st) {
                   return st.error();
               }
               append_result out;
               out.packet_ids.reserve(batch.size());
               for (std::size_t i = 0; i < r.elements; ++i) {
                   const redisReply& e = *r.element[i];
                   if (e.type != REDIS_REPLY_INTEGER || e.integer < 0 ||
                       (i > 0 && e.integer > 65535)) {
                       return make_error_code(redis_errc::bad_reply);
                   }
                   if (i == 0) {
                       out.trimmed = static_cast<std::uint32_t>(e.integer);
                   } else {
                       out.packet_ids.push_back(static_cast<std::uint16_t>(e.integer));
                       out.repeats += e.integer == 0 ? 1 : 0;  // id 0: a repeat, not stored
                   }
               }
               return out;
           });
}

void redis_device_inbox::read_pending(const std::string& client_id, std::size_t max,
                                      callback<std::vector<inbox_message>> done) {
    submit(worker_for(client_id), std::move(done),
           [this, client_id, max](worker& w) -> result<std::vector<inbox_message>> {
               const auto now_text = std::to_string(clock_.epoch_ms());
               // Lua numbers are doubles: any max past 2^53 means "all" anyway.
               const auto max_text =
                   std::to_string(std::min<std::size_t>(max, std::size_t{1} << 53));
               const std::string_view args[] = {now_text, max_text};
               const auto messages = messages_key(client_id);
               const std::string_view keys[] = {messages};
               auto reply = w.eval(inbox_script::read, keys, args);
               if (!reply) {
                   return reply.error();
               }
               const redisReply& r = **reply;
               if (r.type != REDIS_REPLY_ARRAY || r.elements % 2 != 0) {
                   return make_error_code(redis_errc::bad_reply);
               }
               std::vector<inbox_message> out;
               out.reserve(r.elements / 2);
               for (std::size_t i = 0; i < r.elements; i += 2) {
                   const redisReply& id = *r.element[i];
                   const redisReply& value = *r.element[i + 1];
                   if (id.type != REDIS_REPLY_INTEGER || value.type != REDIS_REPLY_STRING) {
                       return make_error_code(redis_errc::bad_reply);
                   }
                   auto message = decode_message(id.integer, reply_text(value));
                   if (!message) {
                       spdlog::warn("redis inbox: undecodable message {} of client {}", id.integer,
                                    client_id);
                       return message.error();
                   }
                   out.push_back(std::move(*message));
               }
               return out;
           });
}

namespace {

// remove / mark_pubrel / clear: any non-error reply is success.
template <class Worker>
status run_simple(Worker& w, inbox_script script, std::span<const std::string_view> keys,
                  std::span<const std::string_view> args) {
    auto reply = w.eval(script, keys, args);
    if (!reply) {
        return reply.error();
    }
    return {};
}

}  // namespace

void redis_device_inbox::remove_batch(const std::string& client_id,
                                      std::vector<std::uint16_t> packet_ids, done_callback done) {
    submit(worker_for(client_id), std::move(done),
           [this, client_id, ids = std::move(packet_ids)](worker& w) {
               const auto messages = messages_key(client_id);
               std::vector<std::string> texts;
               texts.reserve(ids.size());
               for (auto id : ids) {
                   texts.push_back(std::to_string(id));
               }
               const std::vector<std::string_view> args(texts.begin(), texts.end());
               const std::string_view keys[] = {messages};
               return run_simple(w, inbox_script::remove, keys, args);
           });
}

void redis_device_inbox::mark_pubrel(const std::string& client_id, std::uint16_t packet_id,
                                     done_callback done) {
    submit(worker_for(client_id), std::move(done), [this, client_id, packet_id](worker& w) {
        const auto messages = messages_key(client_id);
        const auto id = std::to_string(packet_id);
        const std::string_view keys[] = {messages};
        const std::string_view args[] = {id};
        return run_simple(w, inbox_script::mark_pubrel, keys, args);
    });
}

void redis_device_inbox::clear(const std::string& client_id, done_callback done) {
    submit(worker_for(client_id), std::move(done), [this, client_id](worker& w) {
        const auto messages = messages_key(client_id);
        const auto counter = last_packet_id_key(client_id);
        const auto positions = log_positions_key(client_id);
        const std::string_view keys[] = {messages, counter, positions};
        return run_simple(w, inbox_script::clear, keys, std::span<const std::string_view>{});
    });
}

}  // namespace starling::adapters::redis
