#pragma once

// Topic names, topic filters and shared subscriptions (MQTT 3.1.1 section 4.7, MQTT 5.0
// sections 4.7 and 4.8.2), plus a reference matcher. These functions are pure and allocate
// nothing; routing/ has the fast trie, topic_matches is the specification in code (tests and
// fuzzing compare the trie against it).

#include "mqtt/reason_code.h"
#include "mqtt/utf8.h"

#include <cstddef>
#include <optional>
#include <string_view>

namespace starling::mqtt {

// success, or topic_name_invalid when the name is empty, longer than 65535 bytes, not valid
// MQTT UTF-8, or contains a wildcard ('+' or '#').
reason_code validate_topic_name(std::string_view name) noexcept;

// success, or topic_filter_invalid when the filter is empty, longer than 65535 bytes, not valid
// MQTT UTF-8, has '+' or '#' not occupying a whole level, '#' not last, or starts with
// "$share/" without a valid share name and filter (see parse_shared).
reason_code validate_topic_filter(std::string_view filter) noexcept;

struct shared_subscription {
    std::string_view group;   // the ShareName
    std::string_view filter;  // the topic filter after "$share/<group>/"

    bool operator==(const shared_subscription&) const = default;
};

// True when the filter starts with "$share/" (whether or not the rest is valid).
constexpr bool is_shared(std::string_view filter) noexcept { return filter.starts_with("$share/"); }

// How many levels a topic name or filter has ("a/b" 2, "" 1): what mqtt.topic.max-segments-count
// bounds.
constexpr std::size_t topic_levels(std::string_view topic) noexcept {
    std::size_t levels = 1;
    for (char c : topic) {
        levels += c == '/' ? 1 : 0;
    }
    return levels;
}

// For "$share/<group>/<filter>": the group and filter when the share name is at least one
// character and free of '/', '+' and '#', and the filter is a valid non-empty topic filter.
// nullopt for anything else, including filters that are not shared at all. The views point
// into `filter`.
std::optional<shared_subscription> parse_shared(std::string_view filter) noexcept;

// Does the (non-shared, valid) topic filter match the (valid) topic name? '+' matches one
// level, '#' the parent level and any number of child levels, and neither matches a first
// level that starts with '$' (MQTT 4.7.2).
bool topic_matches(std::string_view filter, std::string_view topic) noexcept;

namespace detail {
// The wildcard rules alone, for callers (the decoder) that have already validated length and
// UTF-8.
bool has_wildcard(std::string_view name) noexcept;
bool is_valid_filter_syntax(std::string_view filter) noexcept;
}  // namespace detail

}  // namespace starling::mqtt
