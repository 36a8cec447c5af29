#include "broker/message.h"

#include <gtest/gtest.h>

namespace starling::broker {
namespace {

TEST(app_message, round_trips_through_the_log_record) {
    mqtt::publish p;
    p.topic = "a/b";
    p.payload = std::string("\0\1payload", 9);
    p.qos = mqtt::qos::exactly_once;
    p.retain = true;
    p.properties.content_type = "text/plain";
    p.properties.response_topic = "r/t";
    p.properties.correlation_data = "corr";
    p.properties.payload_format_indicator = 1;
    p.properties.user_properties = {{"k", "v"}, {"k", "v2"}};
    p.properties.message_expiry_interval = 10;
    auto m = from_publish(p, "pub", "node-1", 1'000'000);
    EXPECT_EQ(m.expires_at_ms, 1'010'000);

    auto parsed = parse_message(serialize(m));
    ASSERT_TRUE(parsed);
    const auto& r = parsed.value();
    EXPECT_EQ(r.topic, "a/b");
    EXPECT_EQ(r.payload, p.payload);
    EXPECT_EQ(r.qos, mqtt::qos::exactly_once);
    EXPECT_TRUE(r.retain);
    EXPECT_EQ(r.properties.content_type, "text/plain");
    EXPECT_EQ(r.properties.response_topic, "r/t");
    EXPECT_EQ(r.properties.correlation_data, "corr");
    EXPECT_EQ(r.properties.payload_format_indicator, 1);
    EXPECT_EQ(r.properties.user_properties, p.properties.user_properties);
    EXPECT_EQ(r.expires_at_ms, 1'010'000);
    EXPECT_EQ(r.publisher_id, "pub");
    EXPECT_EQ(r.node_id, "node-1");
    EXPECT_EQ(r.created_at_ms, 1'000'000);
    EXPECT_NE(r.sequence, 0U);
    EXPECT_EQ(r.sequence, m.sequence);
    // The next message of the node comes after it, in the same millisecond too.
    EXPECT_GT(from_publish(p, "pub", "node-1", 1'000'000).sequence, m.sequence);
}

TEST(app_message, remaining_expiry_rounds_up_and_stops_at_zero) {
    app_message m;
    m.expires_at_ms = 10'000;
    EXPECT_EQ(m.remaining_expiry_seconds(0), 10U);
    EXPECT_EQ(m.remaining_expiry_seconds(9'001), 1U);
    EXPECT_EQ(m.remaining_expiry_seconds(10'000), 0U);
    EXPECT_TRUE(m.expired(10'000));
    EXPECT_FALSE(m.expired(9'999));
}

TEST(app_message, garbage_is_rejected) {
    EXPECT_FALSE(parse_message(std::string("\xff\xff\xff\xff", 4)));
}

}  // namespace
}  // namespace starling::broker
