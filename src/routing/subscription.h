#pragma once

// What one client asked for with one topic filter. Stored by value in the subscription trie and
// handed to match() visitors by const reference (valid only during the visit).

#include <cstdint>
#include <optional>
#include <string>

namespace starling::routing {

// The per-filter options of a SUBSCRIBE (MQTT 5 "subscription options"; v3 clients only set qos).
struct subscription_options {
    std::uint8_t qos = 0;
    bool no_local = false;
    bool retain_as_published = false;
    std::uint8_t retain_handling = 0;

    bool operator==(const subscription_options&) const = default;
};

struct subscription {
    std::string client_id;  // who subscribed
    subscription_options options;
    std::optional<std::uint32_t> subscription_identifier;  // v5
    std::string share_group;                               // empty unless $share/<group>/<filter>
    // Cluster mode: the node whose client made this subscription, for entries mirrored from
    // client.subscriptions. Empty: this node's own client actor owns the entry.
    std::string owner_node;

    bool operator==(const subscription&) const = default;
};

}  // namespace starling::routing
