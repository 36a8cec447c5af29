#include "auth/blocked_clients.h"
#include "auth/provider.h"

#include <gtest/gtest.h>

namespace starling::auth {
namespace {

TEST(topic_rules, patterns_match_the_whole_topic) {
    topic_rules rules;
    rules.publish.emplace_back("sensors/[^/]+/temp");
    rules.subscribe.emplace_back("commands/.*");
    EXPECT_TRUE(rules.may_publish("sensors/a/temp"));
    EXPECT_FALSE(rules.may_publish("sensors/a/temp/extra"));  // regex_match, not search
    EXPECT_FALSE(rules.may_publish("x/sensors/a/temp"));
    EXPECT_FALSE(rules.may_subscribe("sensors/a/temp"));
    EXPECT_TRUE(rules.may_subscribe("commands/#"));
    EXPECT_FALSE(rules.may_publish("commands/x"));
}

TEST(topic_rules, empty_lists_allow_nothing_and_everything_allows_all) {
    const topic_rules none;
    EXPECT_FALSE(none.may_publish("a"));
    EXPECT_FALSE(none.may_subscribe("#"));
    const auto all = topic_rules::everything();
    EXPECT_TRUE(all->may_publish("any/topic"));
    EXPECT_TRUE(all->may_subscribe("#"));
    EXPECT_EQ(all, topic_rules::everything());  // one shared instance
}

TEST(blocked_clients_stand_in, matches_by_kind_and_ignores_expired_entries) {
    using kind = blocked_client_entry::kind;
    blocked_clients blocked({{.type = kind::client_id, .value = "rogue"},
                             {.type = kind::username, .value = "mallory", .expires_at_ms = 1000},
                             {.type = kind::ip_address, .value = "10.0.0.9"},
                             {.type = kind::regex,
                              .value = "bad-.*",
                              .regex_target = kind::username,
                              .description = "bad users"}});
    EXPECT_TRUE(blocked.check("rogue", std::nullopt, "127.0.0.1", 0).has_value());
    EXPECT_FALSE(blocked.check("fine", std::nullopt, "127.0.0.1", 0).has_value());
    EXPECT_TRUE(blocked.check("c", "mallory", "127.0.0.1", 999).has_value());
    EXPECT_FALSE(blocked.check("c", "mallory", "127.0.0.1", 1000).has_value());  // expired
    EXPECT_TRUE(blocked.check("c", std::nullopt, "10.0.0.9", 0).has_value());
    EXPECT_EQ(blocked.check("c", "bad-bob", "127.0.0.1", 0), "bad users");
    EXPECT_FALSE(blocked.check("bad-bob", std::nullopt, "127.0.0.1", 0).has_value());
}

}  // namespace
}  // namespace starling::auth
