#pragma once

// Loads a compacted state topic (client.session, client.subscriptions, msg.retained) into a
// key → latest value map before the node serves traffic (docs/architecture.md §4).
//
// Unlike TBMQ's marker record on partition 0 (issue #255: updates on other partitions were
// silently missed), the loader reads the real partition count from the log, assigns every
// partition, captures each partition's end offset at the start and reads until every partition
// reached it. Empty values are tombstones and remove the key.
//
// Runs on the caller's thread (start-up); blocking is expected there.

#include "base/result.h"
#include "starling/message_log.h"

#include <chrono>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace starling::broker {

// A loaded snapshot and, per partition, the offset of the first record it does not contain:
// where a follower (state_follower.h) starts so that nothing written between the snapshot and
// the follow is lost. Every record a follower applies again is one the snapshot already holds
// or a later one, and applying a compacted topic's records in order is idempotent.
struct compacted_snapshot {
    std::unordered_map<std::string, std::string> state;
    // Per key, the origin-node header of its latest record (empty when it had none).
    std::unordered_map<std::string, std::string> origin;
    std::vector<std::pair<topic_partition, std::int64_t>> next_offsets;
};

result<compacted_snapshot> load_compacted_snapshot(message_log& log, const std::string& topic,
                                                   const std::string& group_id,
                                                   std::chrono::milliseconds timeout);

result<std::unordered_map<std::string, std::string>> load_compacted_topic(
    message_log& log, const std::string& topic, const std::string& group_id,
    std::chrono::milliseconds timeout);

}  // namespace starling::broker
