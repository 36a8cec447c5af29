#pragma once

// shared_limit: one cluster-wide token bucket of the shared-counters port
// (include/starling/shared_counters.h) seen as a blocking call, for consumer threads that
// already wait on their batch (the msg.persisted consumers: rate-limits.device-persisted-messages).
//
// Fail open: when the store does not answer (error or timeout) every token asked for is
// granted and the result says so — a rate limit protects Redis from bursts, and refusing all
// persistent traffic while Redis is away would turn a protective limit into an outage. The
// caller logs and counts it.
//
// Lifecycle: holds a reference to the counters, which outlive it. Concurrency: acquire() may
// be called from any number of threads at once (the port is thread-safe); it blocks its caller
// until the store answers or the timeout passes — never call it on an I/O thread or in an
// actor turn.

#include "starling/shared_counters.h"

#include <chrono>
#include <cstdint>
#include <string>
#include <system_error>
#include <vector>

namespace starling::ratelimit {

class shared_limit {
  public:
    struct grant {
        std::int64_t granted = 0;
        bool failed_open = false;  // the store failed; `granted` is everything asked for
        std::error_code error;     // why, when failed_open
    };

    shared_limit(shared_counters& counters, std::string key, std::vector<bandwidth> limits,
                 std::chrono::milliseconds timeout);

    // Takes up to `tokens` from the bucket; returns how many were granted.
    grant acquire(std::int64_t tokens);

    const std::vector<bandwidth>& limits() const { return limits_; }

  private:
    shared_counters& counters_;
    const std::string key_;
    const std::vector<bandwidth> limits_;
    const std::chrono::milliseconds timeout_;
};

}  // namespace starling::ratelimit
