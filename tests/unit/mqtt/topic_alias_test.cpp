#include "mqtt/topic_alias.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <string>
#include <vector>

namespace starling::mqtt {
namespace {

TEST(outbound_topic_aliases, no_maximum_means_no_alias) {
    outbound_topic_aliases aliases(0);
    const auto c = aliases.choose("a/b");
    EXPECT_EQ(c.alias, 0);
    EXPECT_TRUE(c.with_topic);
    aliases.sent("a/b", c);
    EXPECT_EQ(aliases.size(), 0U);
}

TEST(outbound_topic_aliases, first_publish_establishes_later_ones_use_the_alias_alone) {
    outbound_topic_aliases aliases(2);
    auto c = aliases.choose("a");
    EXPECT_EQ(c.alias, 1);
    EXPECT_TRUE(c.with_topic);
    aliases.sent("a", c);
    c = aliases.choose("a");
    EXPECT_EQ(c.alias, 1);
    EXPECT_FALSE(c.with_topic);
}

TEST(outbound_topic_aliases, a_publish_that_never_went_out_establishes_nothing) {
    outbound_topic_aliases aliases(4);
    const auto dropped = aliases.choose("big");  // then refused: above the client's packet size
    EXPECT_TRUE(dropped.with_topic);
    const auto again = aliases.choose("big");
    EXPECT_TRUE(again.with_topic) << "the client never learnt the alias";
    EXPECT_EQ(again.alias, dropped.alias);
}

TEST(outbound_topic_aliases, a_full_table_reuses_the_least_recently_used_alias) {
    outbound_topic_aliases aliases(2);
    for (const char* t : {"a", "b", "a"}) {
        aliases.sent(t, aliases.choose(t));
    }
    const auto c = aliases.choose("c");  // b is the least recently used
    EXPECT_EQ(c.alias, 2);
    EXPECT_TRUE(c.with_topic);
    aliases.sent("c", c);
    EXPECT_EQ(aliases.topic_of(2), "c");
    EXPECT_TRUE(aliases.choose("b").with_topic);
    EXPECT_FALSE(aliases.choose("a").with_topic);
}

// Model-based: seeded random publishes over more topics than aliases, some dropped after the
// choice. The client side applies each PUBLISH as MQTT 5.0 section 3.3.2.3.4 says; every
// PUBLISH must resolve, at the client, to the topic the broker meant, and the choices must be
// those of a plain least-recently-used table.
TEST(outbound_topic_aliases, model_every_publish_resolves_to_its_topic_at_the_client) {
    for (std::uint32_t seed = 1; seed <= 40; ++seed) {
        std::mt19937 rng(seed);
        const auto maximum = static_cast<std::uint16_t>(1 + rng() % 6);
        const std::size_t topic_count = 1 + rng() % 12;
        outbound_topic_aliases aliases(maximum);
        std::map<std::uint16_t, std::string> client;               // what the client maps
        std::vector<std::pair<std::string, std::uint16_t>> model;  // most recent first
        for (int step = 0; step < 400; ++step) {
            const std::string topic = "t/" + std::to_string(rng() % topic_count);
            const bool dropped = rng() % 8 == 0;
            const auto c = aliases.choose(topic);
            SCOPED_TRACE("seed " + std::to_string(seed) + " step " + std::to_string(step));

            // The reference table's choice.
            auto known = std::find_if(model.begin(), model.end(),
                                      [&](const auto& e) { return e.first == topic; });
            if (known != model.end()) {
                ASSERT_EQ(c.alias, known->second);
                ASSERT_FALSE(c.with_topic);
            } else if (model.size() < maximum) {
                ASSERT_EQ(c.alias, model.size() + 1);
                ASSERT_TRUE(c.with_topic);
            } else {
                ASSERT_EQ(c.alias, model.back().second);
                ASSERT_TRUE(c.with_topic);
            }
            ASSERT_GE(c.alias, 1);
            ASSERT_LE(c.alias, maximum);
            if (dropped) {
                continue;
            }
            aliases.sent(topic, c);

            // The client receives it.
            if (c.with_topic) {
                client[c.alias] = topic;
            } else {
                ASSERT_TRUE(client.contains(c.alias)) << "alias the client never learnt";
                ASSERT_EQ(client[c.alias], topic);
            }
            // The reference table learns it.
            if (known != model.end()) {
                auto e = *known;
                model.erase(known);
                model.insert(model.begin(), e);
            } else {
                if (model.size() >= maximum) {
                    model.pop_back();
                }
                model.insert(model.begin(), {topic, c.alias});
            }
            ASSERT_EQ(aliases.size(), model.size());
        }
    }
}

TEST(inbound_topic_aliases, a_publish_without_alias_is_left_as_it_is) {
    inbound_topic_aliases aliases;
    std::string topic = "a/b";
    std::optional<std::uint16_t> alias;
    EXPECT_FALSE(aliases.resolve(topic, alias, 10));
    EXPECT_EQ(topic, "a/b");
}

TEST(inbound_topic_aliases, a_topic_defines_the_alias_and_an_empty_topic_takes_it) {
    inbound_topic_aliases aliases;
    std::string topic = "sensors/1";
    std::optional<std::uint16_t> alias = 3;
    EXPECT_FALSE(aliases.resolve(topic, alias, 10));
    EXPECT_FALSE(alias) << "consumed: the alias is not forwarded to subscribers";
    EXPECT_EQ(aliases.topic_of(3), "sensors/1");

    topic.clear();
    alias = 3;
    EXPECT_FALSE(aliases.resolve(topic, alias, 10));
    EXPECT_EQ(topic, "sensors/1");

    topic = "sensors/2";  // redefined
    alias = 3;
    EXPECT_FALSE(aliases.resolve(topic, alias, 10));
    topic.clear();
    alias = 3;
    EXPECT_FALSE(aliases.resolve(topic, alias, 10));
    EXPECT_EQ(topic, "sensors/2");
}

TEST(inbound_topic_aliases, an_alias_of_zero_or_above_the_maximum_is_invalid) {
    inbound_topic_aliases aliases;
    for (std::uint16_t bad : {std::uint16_t{0}, std::uint16_t{11}}) {
        std::string topic = "t";
        std::optional<std::uint16_t> alias = bad;
        const auto refused = aliases.resolve(topic, alias, 10);
        ASSERT_TRUE(refused);
        EXPECT_EQ(refused->code, reason_code::topic_alias_invalid);
    }
    std::string topic = "t";
    std::optional<std::uint16_t> alias = 1;
    const auto refused = aliases.resolve(topic, alias, 0);
    ASSERT_TRUE(refused) << "no alias is valid when the server announced none";
    EXPECT_EQ(refused->code, reason_code::topic_alias_invalid);
}

TEST(inbound_topic_aliases, an_alias_never_defined_is_a_protocol_error) {
    inbound_topic_aliases aliases;
    std::string topic;
    std::optional<std::uint16_t> alias = 4;
    auto refused = aliases.resolve(topic, alias, 10);
    ASSERT_TRUE(refused);
    EXPECT_EQ(refused->code, reason_code::protocol_error);

    topic = "defined";
    alias = 5;
    ASSERT_FALSE(aliases.resolve(topic, alias, 10));
    topic.clear();
    alias = 4;
    refused = aliases.resolve(topic, alias, 10);
    ASSERT_TRUE(refused) << "another alias's definition does not define this one";
    EXPECT_EQ(refused->code, reason_code::protocol_error);
}

}  // namespace
}  // namespace starling::mqtt
