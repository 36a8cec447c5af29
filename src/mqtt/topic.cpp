#include "mqtt/topic.h"

#include <cstddef>

namespace starling::mqtt {

namespace {

constexpr std::size_t max_topic_size = 65'535;
constexpr std::string_view share_prefix = "$share/";

// Level-by-level wildcard placement: '+' alone in its level, '#' alone in the last level.
bool plain_filter_syntax(std::string_view filter) noexcept {
    std::size_t level_start = 0;
    for (std::size_t i = 0; i < filter.size(); ++i) {
        char c = filter[i];
        if (c == '/') {
            level_start = i + 1;
        } else if (c == '+') {
            bool alone = i == level_start && (i + 1 == filter.size() || filter[i + 1] == '/');
            if (!alone) {
                return false;
            }
        } else if (c == '#') {
            if (i != level_start || i + 1 != filter.size()) {
                return false;
            }
        }
    }
    return true;
}

}  // namespace

namespace detail {

bool has_wildcard(std::string_view name) noexcept {
    // Two vectorised memchr scans; find_first_of("+#") would call memchr once per character.
    return name.find('+') != std::string_view::npos || name.find('#') != std::string_view::npos;
}

bool is_valid_filter_syntax(std::string_view filter) noexcept {
    if (filter.empty()) {
        return false;
    }
    if (is_shared(filter)) {
        return parse_shared(filter).has_value();
    }
    return plain_filter_syntax(filter);
}

}  // namespace detail

reason_code validate_topic_name(std::string_view name) noexcept {
    if (name.empty() || name.size() > max_topic_size || detail::has_wildcard(name) ||
        !is_valid_utf8(name)) {
        return reason_code::topic_name_invalid;
    }
    return reason_code::success;
}

reason_code validate_topic_filter(std::string_view filter) noexcept {
    if (filter.empty() || filter.size() > max_topic_size || !is_valid_utf8(filter) ||
        !detail::is_valid_filter_syntax(filter)) {
        return reason_code::topic_filter_invalid;
    }
    return reason_code::success;
}

std::optional<shared_subscription> parse_shared(std::string_view filter) noexcept {
    if (!is_shared(filter)) {
        return std::nullopt;
    }
    std::string_view rest = filter.substr(share_prefix.size());
    std::size_t slash = rest.find('/');
    if (slash == std::string_view::npos || slash == 0) {
        return std::nullopt;  // no '/' after the share name, or an empty share name
    }
    std::string_view group = rest.substr(0, slash);
    if (detail::has_wildcard(group)) {
        return std::nullopt;  // MQTT-4.8.2-2
    }
    std::string_view inner = rest.substr(slash + 1);
    if (inner.empty() || !plain_filter_syntax(inner)) {
        return std::nullopt;
    }
    return shared_subscription{group, inner};
}

bool topic_matches(std::string_view filter, std::string_view topic) noexcept {
    if (!topic.empty() && topic.front() == '$' && !filter.empty() &&
        (filter.front() == '+' || filter.front() == '#')) {
        return false;  // MQTT-4.7.2-1
    }
    std::size_t fi = 0;
    std::size_t ti = 0;
    for (;;) {
        std::size_t fe = filter.find('/', fi);
        if (fe == std::string_view::npos) {
            fe = filter.size();
        }
        std::string_view flevel = filter.substr(fi, fe - fi);
        if (flevel == "#") {
            return true;  // this level and everything below
        }
        std::size_t te = topic.find('/', ti);
        if (te == std::string_view::npos) {
            te = topic.size();
        }
        std::string_view tlevel = topic.substr(ti, te - ti);
        if (flevel != "+" && flevel != tlevel) {
            return false;
        }
        bool filter_last = fe == filter.size();
        bool topic_last = te == topic.size();
        if (filter_last && topic_last) {
            return true;
        }
        if (topic_last) {
            // "a/#" matches "a": '#' also matches the parent level.
            return filter.substr(fe + 1) == "#";
        }
        if (filter_last) {
            return false;
        }
        fi = fe + 1;
        ti = te + 1;
    }
}

}  // namespace starling::mqtt
