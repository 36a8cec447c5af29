#pragma once

// Error codes of the Redis adapters. Each compares equal to the nearest std::errc condition
// (not_connected == std::errc::not_connected, ...) so port-level code and the contract suites
// test conditions without naming this adapter.

#include <system_error>

namespace starling::adapters::redis {

enum class redis_errc {
    not_connected = 1,  // no connection to Redis (down, refused, or waiting for the next retry)
    timed_out,          // connect or command exceeded its timeout; the connection is dropped
    io_error,           // the connection broke mid-command; the command may or may not have run
    server_error,       // Redis answered with an error (script error, OOM, wrong type, ...)
    auth_failed,        // AUTH or SELECT was refused at connect
    bad_reply,          // a reply of an unexpected shape (a script and this binary disagree)
    queue_full,         // the adapter's bounded work queue is full: back off and retry
    stopped,            // the adapter is stopped
    invalid_config,     // a redis_inbox_config value is out of range (logged with the key)
    not_replicated,     // fewer replicas than redis.wait.replicas acknowledged a write in time
};

const std::error_category& redis_category();
std::error_code make_error_code(redis_errc e);

}  // namespace starling::adapters::redis

template <>
struct std::is_error_code_enum<starling::adapters::redis::redis_errc> : std::true_type {};
