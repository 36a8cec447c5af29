#pragma once

// redis_device_inbox: the cluster-mode device inbox (port include/starling/device_inbox.h) on
// standalone Redis / Valkey through hiredis. Every operation is one Lua script
// (inbox_scripts.h: key layout and semantics), so it is atomic per client.
//
// Threads: `connections` workers (default 2), each with its own blocking connection and a
// bounded queue. A client's calls always go to the same worker (hash of the client id), so
// they run in call order; its callbacks run on that worker thread and must not block. Port
// methods only enqueue and return. Inline completion on the caller's thread happens only for
// redis_errc::queue_full and redis_errc::stopped (as the embedded adapter).
//
// Lost Redis: a call on a broken connection fails (never a false success) with not_connected,
// timed_out or io_error; the worker reconnects with exponential backoff (reconnect_min doubling
// to reconnect_max) in the background, and calls that arrive before the next attempt fail at
// once with not_connected. An idle connection is PINGed every ping_interval, so a server that
// went away shows in healthy() without traffic. healthy() is false while any worker is
// disconnected. Each reconnect selects the db, authenticates and loads the scripts again.
//
// Lifecycle: open_redis_device_inbox() validates the config, connects every worker and loads
// the scripts, or fails; stop() (or the destructor) runs the queued calls and joins the
// workers. The clock must outlive the inbox. Do not destroy it from one of its callbacks.

#include "adapters/redis/redis_connection.h"
#include "base/result.h"
#include "starling/clock.h"
#include "starling/device_inbox.h"

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace starling::adapters::redis {

// Everything the adapter needs; the composition root fills it from config keys redis.* and
// mqtt.persistent-session.device.persisted-messages.* (README.md has the mapping).
struct redis_inbox_config {
    std::string host = "localhost";
    std::uint16_t port = 6379;
    std::uint32_t db = 0;
    std::string username;
    std::string password;
    std::chrono::milliseconds connect_timeout{30000};
    std::chrono::milliseconds command_timeout{60000};
    std::uint32_t max_messages = 10000;                // 1..65535
    std::chrono::milliseconds default_ttl{604800000};  // for entries with expires_at_ms == 0
    std::string key_prefix;                            // before every key (TBMQ CACHE_PREFIX)
    std::size_t connections = 2;                       // workers, each with a connection
    std::size_t queue_capacity = 8192;                 // waiting calls per worker
    std::chrono::milliseconds reconnect_min{100};      // first retry after a failure
    std::chrono::milliseconds reconnect_max{5000};     // backoff cap
    std::chrono::milliseconds ping_interval{1000};     // PING an idle connection; 0 = never
    redis_sentinel sentinel;                           // master set: through Sentinel
    redis_cluster cluster;                             // nodes set: Redis Cluster
    redis_tls tls;                                     // enabled: TLS to the servers
    // append() waits (WAIT) until this many replicas have the write, at most wait_timeout;
    // fewer is a failure (redis_errc::not_replicated). 0 = no wait.
    std::uint32_t wait_replicas = 0;
    std::chrono::milliseconds wait_timeout{1000};
};

// Why the config cannot be used, naming the config key; nullopt when it is fine.
std::optional<std::string> validate(const redis_inbox_config& config);

class redis_device_inbox;

// Connects, loads the scripts and returns the running inbox, or the reason it cannot start
// (also logged): redis_errc::invalid_config, not_connected, timed_out, auth_failed,
// server_error (e.g. a Redis without Lua or KEEPTTL).
// `failure_detail`, when given, receives the connection's own account of a failure (the
// address tried, what the server or sentinel answered) for the operator.
result<std::unique_ptr<redis_device_inbox>> open_redis_device_inbox(
    const redis_inbox_config& config, const clock& clk, std::string* failure_detail = nullptr);

class redis_device_inbox final : public device_inbox {
  public:
    ~redis_device_inbox() override;

    void stop();

    void append(const std::string& client_id, std::vector<inbox_entry> batch,
                callback<append_result> done) override;
    void read_pending(const std::string& client_id, std::size_t max,
                      callback<std::vector<inbox_message>> done) override;
    void remove_batch(const std::string& client_id, std::vector<std::uint16_t> packet_ids,
                      done_callback done) override;
    void mark_pubrel(const std::string& client_id, std::uint16_t packet_id,
                     done_callback done) override;
    void clear(const std::string& client_id, done_callback done) override;

    bool healthy() const override;

    // The Redis key names of a client (with the prefix), for tools and tests.
    std::string messages_key(const std::string& client_id) const;
    std::string last_packet_id_key(const std::string& client_id) const;
    std::string log_positions_key(const std::string& client_id) const;
    std::string message_key(const std::string& client_id, std::uint16_t packet_id) const;

    // How many times a NOSCRIPT reply made a worker load a script again.
    std::uint64_t script_reloads() const;

  private:
    class worker;
    friend result<std::unique_ptr<redis_device_inbox>> open_redis_device_inbox(
        const redis_inbox_config&, const clock&, std::string*);

    redis_device_inbox(const redis_inbox_config& config, const clock& clk);
    worker& worker_for(const std::string& client_id);

    redis_inbox_config config_;
    const clock& clock_;
    std::vector<std::unique_ptr<worker>> workers_;
};

}  // namespace starling::adapters::redis
