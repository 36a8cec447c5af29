#include "mqtt/topic_alias.h"

#include <iterator>

namespace starling::mqtt {

outbound_topic_aliases::choice outbound_topic_aliases::choose(std::string_view topic) const {
    if (maximum_ == 0 || topic.empty()) {
        return {};
    }
    if (auto it = by_topic_.find(topic); it != by_topic_.end()) {
        return {.alias = it->second->second, .with_topic = false};
    }
    if (recency_.size() < maximum_) {
        // Aliases are handed out 1, 2, 3… and never freed, so the next free one is size + 1.
        return {.alias = static_cast<std::uint16_t>(recency_.size() + 1), .with_topic = true};
    }
    return {.alias = recency_.back().second, .with_topic = true};  // least recently used
}

void outbound_topic_aliases::sent(std::string_view topic, choice c) {
    if (c.alias == 0 || c.alias > maximum_) {
        return;
    }
    if (auto it = by_topic_.find(topic); it != by_topic_.end()) {
        recency_.splice(recency_.begin(), recency_, it->second);  // used again: most recent
        return;
    }
    if (!c.with_topic) {
        return;  // not a choice for this topic; nothing was established
    }
    if (c.alias <= recency_.size()) {
        // Re-establishing an alias in use: the client forgets its old topic. choose() picks the
        // least recently used, which is last; look further only for another caller's choice.
        auto it = std::prev(recency_.end());
        while (it->second != c.alias && it != recency_.begin()) {
            --it;
        }
        if (it->second == c.alias) {
            by_topic_.erase(it->first);
            recency_.erase(it);
        }
    }
    recency_.emplace_front(std::string(topic), c.alias);
    by_topic_.emplace(recency_.front().first, recency_.begin());
}

std::string_view outbound_topic_aliases::topic_of(std::uint16_t alias) const {
    for (const auto& [topic, a] : recency_) {
        if (a == alias) {
            return topic;
        }
    }
    return {};
}

std::optional<inbound_topic_aliases::refusal> inbound_topic_aliases::resolve(
    std::string& topic, std::optional<std::uint16_t>& alias, std::uint16_t maximum) {
    if (!alias) {
        return std::nullopt;
    }
    if (*alias == 0 || *alias > maximum) {
        // MQTT-3.3.2-8, -9: 0x94 Topic Alias invalid.
        return refusal{reason_code::topic_alias_invalid, "topic alias out of range"};
    }
    if (!topic.empty()) {
        if (!table_) {
            table_ = std::make_unique<std::unordered_map<std::uint16_t, std::string>>();
        }
        (*table_)[*alias] = topic;
    } else {
        const std::string* known = nullptr;
        if (table_) {
            if (auto it = table_->find(*alias); it != table_->end()) {
                known = &it->second;
            }
        }
        if (known == nullptr) {
            // Section 3.3.4: an alias the client never defined on this connection.
            return refusal{reason_code::protocol_error, "unknown topic alias"};
        }
        topic = *known;
    }
    alias.reset();
    return std::nullopt;
}

std::string_view inbound_topic_aliases::topic_of(std::uint16_t alias) const {
    if (!table_) {
        return {};
    }
    const auto it = table_->find(alias);
    return it == table_->end() ? std::string_view{} : std::string_view{it->second};
}

}  // namespace starling::mqtt
