#pragma once

// redis_connection: one blocking hiredis connection, with AUTH and SELECT done at connect, a
// socket timeout on every command, and reconnection left to the owner.
//
// Standalone: it connects to host:port. Sentinel (endpoint.sentinel.master set): each
// connect() first asks the sentinels, in turn, for the current master's address (SENTINEL
// get-master-addr-by-name), connects there and checks with ROLE that it is a master, so a
// reconnect after a failover reaches the promoted replica. A former master that is now a
// replica answers writes with READONLY: command() treats that as a lost connection (closed, an
// io_error), so the owner reconnects — through the sentinels — as after any outage.
//
// Lifecycle: constructed disconnected; connect() opens it (bounded by connect_timeout);
// a transport failure (EOF, reset, timeout) closes it and every later command fails with
// redis_errc::not_connected until connect() succeeds again. Destruction closes it.
// Ownership and concurrency: not thread-safe; it belongs to the one worker thread that uses it
// (redis_device_inbox gives each worker its own). Blocking calls are the point: the worker
// thread exists so that no I/O or actor thread ever waits on Redis.

#include "base/result.h"

#include <chrono>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

struct redisContext;
struct redisReply;

namespace starling::adapters::redis {

// Redis Sentinel (redis.connection.type: sentinel): the master's name and the sentinels.
struct redis_sentinel {
    std::string master;  // empty: standalone
    std::vector<std::pair<std::string, std::uint16_t>> sentinels;
    std::string password;  // AUTH to the sentinels; empty: none
};

struct redis_endpoint {
    std::string host = "localhost";
    std::uint16_t port = 6379;
    std::uint32_t db = 0;
    std::string username;  // empty: AUTH <password> (Redis < 6 style); else AUTH <user> <pass>
    std::string password;  // empty: no AUTH
    std::chrono::milliseconds connect_timeout{30000};
    std::chrono::milliseconds command_timeout{60000};
    redis_sentinel sentinel;  // master set: host and port are unused
};

struct reply_deleter {
    void operator()(redisReply* reply) const;
};
using reply_ptr = std::unique_ptr<redisReply, reply_deleter>;

class redis_connection {
  public:
    explicit redis_connection(redis_endpoint endpoint);
    ~redis_connection();
    redis_connection(const redis_connection&) = delete;
    redis_connection& operator=(const redis_connection&) = delete;

    // Connects, authenticates and selects the database; closes a previous connection first.
    status connect();
    void close();
    bool connected() const { return context_ != nullptr; }

    // Sends one command and waits for its reply. A Redis error reply (REDIS_REPLY_ERROR) is a
    // *successful* result here, so the caller can react to it (NOSCRIPT); a transport failure
    // returns an error and closes the connection.
    result<reply_ptr> command(std::span<const std::string_view> args);

    // The text of the last connect or transport failure, for log lines.
    const std::string& last_error() const { return last_error_; }
    const redis_endpoint& endpoint() const { return endpoint_; }
    // "host:port" of the server connected to (or last tried), for log lines; in sentinel mode
    // "<master name> at host:port".
    std::string address() const;

  private:
    std::error_code fail(std::error_code ec, std::string what);
    // Sentinel mode: the master's address from the first sentinel that knows it.
    result<std::pair<std::string, std::uint16_t>> discover_master();
    status open(const std::string& host, std::uint16_t port);
    status check_master();

    redis_endpoint endpoint_;
    redisContext* context_ = nullptr;
    std::string last_error_;
    std::string host_;  // where connect() went last
    std::uint16_t port_ = 0;
    std::size_t next_sentinel_ = 0;  // the one that answered last is asked first
};

// The reply's text (status, error or bulk string); empty for other types.
std::string_view reply_text(const redisReply& reply);
bool is_error_reply(const redisReply& reply);

}  // namespace starling::adapters::redis
