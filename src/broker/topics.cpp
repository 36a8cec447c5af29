#include "broker/topics.h"

#include "auth/password.h"

#include <algorithm>

namespace starling::broker {

namespace {
constexpr std::size_t kafka_max_topic_length = 249;
}

std::string topic_names::app_topic_suffix(std::string_view client_id) const {
    const bool plain =
        !client_id.empty() && std::all_of(client_id.begin(), client_id.end(), [](char ch) {
            return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
                   (ch >= '0' && ch <= '9') || ch == '_' || ch == '-';
        });
    if (plain && name("msg.app.").size() + client_id.size() <= kafka_max_topic_length) {
        return std::string(client_id);
    }
    return "h." + auth::sha256_hex(client_id);
}

std::string topic_names::shared_topic_suffix(std::string_view filter) const {
    std::string mapped;
    bool plain = !filter.empty();
    std::size_t level_start = 0;
    for (std::size_t i = 0; i <= filter.size() && plain; ++i) {
        if (i == filter.size() || filter[i] == '/') {
            const std::string_view level = filter.substr(level_start, i - level_start);
            if (level == "slp" || level == "mlw") {
                plain = false;  // a literal level that reads like a mapped wildcard
            }
            level_start = i + 1;
            if (i == filter.size()) {
                break;
            }
            mapped.push_back('_');
            continue;
        }
        const char ch = filter[i];
        if (ch == '+') {
            mapped.append("slp");
        } else if (ch == '#') {
            mapped.append("mlw");
        } else if ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
                   (ch >= '0' && ch <= '9')) {
            mapped.push_back(ch);
        } else {
            plain = false;
        }
    }
    if (plain && name("msg.app.shared.").size() + mapped.size() <= kafka_max_topic_length) {
        return mapped;
    }
    return "h." + auth::sha256_hex(filter);
}

}  // namespace starling::broker
