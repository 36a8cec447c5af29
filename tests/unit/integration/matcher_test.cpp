// integration_matcher: one log topic per matching integration, '$' topics kept apart, and
// replace() swapping the table while readers match (run under TSan in CI).
#include "integration/matcher.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>

namespace starling::integration {
namespace {

using strings = std::vector<std::string>;

strings match(const integration_matcher& m, std::string_view topic) {
    strings out;
    m.match(topic, out);
    return out;
}

TEST(IntegrationMatcher, EmptyMatchesNothing) {
    integration_matcher m;
    EXPECT_TRUE(m.empty());
    EXPECT_TRUE(match(m, "a/b").empty());
}

TEST(IntegrationMatcher, EachIntegrationMatchesOnceInEntryOrder) {
    integration_matcher m;
    m.replace({{"i1", "msg.ie.i1", {"a/#", "a/+", "a/b"}},
               {"i2", "msg.ie.i2", {"x/y"}},
               {"i3", "msg.ie.i3", {"+/b"}}});
    EXPECT_FALSE(m.empty());
    EXPECT_EQ(match(m, "a/b"), (strings{"msg.ie.i1", "msg.ie.i3"}));
    EXPECT_EQ(match(m, "x/y"), (strings{"msg.ie.i2"}));
    EXPECT_TRUE(match(m, "z").empty());
}

TEST(IntegrationMatcher, EventsGoOnlyToTheIntegrationsThatAskedForThem) {
    integration_matcher m;
    std::vector<std::string> out;
    m.match_event(lifecycle_event::connected, out);
    EXPECT_TRUE(out.empty());
    m.replace({{"msgs", "msg.ie.msgs", {"#"}},
               {"conn", "msg.ie.conn", {}, event_bit(lifecycle_event::connected)},
               {"both",
                "msg.ie.both",
                {"a"},
                event_bit(lifecycle_event::connected) | event_bit(lifecycle_event::auth_failed)}});
    m.match_event(lifecycle_event::connected, out);
    EXPECT_EQ(out, (std::vector<std::string>{"msg.ie.conn", "msg.ie.both"}));
    out.clear();
    m.match_event(lifecycle_event::auth_failed, out);
    EXPECT_EQ(out, (std::vector<std::string>{"msg.ie.both"}));
    out.clear();
    m.match_event(lifecycle_event::subscribed, out);
    EXPECT_TRUE(out.empty());
    // An events-only integration matches no message.
    m.match("x", out);
    EXPECT_EQ(out, (std::vector<std::string>{"msg.ie.msgs"}));
    out.clear();
    m.replace({});
    m.match_event(lifecycle_event::connected, out);
    EXPECT_TRUE(out.empty());
}

TEST(IntegrationMatcher, DollarTopicsMatchOnlyDollarFilters) {
    integration_matcher m;
    m.replace({{"all", "msg.ie.all", {"#"}}, {"sys", "msg.ie.sys", {"$SYS/#"}}});
    EXPECT_EQ(match(m, "$SYS/broker/load"), (strings{"msg.ie.sys"}));
    EXPECT_EQ(match(m, "plain"), (strings{"msg.ie.all"}));
}

TEST(IntegrationMatcher, RoutesToNamesOnlyCurrentLogTopics) {
    integration_matcher m;
    m.replace({{"i1", "msg.ie.i1", {"#"}}});
    EXPECT_TRUE(m.routes_to("msg.ie.i1"));
    EXPECT_FALSE(m.routes_to("msg.ie.i2"));
    m.replace({});
    EXPECT_FALSE(m.routes_to("msg.ie.i1"));
}

TEST(IntegrationMatcher, ReplaceWithNothingEmptiesIt) {
    integration_matcher m;
    m.replace({{"i1", "msg.ie.i1", {"#"}}});
    m.replace({});
    EXPECT_TRUE(m.empty());
    EXPECT_TRUE(match(m, "a").empty());
}

TEST(IntegrationMatcher, ReadersSeeWholeTablesWhileItIsReplaced) {
    integration_matcher m;
    std::atomic<bool> stop{false};
    std::thread writer([&] {
        for (int i = 0; i < 2000; ++i) {
            if (i % 2 == 0) {
                m.replace({{"a", "msg.ie.a", {"t/#"}}, {"b", "msg.ie.b", {"t/1"}}});
            } else {
                m.replace({});
            }
        }
        stop = true;
    });
    std::size_t torn = 0;
    while (!stop) {
        const auto got = match(m, "t/1");
        // A table has both entries or none: never one of the two.
        torn += got.size() == 1 ? 1 : 0;
    }
    writer.join();
    EXPECT_EQ(torn, 0U);
}

}  // namespace
}  // namespace starling::integration
