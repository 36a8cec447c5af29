// The shared-counters contract against the embedded adapter, plus its own promises: callbacks
// complete inline, and a bucket reconfigured with new limits hands out no fresh burst.

#include "contract/shared_counters/shared_counters_embedded_factory.h"

namespace starling::testing {

INSTANTIATE_TEST_SUITE_P(embedded, shared_counters_contract,
                         ::testing::Values(std::make_shared<embedded_counters_factory>()),
                         factory_name<shared_counters_factory>);

namespace {

using adapters::embedded::embedded_shared_counters;

}  // namespace

TEST(embedded_shared_counters, callbacks_run_before_the_call_returns) {
    manual_clock clk;
    embedded_shared_counters counters(clk);
    bool ran = false;
    counters.try_consume("b", {{5, 1}}, 2, [&](result<std::int64_t> r) {
        ran = true;
        EXPECT_EQ(r.value(), 2);
    });
    EXPECT_TRUE(ran);
}

TEST(embedded_shared_counters, new_limits_keep_the_tokens_already_spent) {
    manual_clock clk;
    embedded_shared_counters counters(clk);
    auto consume = [&](const std::vector<bandwidth>& limits, std::int64_t n) {
        std::int64_t got = -1;
        counters.try_consume("b", limits, n, [&](result<std::int64_t> r) { got = r.value(); });
        return got;
    };
    EXPECT_EQ(consume({{10, 1}}, 8), 8);            // 2 left
    EXPECT_EQ(consume({{100, 1}}, 100), 2);         // larger capacity, same 2 tokens
    EXPECT_EQ(consume({{100, 1}, {5, 60}}, 1), 0);  // a new window starts from what is left
    clk.advance(std::chrono::seconds(12));          // 5 per minute: one token
    EXPECT_EQ(consume({{100, 1}, {5, 60}}, 10), 1);
}

}  // namespace starling::testing
