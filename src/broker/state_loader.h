#pragma once

// Loads a compacted state topic (client.session, client.subscriptions, msg.retained) into a
// key → latest value map before the node serves traffic (ARCHITECTURE.md §4).
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

namespace starling::broker {

result<std::unordered_map<std::string, std::string>> load_compacted_topic(
    message_log& log, const std::string& topic, const std::string& group_id,
    std::chrono::milliseconds timeout);

}  // namespace starling::broker
