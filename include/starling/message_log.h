#pragma once

// Message-log port (docs/architecture.md §2, §3, §5). The log is Starling's durability backbone and
// its only coordination mechanism: every PUBLISH is produced here and acknowledged to the client
// only after the log acknowledged the write; consumers read it back and route.
//
// Adapters: the embedded in-process log (default, persisted under data_dir) and Kafka
// (librdkafka). Both pass tests/contract/message_log/. Semantics follow Kafka's so the core
// never learns which one is in use:
//   - a topic has a fixed number of partitions; records in one partition have dense,
//     increasing offsets starting at 0; order is kept per partition only;
//   - produce() picks the partition as partition_for_key(key, partitions) unless told one;
//   - consumers in one group share a topic's partitions (each partition has one owner in the
//     group); a consumer with manual assignment reads exactly the partitions it names;
//   - commit() stores "next offset to read" per partition and group; a new member of the group
//     resumes there (or at the reset policy when nothing was committed);
//   - compacted topics keep at least the last record per key; an empty value is a tombstone.

#include "base/result.h"

#include <chrono>
#include <compare>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace starling {

struct log_header {
    std::string key;
    std::string value;
    bool operator==(const log_header&) const = default;
};

struct topic_spec {
    std::string name;
    std::int32_t partitions = 1;
    std::int64_t retention_ms = -1;     // -1: keep forever
    std::int64_t retention_bytes = -1;  // per partition; -1: unbounded
    bool compacted = false;             // cleanup.policy=compact
};

struct topic_partition {
    std::string topic;
    std::int32_t partition = 0;
    auto operator<=>(const topic_partition&) const = default;
};

struct log_record {
    std::string topic;
    std::int32_t partition = 0;
    std::int64_t offset = 0;
    std::int64_t timestamp_ms = 0;  // producer wall clock, ms since the Unix epoch
    std::string key;
    std::string value;  // empty on a compacted topic = tombstone
    std::vector<log_header> headers;
};

struct produce_ack {
    std::int32_t partition = 0;
    std::int64_t offset = 0;
};

// Runs exactly once, on a thread owned by the log (never an I/O thread of the caller). It must
// not block: owners post the outcome to their actor.
using produce_callback = std::function<void(result<produce_ack>)>;

enum class offset_reset : std::uint8_t { earliest, latest };

struct consumer_spec {
    // Consumers with the same group id share the subscribed topics' partitions and commit
    // offsets under that group.
    std::string group_id;
    // Static membership (Kafka group.instance.id): a member that comes back with the same id
    // gets its partitions back without a full rebalance. May be empty.
    std::string instance_id;
    // Either subscribe to topics with group management...
    std::vector<std::string> topics;
    // ...or read exactly these partitions (no group management; commits still use group_id).
    std::vector<topic_partition> assignment;
    offset_reset reset = offset_reset::earliest;
    std::size_t max_poll_records = 500;
};

// A consumer is used by one thread at a time (like a Kafka consumer), except wakeup(), which
// any thread may call to make a blocked poll() return early.
class log_consumer {
  public:
    virtual ~log_consumer() = default;

    // Waits up to `timeout` for records of assigned, unpaused partitions and returns what is
    // available (possibly nothing). Records of one partition come in offset order.
    virtual result<std::vector<log_record>> poll(std::chrono::milliseconds timeout) = 0;

    // Commits, per partition, the offset of the next record to read (last processed + 1).
    virtual status commit(const std::vector<std::pair<topic_partition, std::int64_t>>& next) = 0;

    // The position for the next poll() of an assigned partition.
    virtual status seek(const topic_partition& tp, std::int64_t offset) = 0;
    virtual void pause(const std::vector<topic_partition>& tps) = 0;
    virtual void resume(const std::vector<topic_partition>& tps) = 0;
    virtual std::vector<topic_partition> assignment() const = 0;

