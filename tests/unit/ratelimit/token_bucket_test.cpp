#include "ratelimit/token_bucket.h"

#include <gtest/gtest.h>

#include <chrono>

namespace starling::ratelimit {
namespace {

using namespace std::chrono_literals;

// Time is a value passed to each call: the tests move it by hand, nothing sleeps.
const clock::steady_point t0{};

TEST(token_bucket, starts_full_and_refuses_past_the_short_window) {
    token_bucket bucket({{10, 1}, {300, 60}}, t0);
    for (int i = 0; i < 10; ++i) {
        EXPECT_TRUE(bucket.try_acquire(t0)) << i;
    }
    EXPECT_FALSE(bucket.try_acquire(t0));
    EXPECT_FALSE(bucket.try_acquire(t0 + 99ms));  // 10:1 refills one token per 100 ms
}

TEST(token_bucket, refills_greedily_one_token_per_interval) {
    token_bucket bucket({{10, 1}}, t0);
    EXPECT_EQ(bucket.try_acquire(10, t0), 10);
    EXPECT_TRUE(bucket.try_acquire(t0 + 100ms));
    EXPECT_FALSE(bucket.try_acquire(t0 + 150ms));
    // The 50 ms left over from the last refill carry over: 150 + 50 = one more token at 200.
    EXPECT_TRUE(bucket.try_acquire(t0 + 200ms));
    EXPECT_EQ(bucket.available(t0 + 10s), 10);  // never beyond capacity
}

TEST(token_bucket, long_window_holds_when_short_one_has_tokens) {
    // 10:1,30:60: after 30 in the first minute the short window refills but the long one caps.
    token_bucket bucket({{10, 1}, {30, 60}}, t0);
    std::int64_t taken = 0;
    auto now = t0;
    for (int second = 0; second < 10; ++second) {
        taken += bucket.try_acquire(100, now);
        now += 1s;
    }
    // 30 from the long window's capacity, plus what it regained over 9 s (30/60 per s = 4.5).
    EXPECT_EQ(taken, 34);
    EXPECT_EQ(bucket.available(now), 1);  // half a token per second: one every 2 s
}

TEST(token_bucket, counts_accepted_over_a_window_at_the_configured_rate) {
    token_bucket bucket({{10, 1}, {300, 60}}, t0);
    std::int64_t accepted = 0;
    // 100 attempts per second for 120 s. Greedy refill: over any span T a window admits at
    // most capacity + capacity * T / period, so the first minute admits up to 2 x 300 (the
    // full bucket plus 5/s), and after that the sustained rate is 300/60 = 5/s.
    std::int64_t first_minute = 0;
    for (int ms = 0; ms < 120000; ms += 10) {
        const bool ok = bucket.try_acquire(t0 + std::chrono::milliseconds(ms));
        accepted += ok ? 1 : 0;
        if (ms < 60000) {
            first_minute += ok ? 1 : 0;
        }
    }
    EXPECT_GE(first_minute, 595);
    EXPECT_LE(first_minute, 600);
    EXPECT_GE(accepted - first_minute, 299);  // the second minute: the sustained 5/s only
    EXPECT_LE(accepted - first_minute, 300);
}

TEST(token_bucket, partial_grant_takes_the_emptiest_window) {
    token_bucket bucket({{5, 1}, {8, 10}}, t0);
    EXPECT_EQ(bucket.try_acquire(3, t0), 3);
    EXPECT_EQ(bucket.try_acquire(10, t0), 2);
    // After 1 s the short window is full again (5) but the long one regained only 0.8.
    EXPECT_EQ(bucket.try_acquire(10, t0 + 1s), 3);
}

TEST(token_bucket, no_windows_means_unlimited) {
    token_bucket bucket({}, t0);
    EXPECT_EQ(bucket.try_acquire(1000, t0), 1000);
}

}  // namespace
}  // namespace starling::ratelimit
