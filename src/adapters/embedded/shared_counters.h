#pragma once

// embedded_shared_counters: the embedded-mode shared counters (port
// include/starling/shared_counters.h). In one process "shared" means shared between threads:
// plain counters and token buckets in memory, lost at restart (rate-limit state is transient
// in TBMQ's Redis too, and the session counters are rebuilt from live sessions).
//
// Token buckets follow Bucket4j's greedy refill, the semantics of TBMQ's "limit:seconds"
// configs: each bandwidth starts full and regains capacity/period tokens continuously (10:1 is
// one token every 100 ms, not ten at each second's edge), never beyond capacity; fractions of a
// token carry over between refills, so none are lost to rounding. A request takes
// min(requested, tokens of the emptiest bandwidth) from every bandwidth. refund() adds tokens
// back to every bandwidth, capped at capacity.
// A bucket remembers its limits; a call with different limits rebuilds it with each new
// bandwidth holding min(new capacity, tokens available before), so a reconfiguration never
// hands out a fresh burst.
//
// Lifecycle: construct with a clock that outlives it; no background work, nothing to stop.
// Concurrency: every method is thread-safe (keys hash onto 16 shards, each with its own
// mutex) and completes inline: the callback runs on the caller's thread before the method
// returns, outside any lock. Memory: one entry per distinct key, never evicted — the port's
// keys are a handful of cluster-wide names, not per-client ones.

#include "starling/clock.h"
#include "starling/shared_counters.h"

#include <array>
#include <cstdint>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

namespace starling::adapters::embedded {

class embedded_shared_counters final : public shared_counters {
  public:
    explicit embedded_shared_counters(const clock& clk) : clock_(clk) {}

    void add(std::string key, std::int64_t delta, callback<std::int64_t> done) override;
    void get(std::string key, callback<std::int64_t> done) override;
    void try_consume(std::string key, std::vector<bandwidth> limits, std::int64_t tokens,
                     callback<std::int64_t> done) override;
    void refund(std::string key, std::vector<bandwidth> limits, std::int64_t tokens,
                callback<std::int64_t> done) override;
    bool healthy() const override { return true; }

  private:
    struct band_state {
        bandwidth limit;
        std::int64_t tokens = 0;
        // capacity * elapsed_ns not yet turned into a whole token (Bucket4j's roundingError),
        // always < period_ns.
        std::int64_t remainder = 0;
    };
    struct bucket {
        std::vector<band_state> bands;
        std::int64_t last_refill_ns = 0;
    };
    struct shard {
        std::mutex mutex;
        std::unordered_map<std::string, std::int64_t> counters;
        std::unordered_map<std::string, bucket> buckets;
    };

    shard& shard_of(const std::string& key);
    // The bucket for `key` configured by `limits`, refilled up to now. Caller holds the lock.
    bucket& refilled_bucket(shard& s, const std::string& key, const std::vector<bandwidth>& limits);
    std::int64_t now_ns() const;

    const clock& clock_;
    std::array<shard, 16> shards_;
};

}  // namespace starling::adapters::embedded