    // Offset the next record produced to the partition will get (Kafka's high watermark).
    virtual result<std::int64_t> end_offset(const topic_partition& tp) = 0;

    virtual void wakeup() = 0;
    // Leaves the group (its partitions move to the remaining members). Idempotent. No ready
    // callback runs after it returns.
    virtual void close() = 0;

    // Lets an owner serve many consumers from a few threads (poll(0) when told, instead of a
    // thread blocked in poll() per consumer). `ready` is called, from a thread of the log, when
    // something a poll() would return or serve may have arrived since the last poll: records,
    // a rebalance, a wakeup(), an error. It is a hint, edge-triggered: what was already waiting
    // when it was set, or left unread by a poll that stopped at max_poll_records, does not call
    // it again — poll once after setting it, and again at once after a full poll. It must be
    // cheap and must not call into this consumer (it may run under the log's locks). An empty
    // function removes it; once set_ready_callback() or close() returns, the previous callback
    // is not running and never runs again. False: the adapter has no such signal (the owner
    // then polls on a timer).
    virtual bool set_ready_callback(std::function<void()> ready) {
        (void)ready;
        return false;
    }
};

class message_log {
  public:
    virtual ~message_log() = default;

    // Idempotent: an existing topic is left as it is (its real partition count wins).
    virtual status create_topic(const topic_spec& spec) = 0;
    virtual status delete_topic(std::string_view name) = 0;
    virtual result<std::int32_t> partition_count(std::string_view topic) = 0;

    // Appends a record. `done` runs once the record is durable by the adapter's policy (or
    // failed); a failure is never reported as success. partition < 0: chosen by key.
    virtual void produce(std::string_view topic, std::string key, std::string value,
                         std::vector<log_header> headers, produce_callback done,
                         std::int32_t partition = -1) = 0;

    virtual result<std::unique_ptr<log_consumer>> create_consumer(const consumer_spec& spec) = 0;

    // Waits until every produce() issued so far has completed its callback.
    virtual status flush(std::chrono::milliseconds timeout) = 0;

    // True while the backend accepts writes; shown by /actuator/health.
    virtual bool healthy() const = 0;
};

// Kafka's default partitioner (murmur2 of the key, positive, modulo partitions), so the embedded
// log, librdkafka (configured with partitioner=murmur2_random) and Java producers agree.
inline std::int32_t partition_for_key(std::string_view key, std::int32_t partitions) {
    const std::uint32_t seed = 0x9747b28c;
    const std::uint32_t m = 0x5bd1e995;
    const int r = 24;
    auto length = static_cast<std::uint32_t>(key.size());
    std::uint32_t h = seed ^ length;
    const auto* data = reinterpret_cast<const unsigned char*>(key.data());
    std::uint32_t length4 = length / 4;
    for (std::uint32_t i = 0; i < length4; ++i) {
        std::uint32_t k = static_cast<std::uint32_t>(data[i * 4 + 0]) |
                          (static_cast<std::uint32_t>(data[i * 4 + 1]) << 8) |
                          (static_cast<std::uint32_t>(data[i * 4 + 2]) << 16) |
                          (static_cast<std::uint32_t>(data[i * 4 + 3]) << 24);
        k *= m;
        k ^= k >> r;
        k *= m;
        h *= m;
        h ^= k;
    }
    const unsigned char* tail = data + length4 * 4;
    switch (length % 4) {
        case 3:
            h ^= static_cast<std::uint32_t>(tail[2]) << 16;
            [[fallthrough]];
        case 2:
            h ^= static_cast<std::uint32_t>(tail[1]) << 8;
            [[fallthrough]];
        case 1:
            h ^= static_cast<std::uint32_t>(tail[0]);
            h *= m;
            break;
        default:
            break;
    }
    h ^= h >> 13;
    h *= m;
    h ^= h >> 15;
    return static_cast<std::int32_t>((h & 0x7fffffffU) % static_cast<std::uint32_t>(partitions));
}

}  // namespace starling
