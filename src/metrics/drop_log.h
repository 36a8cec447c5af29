#pragma once

// drop_log: which limit fired for whom, recently. Every dropped message copy whose client id
// and/or topic is known is recorded here (broker_probe::message_dropped with a client and a
// topic does it), so GET /api/drops can answer "who is being dropped, and why" for the last
// few minutes — droppedMsgs_total only says how many.
//
// Structure: two keyed windows, one keyed by client id, one by topic name. Each is split into
// `shards` independent shards (key hash → shard), each a hash map key → entry under its own
// mutex, plus an intrusive recency list (most recently updated first). An entry holds
// `buckets` time slots of `bucket_length` each (a ring indexed by bucket number modulo
// `buckets`; a slot whose stored bucket number is not the current one is reset before use), and
// each slot holds one counter per drop_reason. A key's recent count is the sum of the slots
// still inside the window. Each shard also keeps the same ring for all of its drops (the
// totals), so totals stay exact when keys are evicted.
//
// Bounds: at most `max_keys` keys per window (divided evenly among the shards). Recording a
// new key into a full shard evicts the least recently updated key of that shard; an evicted
// key that still had drops inside the window is counted in evictions(). Keys whose drops all
// left the window are removed on the way (not counted as evictions). So a topic storm costs at
// most max_keys entries: memory is bounded by max_keys × (key + ~300 bytes).
//
// Cost per drop: one hash and one short critical section per window touched (two when both a
// client and a topic are known); shards keep unrelated clients off each other's mutex. No
// allocation when the key is already present.
//
// Lifecycle: owned by broker_probe (one per node); lives as long as the metrics registry.
// Concurrency: record() and the queries may be called from any thread at once.

#include "metrics/broker_probe.h"
#include "starling/clock.h"

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace starling::metrics {

struct drop_log_options {
    std::chrono::seconds bucket_length{60};
    std::size_t buckets = 5;       // window = buckets × bucket_length (5 minutes)
    std::size_t max_keys = 10000;  // per window (clients, topics)
    std::size_t shards = 16;
};

using drop_counts = std::array<std::uint64_t, drop_reason_count>;

enum class drop_key_kind : std::uint8_t { client, topic };

// One row of a query: a client id or a topic and its drops inside the window, by reason.
struct drop_row {
    std::string key;
    drop_counts counts{};
    std::uint64_t total = 0;
};

struct drop_query {
    drop_key_kind by = drop_key_kind::client;
    std::optional<drop_reason> reason;  // only rows with drops of this reason, sorted by it
    std::optional<std::string> key;     // only this client id / topic
    std::size_t limit = 20;
};

struct drop_report {
    std::vector<drop_row> rows;  // highest count first (of `reason` if given, else total)
    drop_counts totals{};        // every recorded drop inside the window, by reason
    std::uint64_t total = 0;
    std::size_t matching = 0;  // rows that matched before `limit` cut them
    std::size_t keys = 0;      // keys held in the window's map (any age)
    std::uint64_t evictions = 0;
};

class drop_log {
  public:
    explicit drop_log(const starling::clock& clock, drop_log_options options = {});
    ~drop_log();

    drop_log(const drop_log&) = delete;
    drop_log& operator=(const drop_log&) = delete;

    // Records `count` drops of `reason`; an empty client id or topic is not recorded under
    // that key (the totals count the drop once either way).
    void record(drop_reason reason, std::string_view client_id, std::string_view topic,
                std::uint64_t count = 1);

    drop_report query(const drop_query& q) const;

    std::chrono::seconds window() const;
    std::chrono::seconds bucket_length() const { return options_.bucket_length; }
    std::size_t keys(drop_key_kind kind) const;
    std::uint64_t evictions(drop_key_kind kind) const;

  private:
    class keyed_window;

    const starling::clock& clock_;
    drop_log_options options_;
    std::unique_ptr<keyed_window> clients_;
    std::unique_ptr<keyed_window> topics_;

    std::int64_t bucket_now() const;
};

}  // namespace starling::metrics
