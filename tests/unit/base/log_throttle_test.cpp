#include "base/log_throttle.h"

#include <gtest/gtest.h>

namespace starling::base {
namespace {

using namespace std::chrono_literals;

TEST(log_throttle, lets_n_lines_a_second_through_and_counts_the_rest) {
    log_throttle throttle(3);
    const auto t0 = std::chrono::steady_clock::time_point{} + 10s;
    std::size_t held = 99;
    for (int i = 0; i < 3; ++i) {
        EXPECT_TRUE(throttle.admit(t0 + std::chrono::milliseconds(i), held));
        EXPECT_EQ(held, 0U);
    }
    for (int i = 0; i < 5; ++i) {
        EXPECT_FALSE(throttle.admit(t0 + 500ms, held));
    }
    // The next second: the first line says how many were held back, once.
    EXPECT_TRUE(throttle.admit(t0 + 1s, held));
    EXPECT_EQ(held, 5U);
    EXPECT_TRUE(throttle.admit(t0 + 1s + 1ms, held));
    EXPECT_EQ(held, 0U);
}

TEST(log_throttle, clips_long_texts_on_a_character_boundary) {
    EXPECT_EQ(clipped_for_log("short", 8), "short");
    EXPECT_EQ(clipped_for_log(std::string(65535, 'x'), 4), "xxxx…(65535 bytes)");
    // "é" is two bytes: a cut inside it moves back before it.
    EXPECT_EQ(clipped_for_log("abé", 3), "ab…(4 bytes)");
}

}  // namespace
}  // namespace starling::base
