#include "app/retained_admin.h"

#include "mqtt/reason_code.h"
#include "mqtt/topic.h"

#include <utility>

namespace starling::app {
namespace {

http::retained_view view_of(const broker::app_message& m) {
    return http::retained_view{.topic = m.topic,
                               .payload = m.payload,
                               .qos = static_cast<int>(m.qos),
                               .created_time_ms = m.created_at_ms,
                               .user_properties = m.properties.user_properties};
}

}  // namespace

http::retained_msg_api retained_admin(broker::broker_core& core, http::api_access access) {
    return http::retained_msg_api{
        .list =
            [&core](const std::string& filter) -> std::optional<std::vector<http::retained_view>> {
            // A shared filter names no retained topic: refused like any invalid filter.
            if (mqtt::validate_topic_filter(filter) != mqtt::reason_code::success ||
                mqtt::is_shared(filter)) {
                return std::nullopt;
            }
            std::vector<http::retained_view> out;
            core.retained().match(filter, core.now_ms(), [&](const broker::message_ptr& m) {
                out.push_back(view_of(*m));
            });
            return out;
        },
        .find = [&core](const std::string& topic) -> std::optional<http::retained_view> {
            // A valid topic name is a filter without wildcards that matches only itself.
            if (mqtt::validate_topic_name(topic) != mqtt::reason_code::success) {
                return std::nullopt;
            }
            std::optional<http::retained_view> found;
            core.retained().match(topic, core.now_ms(),
                                  [&](const broker::message_ptr& m) { found = view_of(*m); });
            return found;
        },
        .erase =
            [&core](std::string topic, std::function<void(result<bool>)> done) {
                core.erase_retained(topic, std::move(done));
            },
        .access = std::move(access)};
}

}  // namespace starling::app
