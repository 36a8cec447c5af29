#include "auth/blocked_clients.h"
#include "auth/provider.h"

#include <gtest/gtest.h>

#include <chrono>
#include <string>

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

// The reported crash: credentials with the publish rule `sensors/.*` and a PUBLISH to
// `sensors/` + 30 000 characters overflowed the stack inside std::regex (SIGSEGV, the whole
// broker). Now the longest topic MQTT can carry matches in linear time.
TEST(topic_rules, longest_topics_match_without_recursion) {
    topic_rules rules;
    rules.publish.emplace_back("sensors/.*");
    rules.publish.emplace_back("(a*)*b");
    rules.subscribe.emplace_back("(a|a)*c");
    rules.subscribe.emplace_back("cmd/(x|y)+/#");
    const auto start = std::chrono::steady_clock::now();
    EXPECT_TRUE(rules.may_publish("sensors/" + std::string(30000, 'x')));
    EXPECT_TRUE(rules.may_publish("sensors/" + std::string(65535 - 8, 'x')));
    EXPECT_FALSE(rules.may_publish("other/" + std::string(65535 - 6, 'x')));
    EXPECT_FALSE(rules.may_publish(std::string(65535, 'a')));
    EXPECT_TRUE(rules.may_publish(std::string(65534, 'a') + "b"));
    EXPECT_FALSE(rules.may_subscribe(std::string(65535, 'a')));
    EXPECT_TRUE(rules.may_subscribe(std::string(65534, 'a') + "c"));
    EXPECT_TRUE(rules.may_subscribe("cmd/" + std::string(65529, 'x') + "/#"));
    EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(2));
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
