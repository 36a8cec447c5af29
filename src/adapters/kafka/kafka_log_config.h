#pragma once

// kafka_log_config: everything the Kafka adapter needs, as plain values (the daemon fills it
// from queue.kafka.* in config/starling.yml), and its translation into librdkafka properties.
// The translation is pure so unit tests check it without a broker
// (tests/unit/kafka/kafka_log_config_test.cpp).
//
// Precedence of properties, later wins: Starling's fixed settings (partitioner,
// enable.auto.commit, ... that the port's semantics depend on) are applied LAST so no extra
// property can break them; before them come the typed fields below, and before those the
// extra maps (common, then producer or consumer, then per-topic consumer properties).

#include "base/result.h"
#include "starling/message_log.h"

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace starling::adapters::kafka {

using kafka_properties = std::map<std::string, std::string>;
using property_list = std::vector<std::pair<std::string, std::string>>;

struct kafka_log_config {
    std::string bootstrap_servers = "localhost:9092";  // host:port[,host:port...]
    // client.id of every client; the node id, so broker logs and quotas name the node.
    std::string client_id = "starling";

    // Producer. acks: "0", "1" or "all" (-1 is accepted as all). TBMQ's defaults.
    std::string acks = "1";
    // Idempotence needs acks=all (librdkafka refuses it otherwise). Unset: on exactly when
    // acks=all; explicitly true with another acks value is a configuration error.
    std::optional<bool> enable_idempotence;
    std::chrono::milliseconds linger{5};
    std::int32_t batch_size = 16384;   // bytes
    std::string compression = "none";  // none, gzip, snappy, lz4, zstd
    // Upper bound from produce() to its callback (librdkafka message.timeout.ms, the same as
    // Java's delivery.timeout.ms): retries happen inside it, then the callback gets an error.
    std::chrono::milliseconds delivery_timeout{30000};

    // Consumers. With a static member (instance_id set) the broker moves a closed member's
    // partitions only after this timeout; dynamic members leave at once.
    std::chrono::milliseconds session_timeout{10000};
    std::chrono::milliseconds heartbeat_interval{3000};
    std::chrono::milliseconds max_poll_interval{300000};

    // Admin: replication factor of created topics, and the bound of each admin call
    // (create/delete/metadata). An unreachable cluster fails these calls after it.
    std::int16_t replication_factor = 1;
    std::chrono::milliseconds admin_timeout{30000};

    // Extra librdkafka properties (TBMQ's "key:value;key:value" strings, parsed by the config
    // loader): for every
    // client, producers only, consumers only.
    kafka_properties common_properties;
    kafka_properties producer_properties;
    kafka_properties consumer_properties;
    // Per topic: extra topic configs at creation (TBMQ topic-properties, e.g. segment.bytes),
    // and extra consumer properties for consumers that read the topic (TBMQ
    // consumer-properties-per-topic, e.g. max.partition.fetch.bytes).
    std::map<std::string, kafka_properties> topic_configs;
    std::map<std::string, kafka_properties> topic_consumer_properties;
};

// Checks the typed fields; the error names the field (the loader re-names it to the YAML key).
// Errors are std::errc::invalid_argument with the reason in `why`.
status validate(const kafka_log_config& config, std::string* why);

// True when the producer is idempotent under this config.
bool idempotent(const kafka_log_config& config);

// librdkafka properties of the one producer of a kafka_message_log (also used for admin calls
// and metadata).
property_list producer_properties(const kafka_log_config& config);

// librdkafka properties of a consumer for `spec`.
property_list consumer_properties(const kafka_log_config& config, const consumer_spec& spec);

// Topic configs for CreateTopics: retention.ms, retention.bytes, cleanup.policy=compact when
// spec.compacted (forced, as TBMQ does), after the topic's extra configs.
property_list topic_configs(const kafka_log_config& config, const topic_spec& spec);

}  // namespace starling::adapters::kafka
