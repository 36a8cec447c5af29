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

}  // namespace
}  // namespace starling::auth
