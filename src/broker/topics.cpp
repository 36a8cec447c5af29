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

}  // namespace starling::broker
