#pragma once

// Shared-counters port (docs/architecture.md §2, §8): cluster-wide counters and token buckets for
// rate limits, the throughput quota and session limits. Cluster adapter: Redis; embedded
// adapter: in-process. Both pass tests/contract/shared_counters/. Callbacks run once on an
// adapter thread and must not block.

#include "base/result.h"

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace starling {

// One window of a rate limit: at most `capacity` tokens per `period_seconds`, refilled
// greedily (Bucket4j's "limit:seconds" bandwidth). A bucket holds if every bandwidth holds.
struct bandwidth {
    std::int64_t capacity = 0;
    std::int64_t period_seconds = 1;

    friend bool operator==(const bandwidth&, const bandwidth&) = default;
};

class shared_counters {
  public:
    template <class T>
    using callback = std::function<void(result<T>)>;

    virtual ~shared_counters() = default;

    // Adds delta (may be negative) and returns the new value.
    virtual void add(std::string key, std::int64_t delta, callback<std::int64_t> done) = 0;
    virtual void get(std::string key, callback<std::int64_t> done) = 0;

    // Takes up to `tokens` from the bucket `key` configured by `limits`; returns how many were
    // granted (0..tokens). All-or-nothing callers pass their need and compare.
    virtual void try_consume(std::string key, std::vector<bandwidth> limits, std::int64_t tokens,
                             callback<std::int64_t> done) = 0;

    // Returns unused tokens to the bucket (lease return).
    virtual void refund(std::string key, std::vector<bandwidth> limits, std::int64_t tokens,
                        callback<std::int64_t> done) = 0;

    virtual bool healthy() const = 0;
};

}  // namespace starling
