#include "broker/state_loader.h"

#include <spdlog/spdlog.h>

#include <map>

namespace starling::broker {

result<std::unordered_map<std::string, std::string>> load_compacted_topic(
    message_log& log, const std::string& topic, const std::string& group_id,
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
    for (const auto& tp : spec.assignment) {
        auto end = consumer.value()->end_offset(tp);
        if (!end) {
            return end.error();
        }
        if (end.value() > 0) {
            remaining.emplace(tp, end.value());
            (void)consumer.value()->seek(tp, 0);
        }
    }
    std::unordered_map<std::string, std::string> state;
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
            if (rec.value.empty()) {
                state.erase(rec.key);
            } else {
                state.insert_or_assign(rec.key, std::move(rec.value));
            }
            auto it = remaining.find(topic_partition{rec.topic, rec.partition});
            if (it != remaining.end() && rec.offset + 1 >= it->second) {
                remaining.erase(it);
            }
        }
    }
    consumer.value()->close();
    spdlog::info("loaded {} keys from {}", state.size(), topic);
    return state;
}

}  // namespace starling::broker
