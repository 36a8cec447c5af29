#include "contract/shared_counters/shared_counters_contract.h"

#include <chrono>

namespace starling::testing {

namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

const std::vector<bandwidth> ten_per_second{{10, 1}};

}  // namespace

TEST_P(shared_counters_contract, counters_add_and_get) {
    auto missing = get("sessions");
    ASSERT_TRUE(missing) << missing.error().message();
    EXPECT_EQ(*missing, 0);
    EXPECT_EQ(add("sessions", 5).value(), 5);
    EXPECT_EQ(add("sessions", -2).value(), 3);
    EXPECT_EQ(get("sessions").value(), 3);
    EXPECT_EQ(add("apps", 1).value(), 1);
    EXPECT_EQ(get("sessions").value(), 3);
    EXPECT_EQ(add("sessions", -4).value(), -1);  // counters may go below zero
}

TEST_P(shared_counters_contract, a_new_bucket_starts_full) {
    EXPECT_EQ(granted("b", ten_per_second, 10), 10);
    EXPECT_EQ(granted("b", ten_per_second, 1), 0);
}

TEST_P(shared_counters_contract, grants_what_is_left_when_asked_for_more) {
    EXPECT_EQ(granted("b", ten_per_second, 7), 7);
    EXPECT_EQ(granted("b", ten_per_second, 5), 3);
    EXPECT_EQ(granted("b", ten_per_second, 5), 0);
    EXPECT_EQ(granted("b", ten_per_second, 0), 0);
}

TEST_P(shared_counters_contract, refill_is_greedy_and_keeps_fractions) {
    EXPECT_EQ(granted("b", ten_per_second, 10), 10);
    clock_.advance(milliseconds(100));  // 10 per second: one token every 100 ms
    EXPECT_EQ(granted("b", ten_per_second, 10), 1);
    clock_.advance(milliseconds(250));  // 2.5 tokens: 2 now, half a token carried
    EXPECT_EQ(granted("b", ten_per_second, 10), 2);
    clock_.advance(milliseconds(50));  // the carried half plus this half
    EXPECT_EQ(granted("b", ten_per_second, 10), 1);
    clock_.advance(milliseconds(99));
    EXPECT_EQ(granted("b", ten_per_second, 10), 0);
    clock_.advance(milliseconds(1));
    EXPECT_EQ(granted("b", ten_per_second, 10), 1);
}

TEST_P(shared_counters_contract, refill_stops_at_capacity) {
    EXPECT_EQ(granted("b", ten_per_second, 10), 10);
    clock_.advance(seconds(3600));
    EXPECT_EQ(granted("b", ten_per_second, 1000), 10);
}

TEST_P(shared_counters_contract, every_bandwidth_must_hold) {
    // TBMQ's "10:1,15:60": at most 10 a second and 15 a minute.
    const std::vector<bandwidth> limits{{10, 1}, {15, 60}};
    EXPECT_EQ(granted("b", limits, 10), 10);
    clock_.advance(seconds(1));  // the 1 s window is full again; the minute one has 5 (+0.25)
    EXPECT_EQ(granted("b", limits, 10), 5);
    clock_.advance(seconds(3));  // 0.25 + 0.75 = 1 token in the minute window
    EXPECT_EQ(granted("b", limits, 10), 1);
    clock_.advance(seconds(60));
    EXPECT_EQ(granted("b", limits, 100), 10);  // both full: the tighter one decides
}

TEST_P(shared_counters_contract, buckets_are_independent_per_key) {
    EXPECT_EQ(granted("a", ten_per_second, 10), 10);
    EXPECT_EQ(granted("b", ten_per_second, 4), 4);
    EXPECT_EQ(granted("a", ten_per_second, 1), 0);
}

TEST_P(shared_counters_contract, refund_returns_tokens_up_to_capacity) {
    EXPECT_EQ(granted("b", ten_per_second, 10), 10);
    auto after = refund("b", ten_per_second, 4);
    ASSERT_TRUE(after) << after.error().message();
    EXPECT_EQ(*after, 4);  // tokens now available
    EXPECT_EQ(granted("b", ten_per_second, 10), 4);

    auto capped = refund("b", ten_per_second, 100);
    ASSERT_TRUE(capped);
    EXPECT_EQ(*capped, 10);
    EXPECT_EQ(granted("b", ten_per_second, 100), 10);
}

TEST_P(shared_counters_contract, refund_reaches_every_bandwidth) {
    const std::vector<bandwidth> limits{{10, 1}, {15, 60}};
    EXPECT_EQ(granted("b", limits, 10), 10);  // 0 and 5 left
    auto after = refund("b", limits, 6);      // 6 and 11
    ASSERT_TRUE(after);
    EXPECT_EQ(*after, 6);
    EXPECT_EQ(granted("b", limits, 100), 6);  // 0 and 5 left
    clock_.advance(seconds(1));               // 10 and 5 (+0.25)
    EXPECT_EQ(granted("b", limits, 100), 5);
}

TEST_P(shared_counters_contract, invalid_requests_are_rejected) {
    const std::vector<std::vector<bandwidth>> bad_limits{{}, {{0, 1}}, {{10, 0}}, {{-1, 1}}};
    for (const auto& limits : bad_limits) {
        auto r = consume("b", limits, 1);
        ASSERT_FALSE(r);
        EXPECT_EQ(r.error(), std::errc::invalid_argument);
        auto f = refund("b", limits, 1);
        ASSERT_FALSE(f);
        EXPECT_EQ(f.error(), std::errc::invalid_argument);
    }
    auto negative = consume("b", ten_per_second, -1);
    ASSERT_FALSE(negative);
    EXPECT_EQ(negative.error(), std::errc::invalid_argument);
    auto negative_refund = refund("b", ten_per_second, -1);
    ASSERT_FALSE(negative_refund);
    EXPECT_EQ(negative_refund.error(), std::errc::invalid_argument);
}

TEST_P(shared_counters_contract, is_healthy) { EXPECT_TRUE(counters_->healthy()); }

}  // namespace starling::testing
