#pragma once

// redis_shared_counters: the cluster-mode shared counters (port include/starling/shared_counters.h)
// on standalone Redis / Valkey through hiredis: counters are plain INCRBY/GET keys, token
// buckets one Lua script (counter_scripts.h: layout and refill semantics, identical to the
// embedded adapter). Every node calls the same keys, so a bucket is shared by the cluster.
//
// Threads: one worker thread `redis-counters` with its own blocking connection and a bounded
// queue; port methods only enqueue, and the callback runs on the worker (it must not block).
// A call past the queue bound, after stop(), or with invalid arguments completes inline on the
// caller's thread (queue_full, stopped, std::errc::invalid_argument).
//
// Lost Redis: a call fails (never a false grant) with not_connected, timed_out or io_error;
// the worker reconnects when the next call comes, at most once per `reconnect_interval`, so
// an outage costs each call at most one connect timeout and usually none. healthy() is false
// while disconnected. What a failure means is the caller's decision (the device-persisted
// limit lets the copies through).
//
// Lifecycle: open_redis_shared_counters() connects and loads the script, or fails; stop() (or
// the destructor) runs the queued calls and joins the worker. The clock must outlive it.

#include "adapters/redis/redis_connection.h"
#include "base/result.h"
#include "starling/clock.h"
#include "starling/shared_counters.h"

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace starling::adapters::redis {

struct redis_counters_config {
    std::string host = "localhost";
    std::uint16_t port = 6379;
    std::uint32_t db = 0;
    std::string username;
    std::string password;
    std::chrono::milliseconds connect_timeout{30000};
    std::chrono::milliseconds command_timeout{60000};
    std::string key_prefix;                             // before every key
    std::size_t queue_capacity = 8192;                  // waiting calls
    std::chrono::milliseconds reconnect_interval{500};  // at most one connect attempt per this
    redis_sentinel sentinel;                            // master set: through Sentinel
    redis_cluster cluster;                              // nodes set: Redis Cluster
    redis_tls tls;                                      // enabled: TLS to the servers
};

class redis_shared_counters;

// Connects, loads the script and returns the running counters, or the reason (also logged).
// `failure_detail`, when given, receives the connection's own account of a failure (the
// address tried, what the server or sentinel answered) for the operator.
result<std::unique_ptr<redis_shared_counters>> open_redis_shared_counters(
    const redis_counters_config& config, const clock& clk, std::string* failure_detail = nullptr);

class redis_shared_counters final : public shared_counters {
  public:
    ~redis_shared_counters() override;

    void stop();

    void add(std::string key, std::int64_t delta, callback<std::int64_t> done) override;
    void get(std::string key, callback<std::int64_t> done) override;
    void try_consume(std::string key, std::vector<bandwidth> limits, std::int64_t tokens,
                     callback<std::int64_t> done) override;
    void refund(std::string key, std::vector<bandwidth> limits, std::int64_t tokens,
                callback<std::int64_t> done) override;
    bool healthy() const override;

  private:
    class worker;
    friend result<std::unique_ptr<redis_shared_counters>> open_redis_shared_counters(
        const redis_counters_config&, const clock&, std::string*);

    redis_shared_counters(const redis_counters_config& config, const clock& clk);
    void bucket_call(std::string key, const std::vector<bandwidth>& limits, std::int64_t tokens,
                     bool refund, callback<std::int64_t> done);

    redis_counters_config config_;
    const clock& clock_;
    std::unique_ptr<worker> worker_;
};

}  // namespace starling::adapters::redis
