#include "bench/options.h"

#include <gtest/gtest.h>

#include <vector>

namespace starling::bench {
namespace {

parse_outcome parse(std::vector<const char*> args) {
    args.insert(args.begin(), "starling-bench");
    return parse_options(static_cast<int>(args.size()), args.data());
}

TEST(options, scenario_defaults_follow_the_issue) {
    auto p = parse({"scenario", "fan-out"});
    ASSERT_TRUE(p.ok()) << p.error;
    std::string error;
    auto s = resolve_scenario(p.options, error);
    ASSERT_TRUE(s) << error;
    EXPECT_EQ(s->publishers, 5u);
    EXPECT_EQ(s->subscribers, 1000u);
    EXPECT_EQ(s->pub_qos, mqtt::qos::at_most_once);
    EXPECT_EQ(s->payload_size, 64u);

    p = parse({"scenario", "p2p"});
    s = resolve_scenario(p.options, error);
    ASSERT_TRUE(s) << error;
    EXPECT_TRUE(s->sub_persistent);
    EXPECT_EQ(s->sub_qos, mqtt::qos::at_least_once);
    EXPECT_EQ(s->pub_topic, s->sub_filter);  // private topics: publisher i <-> subscriber i
}

TEST(options, flags_override_scenario_defaults) {
    auto p = parse({"scenario", "shared", "--publishers", "4", "--subscribers", "2", "-q", "2",
                    "-s", "128", "--rate", "50", "--search", "-V", "5"});
    ASSERT_TRUE(p.ok()) << p.error;
    std::string error;
    auto s = resolve_scenario(p.options, error);
    ASSERT_TRUE(s) << error;
    EXPECT_EQ(s->publishers, 4u);
    EXPECT_EQ(s->subscribers, 2u);
    EXPECT_EQ(s->pub_qos, mqtt::qos::exactly_once);
    EXPECT_EQ(s->sub_qos, mqtt::qos::exactly_once);
    EXPECT_EQ(s->payload_size, 128u);
    EXPECT_EQ(s->rate, 50.0);
    EXPECT_TRUE(p.options.search);
    EXPECT_EQ(p.options.version, mqtt::protocol_version::v5);
}

TEST(options, rate_per_client_multiplies_by_publishers) {
    auto p = parse({"pub", "-c", "20", "--rate-per-client", "5"});
    ASSERT_TRUE(p.ok()) << p.error;
    std::string error;
    auto s = resolve_scenario(p.options, error);
    ASSERT_TRUE(s) << error;
    EXPECT_EQ(s->publishers, 20u);
    EXPECT_EQ(s->rate, 100.0);
}

TEST(options, errors_are_reported_not_thrown) {
    EXPECT_FALSE(parse({"frobnicate"}).ok());
    EXPECT_FALSE(parse({"pub", "--qos", "3"}).ok());
    EXPECT_FALSE(parse({"pub", "--size", "8"}).ok());  // below the payload header
    EXPECT_FALSE(parse({"pub", "--rate"}).ok());
    EXPECT_FALSE(parse({"pub", "--bogus"}).ok());
    EXPECT_FALSE(parse({"scenario"}).ok());
    EXPECT_FALSE(parse({"compare"}).ok());

    std::string error;
    auto p = parse({"scenario", "nonesuch"});
    ASSERT_TRUE(p.ok());
    EXPECT_FALSE(resolve_scenario(p.options, error));
    EXPECT_NE(error.find("unknown scenario"), std::string::npos);

    p = parse({"pub", "-t", "bench/%z"});
    ASSERT_TRUE(p.ok());
    EXPECT_FALSE(resolve_scenario(p.options, error));

    p = parse({"pub", "--search"});
    ASSERT_TRUE(p.ok());
    EXPECT_FALSE(resolve_scenario(p.options, error));
}

TEST(options, every_named_scenario_resolves) {
    for (const auto& name : scenario_names()) {
        auto p = parse({"scenario", name.c_str()});
        ASSERT_TRUE(p.ok());
        std::string error;
        EXPECT_TRUE(resolve_scenario(p.options, error)) << name << ": " << error;
    }
}

}  // namespace
}  // namespace starling::bench
