#pragma once

// token_bucket: a node-local multi-window token bucket, the per-client incoming and outgoing
// publish limits (rate-limits.incoming-publish / outgoing-publish).
//
// Semantics are Bucket4j's greedy refill, which TBMQ's "limit:seconds" configs use: each
// window (bandwidth) starts full and regains capacity/period tokens continuously — 10:1 is one
// token every 100 ms, not ten at each second's edge — never beyond its capacity; fractions of
// a token carry over between refills so none are lost to rounding. A request succeeds only if
// every window holds a token, and then takes one from every window, so "10:1,300:60" lets a
// client burst 10 in a second but never more than 300 in any minute. The same arithmetic as
// the embedded shared-counters adapter (src/adapters/embedded/shared_counters.cpp), so a
// limit behaves alike node-local and cluster-wide.
//
// Lifecycle: a plain value owned by its user (one per client actor). Concurrency: not
// thread-safe — it is only ever touched on its owner's actor turns, which never overlap, so a
// lock would buy nothing on the per-message path. Time comes from the clock passed to each
// call (tests inject a manual one).

#include "starling/clock.h"
#include "starling/shared_counters.h"

#include <cstdint>
#include <vector>

namespace starling::ratelimit {

class token_bucket {
  public:
    // `limits` must be valid (parse_bandwidths); empty = unlimited.
    token_bucket(std::vector<bandwidth> limits, clock::steady_point now);

    // Takes one token from every window if each has one; false (nothing taken) otherwise.
    bool try_acquire(clock::steady_point now) { return try_acquire(1, now) == 1; }
    // Takes up to `tokens` (min over the windows) and returns how many it took.
    std::int64_t try_acquire(std::int64_t tokens, clock::steady_point now);

    // Tokens available now (the emptiest window). For tests and logs.
    std::int64_t available(clock::steady_point now);

  private:
    struct window {
        bandwidth limit;
        std::int64_t tokens = 0;
        std::int64_t remainder = 0;  // capacity * elapsed_ns not yet a whole token, < period_ns
    };
    void refill(clock::steady_point now);

    std::vector<window> windows_;
    clock::steady_point last_refill_;
};

}  // namespace starling::ratelimit
