#include "adapters/kafka/kafka_log_config.h"

#include "adapters/kafka/kafka_client.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>

namespace starling::adapters::kafka {

namespace {

std::string get(const property_list& props, const std::string& key) {
    auto it =
        std::find_if(props.begin(), props.end(), [&](const auto& kv) { return kv.first == key; });
    return it == props.end() ? "<unset>" : it->second;
}

consumer_spec subscribing(std::string instance = {}) {
    consumer_spec spec;
    spec.group_id = "group-1";
    spec.instance_id = std::move(instance);
    spec.topics = {"starling.msg.all"};
    return spec;
}

TEST(kafka_log_config, producer_defaults_follow_tbmq_and_the_port) {
    kafka_log_config config;
    config.bootstrap_servers = "k1:9092,k2:9092";
    config.client_id = "node-7";
    const auto p = producer_properties(config);
    EXPECT_EQ(get(p, "bootstrap.servers"), "k1:9092,k2:9092");
    EXPECT_EQ(get(p, "client.id"), "node-7");
    EXPECT_EQ(get(p, "acks"), "1");
    EXPECT_EQ(get(p, "enable.idempotence"), "false");
    EXPECT_EQ(get(p, "linger.ms"), "5");
    EXPECT_EQ(get(p, "batch.size"), "16384");
    EXPECT_EQ(get(p, "compression.type"), "none");
    EXPECT_EQ(get(p, "message.timeout.ms"), "30000");
    EXPECT_EQ(get(p, "partitioner"), "murmur2_random");
}

TEST(kafka_log_config, acks_all_turns_idempotence_on_and_explicit_idempotence_needs_it) {
    kafka_log_config config;
    config.acks = "all";
    EXPECT_EQ(get(producer_properties(config), "enable.idempotence"), "true");
    config.acks = "-1";
    EXPECT_EQ(get(producer_properties(config), "acks"), "all");
    EXPECT_TRUE(idempotent(config));

    config.enable_idempotence = false;
    EXPECT_EQ(get(producer_properties(config), "enable.idempotence"), "false");

    config.acks = "1";
    config.enable_idempotence = true;
    std::string why;
    auto valid = validate(config, &why);
    ASSERT_FALSE(valid);
    EXPECT_EQ(valid.error(), std::errc::invalid_argument);
    EXPECT_NE(why.find("enable_idempotence"), std::string::npos) << why;
    EXPECT_NE(why.find("acks=all"), std::string::npos) << why;
}

TEST(kafka_log_config, validation_names_the_field) {
    std::string why;
    kafka_log_config config;
    config.acks = "2";
    EXPECT_FALSE(validate(config, &why));
    EXPECT_EQ(why.rfind("acks", 0), 0u) << why;

    config = {};
    config.compression = "brotli";
    EXPECT_FALSE(validate(config, &why));
    EXPECT_EQ(why.rfind("compression", 0), 0u) << why;

    config = {};
    config.bootstrap_servers = "  ";
    EXPECT_FALSE(validate(config, &why));
    EXPECT_EQ(why.rfind("bootstrap_servers", 0), 0u) << why;

    config = {};
    config.replication_factor = 0;
    EXPECT_FALSE(validate(config, &why));
    EXPECT_EQ(why.rfind("replication_factor", 0), 0u) << why;

    EXPECT_TRUE(validate(kafka_log_config{}, &why));
}

TEST(kafka_log_config, extra_properties_apply_but_cannot_break_the_port) {
    kafka_log_config config;
    config.common_properties = {{"security.protocol", "plaintext"}, {"linger.ms", "99"}};
    config.producer_properties = {{"partitioner", "consistent_random"},
                                  {"queue.buffering.max.messages", "1000"}};
    const auto p = producer_properties(config);
    EXPECT_EQ(get(p, "security.protocol"), "plaintext");
    EXPECT_EQ(get(p, "queue.buffering.max.messages"), "1000");
    EXPECT_EQ(get(p, "linger.ms"), "5") << "the typed field wins over an extra property";
    EXPECT_EQ(get(p, "partitioner"), "murmur2_random") << "partition_for_key must hold";
}

TEST(kafka_log_config, consumer_properties_follow_the_spec) {
    kafka_log_config config;
    config.session_timeout = std::chrono::milliseconds(12000);
    config.consumer_properties = {{"enable.auto.commit", "true"}, {"fetch.wait.max.ms", "50"}};
    config.topic_consumer_properties["starling.msg.all"] = {{"max.partition.fetch.bytes", "4096"}};

    auto p = consumer_properties(config, subscribing());
    EXPECT_EQ(get(p, "group.id"), "group-1");
    EXPECT_EQ(get(p, "group.instance.id"), "<unset>");
    EXPECT_EQ(get(p, "partition.assignment.strategy"), "roundrobin");  // eager: see the README
    EXPECT_EQ(get(p, "enable.auto.commit"), "false");
    EXPECT_EQ(get(p, "auto.offset.reset"), "earliest");
    EXPECT_EQ(get(p, "session.timeout.ms"), "12000");
    EXPECT_EQ(get(p, "fetch.wait.max.ms"), "50");
    EXPECT_EQ(get(p, "max.partition.fetch.bytes"), "4096");

    auto spec = subscribing("node-1");
    spec.reset = offset_reset::latest;
    spec.topics = {"other"};
    p = consumer_properties(config, spec);
    EXPECT_EQ(get(p, "group.instance.id"), "node-1");
    EXPECT_EQ(get(p, "auto.offset.reset"), "latest");
    EXPECT_EQ(get(p, "max.partition.fetch.bytes"), "<unset>");
}

TEST(kafka_log_config, topic_configs_force_compaction_and_keep_extras) {
    kafka_log_config config;
    config.topic_configs["s.client.session"] = {{"segment.bytes", "26214400"},
                                                {"cleanup.policy", "delete"}};
    auto t = topic_configs(config, {.name = "s.client.session",
                                    .partitions = 1,
                                    .retention_ms = 1000,
                                    .retention_bytes = 2048,
                                    .compacted = true});
    EXPECT_EQ(get(t, "segment.bytes"), "26214400");
    EXPECT_EQ(get(t, "cleanup.policy"), "compact");
    EXPECT_EQ(get(t, "retention.ms"), "1000");
    EXPECT_EQ(get(t, "retention.bytes"), "2048");

    t = topic_configs(config, {.name = "s.msg.all", .partitions = 16});
    EXPECT_EQ(get(t, "cleanup.policy"), "<unset>");
    EXPECT_EQ(get(t, "retention.ms"), "-1");
}

TEST(kafka_log_config, librdkafka_accepts_every_property_we_generate) {
    kafka_log_config config;
    config.acks = "all";
    config.compression = "lz4";
    std::string why;
    EXPECT_TRUE(make_conf(producer_properties(config), &why)) << why;
    EXPECT_TRUE(make_conf(consumer_properties(config, subscribing("i")), &why)) << why;

    config.producer_properties = {{"no.such.property", "1"}};
    auto bad = make_conf(producer_properties(config), &why);
    ASSERT_FALSE(bad);
    EXPECT_EQ(why.rfind("no.such.property", 0), 0u) << why;
}

}  // namespace

}  // namespace starling::adapters::kafka
