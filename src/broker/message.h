#pragma once

// app_message: one application message as the broker holds it after the log accepted it.
// Immutable and shared: the router hands the same object to every subscriber (each encodes
// it with its own packet id, QoS, retain flag, subscription ids and topic alias), so fan-out
// copies a pointer, not the payload.

#include "base/result.h"
#include "mqtt/packet/publish.h"
#include "mqtt/properties.h"
#include "mqtt/qos.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace starling::proto {
class publish_msg;
}

namespace starling::broker {

struct app_message {
    std::string topic;
    std::string payload;
    mqtt::qos qos = mqtt::qos::at_most_once;
    bool retain = false;
    // Properties forwarded to subscribers: payload format, content type, response topic,
    // correlation data, user properties. The expiry interval is recomputed at send time from
    // expires_at_ms; subscription identifiers and topic aliases are per subscriber.
    mqtt::properties properties;
    std::int64_t expires_at_ms = 0;  // 0: never expires
    std::int64_t created_at_ms = 0;
    std::string publisher_id;
    std::string node_id;
    // Order of the messages node_id accepted since it started (0: unknown); with created_at_ms
    // it orders one node's messages of the same millisecond (retained_echoes.h).
    std::uint64_t sequence = 0;

    bool expired(std::int64_t now_ms) const {
        return expires_at_ms != 0 && now_ms >= expires_at_ms;
    }
    // Seconds left for the Message Expiry Interval forwarded to a subscriber (at least 1 while
    // not expired, so a message that is about to expire is not sent as "never expires").
    std::uint32_t remaining_expiry_seconds(std::int64_t now_ms) const;
};

using message_ptr = std::shared_ptr<const app_message>;

// Builds the message of an incoming PUBLISH (topic already resolved from any alias).
app_message from_publish(const mqtt::publish& p, std::string publisher_id, std::string node_id,
                         std::int64_t now_ms);

void to_proto(const app_message& m, proto::publish_msg& out);
app_message from_proto(const proto::publish_msg& in);

// Record value of msg.all / msg.retained.
std::string serialize(const app_message& m);
result<app_message> parse_message(std::string_view bytes);

}  // namespace starling::broker
