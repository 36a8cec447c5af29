#pragma once

// stats_history: the statistics series of GET /api/timeseries. Every interval (a minute by
// default, historical-data-report.interval) a node reads its counters and gauges and writes one
// point per key (metadata_store.h, stats_keys) under its own node id to the metadata store's
// ts_kv table; every hour it deletes the points older than the retention (7 days by default).
//
// Nodes never coordinate: each writes its own rows, and the cluster-wide series is computed
// when read (http/timeseries_api.h). Points are stamped with the interval's start on the wall
// clock, rounded down to a multiple of the interval, so every node's points for one minute
// carry the same ts and sum without interpolation.
//
// Two parts:
//   stats_sampler   pure: successive readings → points (counters as the change since the last
//                   reading, gauges as read). Deterministic, unit-tested without time.
//   stats_recorder  drives the sampler from an actor::timer_service and writes through the
//                   metadata store. At most one write is in flight; a sample taken while the
//                   store still works on the previous one is skipped and its counts land in the
//                   next point (counted in skipped()).
//
// Concurrency: stats_sampler is not thread-safe (the recorder calls it from the timer thread
// only). stats_recorder's public members are thread-safe. Lifecycle: start() once, stop()
// before the timer service and the store stop; a store callback still pending after stop()
// finds the recorder's shared state alive and does nothing harmful.

#include "actor/timer_service.h"
#include "starling/clock.h"
#include "starling/metadata_store.h"

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace starling::broker {

namespace detail {
struct stats_recorder_state;  // stats_history.cpp
}

// What a node's probes read at one instant.
struct stats_reading {
    // Cumulative since the process started.
    std::uint64_t incoming_msgs = 0;
    std::uint64_t outgoing_msgs = 0;
    std::uint64_t dropped_msgs = 0;
    // Now.
    std::int64_t sessions = 0;       // connected to this node
    std::int64_t subscriptions = 0;  // in the cluster (this node's mirror)
    std::int64_t retained_msgs = 0;  // in the cluster (this node's mirror)
};

class stats_sampler {
  public:
    explicit stats_sampler(std::string node_id);

    // The points of one interval starting at ts_ms. The first call counts from zero (the
    // process's start); a counter that went backwards (it cannot, short of a bug) is taken
    // as restarted rather than written as a negative rate.
    std::vector<stats_point> sample(std::int64_t ts_ms, const stats_reading& reading);

  private:
    std::string node_id_;
    stats_reading previous_{};
};

struct stats_recorder_options {
    std::string node_id;
    std::chrono::milliseconds interval{std::chrono::minutes(1)};
    std::chrono::milliseconds retention{std::chrono::hours(24 * 7)};
    std::chrono::milliseconds sweep_every{std::chrono::hours(1)};
};

class stats_recorder {
  public:
    using read_fn = std::function<stats_reading()>;

    // `read` runs on the timer thread and must be cheap and thread-safe (probe reads).
    stats_recorder(stats_recorder_options options, metadata_store& store,
                   actor::timer_service& timers, const clock& clk, read_fn read);
    ~stats_recorder();

    stats_recorder(const stats_recorder&) = delete;
    stats_recorder& operator=(const stats_recorder&) = delete;

    void start();
    void stop();

    // Intervals written, skipped (a write still in flight), and failed writes, since start().
    std::uint64_t written() const;
    std::uint64_t skipped() const;
    std::uint64_t failed() const;

  private:
    // Shared with the timer's and the store's callbacks, so neither outlives what it uses.
    std::shared_ptr<detail::stats_recorder_state> state_;
};

}  // namespace starling::broker
