#pragma once

// redis_connection: one blocking hiredis connection (standalone Redis), with AUTH and SELECT
// done at connect, a socket timeout on every command, and reconnection left to the owner.
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

struct redisContext;
struct redisReply;

namespace starling::adapters::redis {

struct redis_endpoint {
    std::string host = "localhost";
    std::uint16_t port = 6379;
    std::uint32_t db = 0;
    std::string username;  // empty: AUTH <password> (Redis < 6 style); else AUTH <user> <pass>
    std::string password;  // empty: no AUTH
    std::chrono::milliseconds connect_timeout{30000};
    std::chrono::milliseconds command_timeout{60000};
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

  private:
    std::error_code fail(std::error_code ec, std::string what);

    redis_endpoint endpoint_;
    redisContext* context_ = nullptr;
    std::string last_error_;
};

// The reply's text (status, error or bulk string); empty for other types.
std::string_view reply_text(const redisReply& reply);
bool is_error_reply(const redisReply& reply);

}  // namespace starling::adapters::redis
