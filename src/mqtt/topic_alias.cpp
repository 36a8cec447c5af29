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

}  // namespace starling::mqtt
