#pragma once

// Client lifecycle events for integrations (docs/integrations.md, "Client lifecycle events"):
// what a client did — connected, disconnected (and why), subscribed, unsubscribed, failed to
// authenticate — produced to msg.ie.<id> of every integration that asked for that event, next
// to its messages, for its executor to send.
//
// Best effort and never in the client's way: the produce is asynchronous and nothing waits for
// it; a refused one is dropped and counted (droppedMsgs_total{reason="integration_event"}).
// With no integration asking for an event, emitting it costs one atomic load.
//
// The record: key = client id; header `ie-event` = the event's name; value = JSON
//   {"event": "CONNECTED", "clientId", "node", "ts" (ms since the epoch),
//    "address" (host:port, when known), "protocolVersion" ("3.1", "3.1.1", "5.0"),
//    "reason" (DISCONNECTED, AUTH_FAILED), "topicFilters" (SUBSCRIBED, UNSUBSCRIBED)}.

#include "integration/matcher.h"

#include <string>
#include <string_view>
#include <vector>

namespace starling::broker {

class broker_core;

inline constexpr std::string_view lifecycle_event_header = "ie-event";

struct lifecycle_facts {
    std::string_view client_id;
    std::string_view address;
    std::string_view protocol_version;
    std::string_view reason;
    std::vector<std::string> topic_filters;
};

void emit_lifecycle_event(broker_core& core, integration::lifecycle_event event,
                          const lifecycle_facts& facts);

}  // namespace starling::broker
