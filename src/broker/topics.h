#pragma once

// Names of the log topics (docs/architecture.md §5): "<prefix>.<name>", prefix "starling" unless
// configured (TB_KAFKA_PREFIX).

#include <string>
#include <string_view>

namespace starling::broker {

// Header on every state record (client.session, client.subscriptions, msg.retained) a node
// writes, value = its node id. A cluster node's state_follower skips the session and
// subscription records it wrote itself: its actors are their single writers and already
// changed the local state.
inline constexpr std::string_view origin_node_header = "starling-origin-node";
// Header of a record on msg.downlink.persisted.<node> that carries no copy, only the news that
// the client's shared inbox grew: the owner's actor reads it from there. Its value is "1", or
// inbox_signal_forwarded when a node the session had left passed it on (never passed again).
inline constexpr std::string_view inbox_signal_header = "starling-inbox-signal";
inline constexpr std::string_view inbox_signal_fresh = "1";
inline constexpr std::string_view inbox_signal_forwarded = "forwarded";

class topic_names {
  public:
    explicit topic_names(std::string prefix) : prefix_(std::move(prefix)) {}

    std::string msg_all() const { return name("msg.all"); }
    std::string msg_persisted() const { return name("msg.persisted"); }
    std::string msg_retained() const { return name("msg.retained"); }
    std::string client_session() const { return name("client.session"); }
    std::string client_subscriptions() const { return name("client.subscriptions"); }
    std::string client_blocked() const { return name("client.blocked"); }

    // Cluster coordination (docs/architecture.md §4): session events are keyed by client id so one
    // handler in the cluster sees every event of a client in order; replies, forced disconnects
    // and forwarded copies go to the topic of the node that must act on them.
    std::string session_event_request() const { return name("client.session.event.request"); }
    std::string session_event_response(const std::string& node_id) const {
        return name("client.session.event.response.") + node_id;
    }
    std::string client_disconnect(const std::string& node_id) const {
        return name("client.disconnect.") + node_id;
    }
    std::string downlink_basic(const std::string& node_id) const {
        return name("msg.downlink.basic.") + node_id;
    }
    std::string downlink_persisted(const std::string& node_id) const {
        return name("msg.downlink.persisted.") + node_id;
    }

    // APPLICATION clients (docs/architecture.md §5): one topic per persistent APPLICATION client,
    // read by that client's own consumer group. See app_topic_suffix() for how a client id that
    // is not a valid Kafka topic name is mapped.
    std::string msg_app(std::string_view client_id) const {
        return name("msg.app.") + app_topic_suffix(client_id);
    }
    std::string msg_app_group(std::string_view client_id) const {
        return group("app.") + app_topic_suffix(client_id);
    }
    std::string sys_app_removed() const { return name("sys.app.removed"); }
    // Heartbeats of the cluster's nodes (node_directory.h).
    std::string sys_nodes() const { return name("sys.nodes"); }

    // Integrations (integration/README.md): one single-partition topic per integration, read by
    // the integration's executor group. Integration ids are UUIDs, valid in topic names.
    std::string msg_ie(std::string_view integration_id) const {
        return name("msg.ie.") + std::string(integration_id);
    }
    std::string ie_group(std::string_view integration_id) const {
        return group("ie." + std::string(integration_id));
    }
    // Status reports of the executors (integration/status_uplink.h), compacted, key = id.
    std::string ie_uplink() const { return name("ie.uplink"); }
    // Definitions as they change, one compacted topic per type ("http", "mqtt", "kafka"), key =
    // id (integration/integration_service.h).
    std::string ie_downlink(std::string_view type) const {
        return name("ie.downlink.") + std::string(type);
    }

    // Shared APPLICATION subscriptions (docs/architecture.md §5): one topic per topic filter, read
    // by one consumer group per (share name, filter). Groups with the same filter and different
    // share names read the same topic, each in full.
    std::string msg_app_shared(std::string_view filter) const {
        return name("msg.app.shared.") + shared_topic_suffix(filter);
    }
    std::string app_shared_group(std::string_view share, std::string_view filter) const {
        return group("app-shared-" + std::string(share) + "-" + shared_topic_suffix(filter));
    }
    // TBMQ's mapping when the filter is made of [A-Za-z0-9/+#]: '/' -> '_', '+' -> "slp",
    // '#' -> "mlw" ("a/+/#" -> "a_slp_mlw"). Otherwise — another character, a literal level
    // "slp" or "mlw" (which would collide with a wildcard: TBMQ maps "a/slp" and "a/+" to the
    // same topic), or a name past Kafka's 249 characters — "h." + the SHA-256 of the filter in
    // hex. The suffix never contains '-', so the group id above cannot be ambiguous either.
    std::string shared_topic_suffix(std::string_view filter) const;

    // The client id itself when it is made of [A-Za-z0-9_-] and the topic name stays within
    // Kafka's 249 characters; otherwise "h." + the SHA-256 of the id in hex. Kafka allows '.' in
    // names, but a literal id never contains one, so a hashed name cannot collide with a literal
    // one (TBMQ uses the bare hash and could).
    std::string app_topic_suffix(std::string_view client_id) const;

    // Consumer group ids carry the prefix too: two clusters (or two test runs) sharing one Kafka
    // with different prefixes must not share groups.
    std::string group(const std::string& suffix) const { return name(suffix); }

  private:
    std::string name(const std::string& suffix) const {
        return prefix_.empty() ? suffix : prefix_ + "." + suffix;
    }
    std::string prefix_;
};

}  // namespace starling::broker
