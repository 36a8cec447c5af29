#include "adapters/kafka/kafka_log_config.h"

#include "base/text.h"

#include <algorithm>
#include <array>
#include <string_view>
#include <system_error>

namespace starling::adapters::kafka {

namespace {

// Replaces an existing key (keeping its place) or appends it, so the list is also a map with
// "later wins" semantics and a stable order for tests and logs.
void put(property_list& list, const std::string& key, std::string value) {
    auto it = std::find_if(list.begin(), list.end(), [&](const auto& p) { return p.first == key; });
    if (it != list.end()) {
        it->second = std::move(value);
    } else {
        list.emplace_back(key, std::move(value));
    }
}

void put_all(property_list& list, const kafka_properties& extra) {
    for (const auto& [key, value] : extra) {
        put(list, key, value);
    }
}

std::string ms(std::chrono::milliseconds d) { return std::to_string(d.count()); }

std::string normalized_acks(const std::string& acks) { return acks == "-1" ? "all" : acks; }

status invalid(std::string* why, std::string text) {
    if (why != nullptr) {
        *why = std::move(text);
    }
    return std::make_error_code(std::errc::invalid_argument);
}

}  // namespace

bool idempotent(const kafka_log_config& config) {
    return config.enable_idempotence.value_or(normalized_acks(config.acks) == "all");
}

status validate(const kafka_log_config& config, std::string* why) {
    if (base::trim(config.bootstrap_servers).empty()) {
        return invalid(why, "bootstrap_servers: empty; expected host:port[,host:port...]");
    }
    const auto acks = normalized_acks(config.acks);
    if (acks != "0" && acks != "1" && acks != "all") {
        return invalid(why, "acks: \"" + config.acks + "\"; expected 0, 1 or all");
    }
    if (config.enable_idempotence.value_or(false) && acks != "all") {
        return invalid(why, "enable_idempotence: true needs acks=all (acks is \"" + config.acks +
                                "\"): Kafka's idempotent producer requires acks from all in-sync "
                                "replicas");
    }
    static constexpr std::array<std::string_view, 5> codecs{"none", "gzip", "snappy", "lz4",
                                                            "zstd"};
    if (std::find(codecs.begin(), codecs.end(), config.compression) == codecs.end()) {
        return invalid(why, "compression: \"" + config.compression +
                                "\"; expected none, gzip, snappy, lz4 or zstd");
    }
    if (config.linger.count() < 0 || config.linger.count() > 900000) {
        return invalid(why, "linger: expected 0..900000 ms");
    }
    if (config.batch_size < 1) {
        return invalid(why, "batch_size: expected at least 1 byte");
    }
    if (config.delivery_timeout.count() < 1) {
        return invalid(why, "delivery_timeout: expected at least 1 ms");
    }
    if (config.replication_factor < 1) {
        return invalid(why, "replication_factor: expected at least 1");
    }
    if (config.session_timeout.count() < 1 || config.admin_timeout.count() < 1) {
        return invalid(why, "session_timeout / admin_timeout: expected at least 1 ms");
    }
    return {};
}

property_list producer_properties(const kafka_log_config& config) {
    property_list p;
    put_all(p, config.common_properties);
    put_all(p, config.producer_properties);
    put(p, "bootstrap.servers", config.bootstrap_servers);
    put(p, "client.id", config.client_id);
    put(p, "acks", normalized_acks(config.acks));
    put(p, "enable.idempotence", idempotent(config) ? "true" : "false");
    put(p, "linger.ms", ms(config.linger));
    put(p, "batch.size", std::to_string(config.batch_size));
    put(p, "compression.type", config.compression);
    put(p, "message.timeout.ms", ms(config.delivery_timeout));
    // Fixed: the port promises partition_for_key() (Kafka's Java default partitioner), and
    // librdkafka's default (consistent_random, CRC32) would disagree with it.
    put(p, "partitioner", "murmur2_random");
    // Stats drive healthy() back to true once a broker is up again (kafka_message_log.h).
    if (std::none_of(p.begin(), p.end(),
                     [](const auto& kv) { return kv.first == "statistics.interval.ms"; })) {
        put(p, "statistics.interval.ms", "2000");
    }
    return p;
}

property_list consumer_properties(const kafka_log_config& config, const consumer_spec& spec) {
    property_list p;
    put_all(p, config.common_properties);
    put_all(p, config.consumer_properties);
    for (const auto& topic : spec.topics) {
        if (auto it = config.topic_consumer_properties.find(topic);
            it != config.topic_consumer_properties.end()) {
            put_all(p, it->second);
        }
    }
    for (const auto& tp : spec.assignment) {
        if (auto it = config.topic_consumer_properties.find(tp.topic);
            it != config.topic_consumer_properties.end()) {
            put_all(p, it->second);
        }
    }
    put(p, "bootstrap.servers", config.bootstrap_servers);
    put(p, "client.id", config.client_id);
    put(p, "session.timeout.ms", ms(config.session_timeout));
    put(p, "heartbeat.interval.ms", ms(config.heartbeat_interval));
    put(p, "max.poll.interval.ms", ms(config.max_poll_interval));
    // Fixed by the port's semantics:
    put(p, "group.id", spec.group_id);
    if (!spec.instance_id.empty()) {
        put(p, "group.instance.id", spec.instance_id);
    }
    // Eager, not cooperative-sticky: librdkafka before 2.10 (Debian 12 ships 2.0.2) answers a
    // commit refused with ILLEGAL_GENERATION during a cooperative rebalance by dropping the
    // member's assignment (librdkafka issue 4059); the next owner then re-reads everything since
    // the last good commit, so a node joining mid-stream delivered records twice. With the eager
    // protocol the revoke comes first and its commits succeed (the handover measured a few ms
    // on loopback; contract test a_member_joining_and_leaving_mid_stream_reads_no_record_twice).
    // Static membership still spares a restarting node any rebalance.
    put(p, "partition.assignment.strategy", "roundrobin");
    put(p, "enable.auto.commit", "false");        // commit() is the only way offsets move
    put(p, "enable.auto.offset.store", "false");  // ...and nothing stores them behind its back
    put(p, "enable.partition.eof", "false");
    put(p, "auto.offset.reset", spec.reset == offset_reset::earliest ? "earliest" : "latest");
    return p;
}

property_list topic_configs(const kafka_log_config& config, const topic_spec& spec) {
    property_list p;
    if (auto it = config.topic_configs.find(spec.name); it != config.topic_configs.end()) {
        put_all(p, it->second);
    }
    put(p, "retention.ms", std::to_string(spec.retention_ms));
    put(p, "retention.bytes", std::to_string(spec.retention_bytes));
    if (spec.compacted) {
        put(p, "cleanup.policy", "compact");
    }
    return p;
}

}  // namespace starling::adapters::kafka
