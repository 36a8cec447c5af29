#pragma once

// Offset bookkeeping shared by the broker's consumer loops (publish_router, persisted_consumer):
// a polled batch is either committed as a whole once handed on, or re-read from its start.

#include "base/result.h"
#include "starling/message_log.h"

#include <cstdint>
#include <map>
#include <utility>
#include <vector>

namespace starling::broker {

// Commits, per partition, the offset after the batch's last record.
inline status commit_batch(log_consumer& consumer, const std::vector<log_record>& records) {
    std::map<topic_partition, std::int64_t> next;
    for (const auto& rec : records) {
        next[topic_partition{rec.topic, rec.partition}] = rec.offset + 1;
    }
    return consumer.commit(
        std::vector<std::pair<topic_partition, std::int64_t>>(next.begin(), next.end()));
}

// Seeks every partition of the batch back to its first record, so the next poll re-reads it.
inline void rewind_batch(log_consumer& consumer, const std::vector<log_record>& records) {
    std::map<topic_partition, std::int64_t> first;
    for (const auto& rec : records) {
        first.try_emplace(topic_partition{rec.topic, rec.partition}, rec.offset);
    }
    for (const auto& [tp, offset] : first) {
        (void)consumer.seek(tp, offset);
    }
}

}  // namespace starling::broker
