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

TEST(options, drain_defaults_are_100_persistent_subscribers_with_1000_queued_each) {
    auto p = parse({"scenario", "drain"});
    ASSERT_TRUE(p.ok()) << p.error;
    std::string error;
    auto s = resolve_scenario(p.options, error);
    ASSERT_TRUE(s) << error;
    EXPECT_EQ(s->kind, scenario_kind::drain);
    EXPECT_EQ(s->subscribers, 100u);
    EXPECT_EQ(s->publishers, 100u);  // one per subscriber's topic
    EXPECT_EQ(s->queued, 1000u);
    EXPECT_TRUE(s->sub_persistent);
    EXPECT_EQ(s->pub_qos, mqtt::qos::at_least_once);
    EXPECT_EQ(s->sub_qos, mqtt::qos::at_least_once);
    EXPECT_EQ(s->pub_topic, s->sub_filter);  // private topics: publisher i <-> subscriber i
    EXPECT_NE(s->pub_topic.find("drain/%i"), std::string::npos);
    EXPECT_EQ(s->rate, 0.0);  // queueing runs as fast as the window allows
    EXPECT_NE(s->description.find("1000 messages each"), std::string::npos) << s->description;
}

TEST(options, drain_flags_override_the_defaults) {
    auto p = parse({"scenario",  "drain",    "--subscribers",
                    "5",         "--queued", "200",
                    "--sub-qos", "2",        "--pub-qos",
                    "2",         "-V",       "5",
                    "-x",        "60",       "--drain",
                    "3",         "--settle", "0.2",
                    "-t",        "d/%i",     "-f",
                    "d/%i"});
    ASSERT_TRUE(p.ok()) << p.error;
    EXPECT_EQ(p.options.queued, 200u);
    EXPECT_EQ(p.options.drain_s, 3.0);
    EXPECT_EQ(p.options.settle_s, 0.2);
    EXPECT_EQ(p.options.session_expiry, 60u);
    std::string error;
    auto s = resolve_scenario(p.options, error);
    ASSERT_TRUE(s) << error;
    EXPECT_EQ(s->subscribers, 5u);
    EXPECT_EQ(s->publishers, 5u);  // follows --subscribers unless given
    EXPECT_EQ(s->queued, 200u);
    EXPECT_EQ(s->sub_qos, mqtt::qos::exactly_once);
    EXPECT_EQ(s->pub_qos, mqtt::qos::exactly_once);
    EXPECT_EQ(s->pub_topic, "d/%i");

    p = parse({"scenario", "drain", "--subscribers", "10", "--publishers", "2"});
    s = resolve_scenario(p.options, error);
    ASSERT_TRUE(s) << error;
    EXPECT_EQ(s->publishers, 2u);
}

TEST(options, drain_rejects_what_would_queue_nothing) {
    EXPECT_FALSE(parse({"scenario", "drain", "--queued", "x"}).ok());
    EXPECT_FALSE(parse({"scenario", "drain", "--queued"}).ok());
    const std::vector<std::vector<const char*>> invalid = {
        {"scenario", "drain", "--queued", "0"},
        {"scenario", "drain", "--clean"},             // no session to queue in
        {"scenario", "drain", "-q", "0"},             // offline sessions queue no QoS 0
        {"scenario", "drain", "--sub-qos", "0"},      //
        {"scenario", "drain", "-V", "5", "-x", "0"},  // v5 session ends at the disconnect
        {"scenario", "drain", "--search"},
        {"scenario", "drain", "-c", "10"},  // scenarios take --subscribers
        {"scenario", "drain", "--subscribers", "0"},
    };
    for (const auto& args : invalid) {
        auto p = parse(args);
        ASSERT_TRUE(p.ok()) << p.error;
        std::string error;
        EXPECT_FALSE(resolve_scenario(p.options, error)) << args.back();
        EXPECT_FALSE(error.empty());
    }
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
