#include "integration/matcher.h"

#include "mqtt/topic.h"

namespace starling::integration {

void integration_matcher::replace(std::vector<entry> entries) {
    const bool none = entries.empty();
    table_.store(std::make_shared<const table>(std::move(entries)), std::memory_order_release);
    empty_.store(none, std::memory_order_release);
}

void integration_matcher::match(std::string_view topic, std::vector<std::string>& out) const {
    if (empty()) {
        return;
    }
    const auto snapshot = table_.load(std::memory_order_acquire);
    for (const auto& e : *snapshot) {
        for (const auto& filter : e.topic_filters) {
            if (mqtt::topic_matches(filter, topic)) {
                out.push_back(e.log_topic);
                break;
            }
        }
    }
}

bool integration_matcher::routes_to(std::string_view log_topic) const {
    const auto snapshot = table_.load(std::memory_order_acquire);
    for (const auto& e : *snapshot) {
        if (e.log_topic == log_topic) {
            return true;
        }
    }
    return false;
}

}  // namespace starling::integration
