#include "broker/lifecycle_events.h"

#include "broker/broker_core.h"

#include <nlohmann/json.hpp>

namespace starling::broker {

void emit_lifecycle_event(broker_core& core, integration::lifecycle_event event,
                          const lifecycle_facts& facts) {
    thread_local std::vector<std::string> topics;
    topics.clear();
    core.integrations().match_event(event, topics);
    if (topics.empty()) {
        return;
    }
    const std::string_view name = integration::to_string(event);
    nlohmann::json body = {{"event", name},
                           {"clientId", facts.client_id},
                           {"node", core.cfg().node_id},
                           {"ts", core.now_ms()}};
    if (!facts.address.empty()) {
        body["address"] = facts.address;
    }
    if (!facts.protocol_version.empty()) {
        body["protocolVersion"] = facts.protocol_version;
    }
    if (!facts.reason.empty()) {
        body["reason"] = facts.reason;
    }
    if (!facts.topic_filters.empty()) {
        body["topicFilters"] = facts.topic_filters;
    }
    // Invalid UTF-8 in a client id (v3.1 allows bytes) is replaced, not thrown on.
    const std::string value = body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    for (const auto& topic : topics) {
        core.log().produce(
            topic, std::string(facts.client_id), value,
            {log_header{std::string(lifecycle_event_header), std::string(name)}},
            [&core](result<produce_ack> r) {
                if (!r) {
                    core.probe().message_dropped(metrics::drop_reason::integration_event);
                }
            });
    }
}

}  // namespace starling::broker
