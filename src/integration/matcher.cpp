#include "integration/matcher.h"

#include "mqtt/topic.h"

#include <array>

namespace starling::integration {

namespace {

constexpr std::array<std::string_view, lifecycle_event_count> event_names{
    "CONNECTED", "DISCONNECTED", "SUBSCRIBED", "UNSUBSCRIBED", "AUTH_FAILED"};

}  // namespace

std::string_view to_string(lifecycle_event e) { return event_names[static_cast<std::size_t>(e)]; }

bool lifecycle_event_from_string(std::string_view name, lifecycle_event& out) {
    for (std::size_t i = 0; i < event_names.size(); ++i) {
        if (event_names[i] == name) {
            out = static_cast<lifecycle_event>(i);
            return true;
        }
    }
    return false;
}

void integration_matcher::replace(std::vector<entry> entries) {
    const bool none = entries.empty();
    std::uint32_t events = 0;
    for (const auto& e : entries) {
        events |= e.events;
    }
    table_.store(std::make_shared<const table>(std::move(entries)), std::memory_order_release);
    empty_.store(none, std::memory_order_release);
    events_.store(events, std::memory_order_release);
}

void integration_matcher::match_event(lifecycle_event e, std::vector<std::string>& out) const {
    if (!wants_event(e)) {
        return;
    }
    const auto snapshot = table_.load(std::memory_order_acquire);
    for (const auto& candidate : *snapshot) {
        if ((candidate.events & event_bit(e)) != 0) {
            out.push_back(candidate.log_topic);
        }
    }
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
