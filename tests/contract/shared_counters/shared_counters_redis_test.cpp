// The shared-counters contract against the Redis adapter (labels contract, redis), plus its
// own promises: two instances (two nodes) share one bucket, a reconfigured bucket hands out no
// fresh burst, and a lost server fails calls instead of granting.

#include "contract/shared_counters/shared_counters_redis_factory.h"

#include <chrono>

namespace starling::testing {

INSTANTIATE_TEST_SUITE_P(redis, shared_counters_contract,
                         ::testing::Values(std::make_shared<redis_counters_factory>()),
                         factory_name<shared_counters_factory>);

namespace {

using adapters::redis::open_redis_shared_counters;

std::int64_t consume_on(shared_counters& c, const std::vector<bandwidth>& limits, std::int64_t n) {
    auto r = await<result<std::int64_t>>(
        [&](auto done) { c.try_consume("bucket", limits, n, std::move(done)); });
    EXPECT_TRUE(r) << r.error().message();
    return r ? *r : -1;
}

}  // namespace

TEST(redis_shared_counters, two_nodes_share_one_bucket) {
    const auto address = test_redis_address();
    if (!address) {
        GTEST_SKIP() << no_redis_message;
    }
    manual_clock clk;
    const auto prefix = unique_key_prefix();
    auto a = open_redis_shared_counters(test_counters_config(*address, prefix), clk);
    auto b = open_redis_shared_counters(test_counters_config(*address, prefix), clk);
    ASSERT_TRUE(a && b);
    const std::vector<bandwidth> limits{{100, 1}, {1000, 60}};
    EXPECT_EQ(consume_on(**a, limits, 60), 60);
    EXPECT_EQ(consume_on(**b, limits, 60), 40);  // what node a left
    EXPECT_EQ(consume_on(**a, limits, 1), 0);
    clk.advance(std::chrono::milliseconds(500));  // 50 back in the 1 s window
    EXPECT_EQ(consume_on(**b, limits, 100), 50);
    a.value().reset();
    b.value().reset();
    delete_keys_with_prefix(*address, prefix);
}

TEST(redis_shared_counters, new_limits_keep_the_tokens_already_spent) {
    const auto address = test_redis_address();
    if (!address) {
        GTEST_SKIP() << no_redis_message;
    }
    manual_clock clk;
    const auto prefix = unique_key_prefix();
    auto c = open_redis_shared_counters(test_counters_config(*address, prefix), clk);
    ASSERT_TRUE(c);
    EXPECT_EQ(consume_on(**c, {{10, 1}}, 8), 8);
    EXPECT_EQ(consume_on(**c, {{100, 1}}, 100), 2);
    EXPECT_EQ(consume_on(**c, {{100, 1}, {5, 60}}, 1), 0);
    clk.advance(std::chrono::seconds(12));
    EXPECT_EQ(consume_on(**c, {{100, 1}, {5, 60}}, 10), 1);
    c.value().reset();
    delete_keys_with_prefix(*address, prefix);
}

TEST(redis_shared_counters, an_unreachable_server_fails_the_call_and_is_unhealthy) {
    manual_clock clk;
    adapters::redis::redis_counters_config config;
    config.host = "127.0.0.1";
    config.port = 1;  // nothing listens there
    config.connect_timeout = std::chrono::milliseconds(500);
    auto c = open_redis_shared_counters(config, clk);
    ASSERT_FALSE(c);  // start-up refuses a server it cannot reach
}

}  // namespace starling::testing
