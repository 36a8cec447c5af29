#include "broker/state_loader.h"

#include "broker/topics.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <map>

namespace starling::broker {

result<std::unordered_map<std::string, std::string>> load_compacted_topic(
    message_log& log, const std::string& topic, const std::string& group_id,
    std::chrono::milliseconds timeout) {
    auto snapshot = load_compacted_snapshot(log, topic, group_id, timeout);
    if (!snapshot) {
        return snapshot.error();
    }
    return std::move(snapshot.value().state);
}

result<compacted_snapshot> load_compacted_snapshot(message_log& log, const std::string& topic,
                                                   const std::string& group_id,
                                                   std::chrono::milliseconds timeout) {
    auto partitions = log.partition_count(topic);
    if (!partitions) {
        return partitions.error();
    }
    consumer_spec spec;
    spec.group_id = group_id;
    spec.reset = offset_reset::earliest;
    spec.max_poll_records = 5000;
    for (std::int32_t p = 0; p < partitions.value(); ++p) {
        spec.assignment.push_back(topic_partition{topic, p});
    }
    auto consumer = log.create_consumer(spec);
    if (!consumer) {
        return consumer.error();
    }
    std::map<topic_partition, std::int64_t> remaining;  // partition → end offset to reach
    std::map<topic_partition, std::int64_t> next;       // partition → first offset not read
    for (const auto& tp : spec.assignment) {
        auto end = consumer.value()->end_offset(tp);
        if (!end) {
            return end.error();
        }
        next.emplace(tp, end.value());
        if (end.value() > 0) {
            remaining.emplace(tp, end.value());
            (void)consumer.value()->seek(tp, 0);
        }
    }
    compacted_snapshot snapshot;
    auto& state = snapshot.state;
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (!remaining.empty()) {
        if (std::chrono::steady_clock::now() > deadline) {
            return std::make_error_code(std::errc::timed_out);
        }
        auto polled = consumer.value()->poll(std::chrono::milliseconds(100));
        if (!polled) {
            return polled.error();
        }
        for (auto& rec : polled.value()) {
            const topic_partition tp{rec.topic, rec.partition};
            // A poll may return records past the end captured above: they are in the
            // snapshot, so the follower starts after them.
            if (auto n = next.find(tp); n != next.end()) {
                n->second = std::max(n->second, rec.offset + 1);
            }
            std::string origin;
            for (const auto& h : rec.headers) {
                if (h.key == origin_node_header) {
                    origin = h.value;
                }
            }
            if (rec.value.empty()) {
                state.erase(rec.key);
                snapshot.origin.erase(rec.key);
            } else {
                snapshot.origin.insert_or_assign(rec.key, std::move(origin));
                state.insert_or_assign(rec.key, std::move(rec.value));
            }
            auto it = remaining.find(tp);
            if (it != remaining.end() && rec.offset + 1 >= it->second) {
                remaining.erase(it);
            }
        }
    }
    consumer.value()->close();
    spdlog::info("loaded {} keys from {}", state.size(), topic);
    snapshot.next_offsets.assign(next.begin(), next.end());
    return snapshot;
}

}  // namespace starling::broker
