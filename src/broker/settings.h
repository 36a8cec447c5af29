#pragma once

// broker::settings: the MQTT-behaviour knobs the broker core reads, filled by the composition
// root from the configuration (src/config) so the core does not depend on the YAML layout.

#include "starling/shared_counters.h"

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace starling::broker {

struct settings {
    std::string node_id = "starling-1";
    // Cluster mode (starling.mode: cluster): several nodes share the message log; sessions are
    // coordinated through it and copies for clients on other nodes are forwarded through it.
    // False: the node is alone (embedded mode) and every client is local.
    bool cluster = false;
    // Cluster mode with one device inbox shared by every node (Redis): the msg.persisted
    // consumers append every copy themselves and only signal the owner node through
    // msg.downlink.persisted.<node>. False (node-local inboxes): they forward the copy there and
    // the owner appends it.
    bool shared_inbox = false;
    std::string topic_prefix = "starling";

    // Server Receive Maximum (inbound QoS 1/2 in flight) and the outbound window per client.
    std::uint16_t max_in_flight = 1000;
    std::uint32_t max_packet_size = 65536;  // inbound, bytes, fixed header included
    std::uint16_t max_keep_alive = 600;     // seconds; Server Keep Alive above it
    std::uint16_t topic_alias_max = 10;     // inbound aliases per connection
    std::uint32_t min_topic_length_for_alias = 50;
    std::uint32_t max_topic_segments = 128;  // 0: unlimited
    bool allow_root_multi_level_wildcard = true;
    std::uint32_t max_subscriptions_per_client = 1000;  // 0: unlimited
    bool retain_available = true;
    // Retained messages the node keeps (every node mirrors all of them): count, and bytes of
    // topic + payload. A new retained topic beyond either is refused; 0: unlimited.
    std::uint64_t max_retained_messages = 1000000;
    std::uint64_t max_retained_bytes = 1073741824;
    std::uint16_t max_user_properties = 128;  // per packet; 0: unlimited
    std::uint8_t max_qos = 2;
    std::uint32_t max_session_expiry = 604800;  // seconds
    std::uint32_t max_client_id_length_v31 = 1024;
    std::string response_information;  // v5 Response Information; empty: not offered

    std::uint32_t persisted_messages_limit = 10000;
    std::uint32_t persisted_messages_ttl = 604800;  // seconds

    // Persistent APPLICATION clients (queue.kafka.application-persisted-msg.*): retention of
    // each msg.app.<clientId> topic, and how many records one client's consumer may buffer
    // ahead of the client's in-flight window before it pauses.
    std::int64_t app_msg_retention_ms = 604800000;
    std::int64_t app_msg_retention_bytes = 1048576000;
    std::size_t app_msg_buffer_records = 1000;
    // Threads of the pool that runs every APPLICATION consumer (consumer_pool.h).
    std::size_t app_consumer_threads = 4;
    // msg.app.shared.<filter> (queue.kafka.application-persisted-msg.shared-topic.*): partitions
    // when no application_shared_subscription entity names the filter, and retention.
    std::int32_t app_shared_partitions = 1;
    std::int64_t app_shared_retention_ms = 604800000;

    // Persistent DEVICE client whose channel became writable again with messages still in
    // flight: delivery from the inbox waits for them to be acknowledged, rechecking after each
    // of these delays (plus up to `writable_resume_jitter`), and resumes at the latest after the
    // last one (seed document: ~1, 2, 3, 5, 9, 10 s, about half a minute in all). Settings
    // rather than configuration, so tests can shorten them.
    std::vector<std::chrono::milliseconds> writable_resume_backoff{
        std::chrono::seconds(1), std::chrono::seconds(2), std::chrono::seconds(3),
        std::chrono::seconds(5), std::chrono::seconds(9), std::chrono::seconds(10)};
    std::chrono::milliseconds writable_resume_jitter{1000};

    std::size_t mailbox_capacity = 10000;
    // Bytes of packets (topics and payloads) a connection may have waiting at its actor; beyond,
    // it stops reading (client_actor::inbound_cost).
    std::uint64_t mailbox_bytes = 4 * 1024 * 1024;
    std::size_t outbound_queue_limit = 10000;  // per non-persistent client, beyond the window
    // How long a msg.all consumer waits for room in the mailbox of a non-persistent QoS 1/2
    // subscriber whose connection is writable before it drops the copy
    // (publish_router::wait_for_mailbox); 0 drops at once.
    std::chrono::milliseconds delivery_wait{500};
    std::size_t throughput = 5;
    // How long an actor outlives its ended session (a quick reconnect reuses it).
    std::chrono::seconds named_actor_grace{60};
    std::chrono::seconds generated_actor_grace{10};

    std::int32_t msg_all_partitions = 16;
    std::int64_t msg_all_retention_ms = 604800000;
    std::int32_t msg_all_consumers = 4;
    std::int32_t msg_persisted_partitions = 12;
    std::int32_t msg_persisted_consumers = 2;
    std::chrono::milliseconds poll_interval{100};
    // Cluster mode: partitions of this node's msg.downlink.basic.<node> and
    // msg.downlink.persisted.<node> topics (created at start if absent).
    std::int32_t downlink_partitions = 12;

    // Cluster session coordination (docs/architecture.md §4): partitions of
    // client.session.event.request, and how long a CONNECT waits for the session-event
    // handler's reply before it is refused with CONNACK 0x88 (v3: 0x03).
    std::int32_t session_event_partitions = 24;
    std::chrono::milliseconds session_request_timeout{30000};

    // Rate limits (mqtt.rate-limits.*, docs/backpressure.md); empty = off. Per publisher and
    // per QoS 0 subscriber (node-local, in the client actor), and one cluster-wide bucket for
    // copies written to persistent DEVICE inboxes (broker_core::shared_counters).
    std::vector<bandwidth> incoming_publish_limit;
    std::vector<bandwidth> outgoing_publish_limit;
    std::vector<bandwidth> device_persisted_limit;

    // Session limits (mqtt.sessions-limit, mqtt.application-clients-limit): sessions and
    // APPLICATION sessions cluster-wide, counted in the shared counters; 0 = off.
    std::int64_t sessions_limit = 0;
    std::int64_t application_clients_limit = 0;
};

}  // namespace starling::broker
