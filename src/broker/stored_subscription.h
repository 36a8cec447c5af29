#pragma once

// One subscription of a session, as its actor keeps it (client_actor.h) and writes it to
// client.subscriptions (subscription_journal.h).

#include "mqtt/packet.h"

#include <cstdint>
#include <optional>
#include <string>

namespace starling::broker {

struct stored_subscription {
    std::string filter;       // stripped of $share/<group>/
    std::string share_group;  // empty unless shared
    mqtt::subscription_options options;
    std::optional<std::uint32_t> subscription_id;
};

}  // namespace starling::broker
