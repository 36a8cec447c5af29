#include "app/publish_admin.h"

#include "broker/message.h"
#include "mqtt/reason_code.h"
#include "mqtt/topic.h"
#include "mqtt/utf8.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <memory>
#include <utility>

namespace starling::app {
namespace {

// What the API publishes as: the publisher id of its messages (No Local compares it with the
// subscriber's client id, and client ids cannot be empty, so no subscriber is skipped).
constexpr const char* api_publisher = "";

// The first field a client could not have sent in a PUBLISH (MQTT strings: valid UTF-8
// without U+0000), or nullptr.
const char* invalid_string_field(const http::publish_request& r) {
    if (r.content_type && !mqtt::is_valid_utf8(*r.content_type)) {
        return "contentType";
    }
    for (const auto& [k, v] : r.user_properties) {
        if (!mqtt::is_valid_utf8(k) || !mqtt::is_valid_utf8(v)) {
            return "userProperties";
        }
    }
    return nullptr;
}

}  // namespace

http::publish_api publish_admin(broker::broker_core& core, http::api_access access) {
    return http::publish_api{
        .publish =
            [&core](http::publish_request r,
                    std::function<void(http::publish_outcome, std::string)> done) {
                using http::publish_outcome;
                const auto& cfg = core.cfg();
                if (mqtt::validate_topic_name(r.topic) != mqtt::reason_code::success) {
                    done(publish_outcome::bad_request,
                         "topic: not a valid MQTT topic name (no wildcards, valid UTF-8)");
                    return;
                }
                const auto levels = mqtt::topic_levels(r.topic);
                if (cfg.max_topic_segments != 0 && levels > cfg.max_topic_segments) {
                    done(publish_outcome::bad_request,
                         "topic: more levels than mqtt.topic.max-segments-count allows");
                    return;
                }
                if (r.response_topic &&
                    mqtt::validate_topic_name(*r.response_topic) != mqtt::reason_code::success) {
                    done(publish_outcome::bad_request, "responseTopic: not a valid topic name");
                    return;
                }
                if (const char* field = invalid_string_field(r)) {
                    done(publish_outcome::bad_request,
                         std::string(field) + ": not valid MQTT UTF-8 (U+0000 is not allowed)");
                    return;
                }
                mqtt::publish p;
                p.topic = std::move(r.topic);
                p.payload = std::move(r.payload);
                p.qos = static_cast<mqtt::qos>(r.qos);
                p.retain = r.retain;
                p.properties.user_properties = std::move(r.user_properties);
                p.properties.content_type = std::move(r.content_type);
                p.properties.message_expiry_interval = r.message_expiry_interval;
                p.properties.response_topic = std::move(r.response_topic);
                p.properties.correlation_data = std::move(r.correlation_data);
                if (p.retain && !p.payload.empty() &&
                    !core.retained().admits(p.topic, p.payload.size(), cfg.max_retained_messages,
                                            cfg.max_retained_bytes)) {
                    core.probe().retained_refused();
                    done(publish_outcome::retained_refused,
                         "retain: the node holds its maximum of retained messages");
                    return;
                }
                spdlog::info("REST publish to '{}' (QoS {}, retain {}, {} bytes)", p.topic,
                             static_cast<int>(p.qos), p.retain, p.payload.size());
                auto msg = std::make_shared<const broker::app_message>(
                    broker::from_publish(p, api_publisher, cfg.node_id, core.now_ms()));
                core.publish(std::move(msg), [done = std::move(done)](status st) {
                    if (!st) {
                        spdlog::warn("REST publish not written: {}", st.error().message());
                        done(publish_outcome::unavailable,
                             "the message log refused the message: " + st.error().message());
                        return;
                    }
                    done(publish_outcome::published, {});
                });
            },
        .access = std::move(access)};
}

}  // namespace starling::app
