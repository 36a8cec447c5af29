#include "base/retry_pacer.h"

#include <gtest/gtest.h>

#include <thread>
#include <vector>

namespace starling::base {
namespace {

using namespace std::chrono_literals;

TEST(retry_pacer, delay_doubles_per_failure_up_to_the_cap_and_a_success_resets_it) {
    retry_pacer pacer("test loop", {.first_delay = 1ms, .max_delay = 8ms});
    std::stop_source stopped;
    stopped.request_stop();  // failed() then returns without waiting
    std::vector<std::chrono::milliseconds> delays;
    for (int i = 0; i < 6; ++i) {
        delays.push_back(pacer.next_delay());
        EXPECT_FALSE(pacer.failed("poll", "closed", stopped.get_token()));
    }
    EXPECT_EQ(delays, (std::vector<std::chrono::milliseconds>{1ms, 2ms, 4ms, 8ms, 8ms, 8ms}));
    EXPECT_EQ(pacer.failures_in_a_row(), 6U);
    pacer.succeeded();
    EXPECT_EQ(pacer.failures_in_a_row(), 0U);
    EXPECT_EQ(pacer.next_delay(), 1ms);
}

TEST(retry_pacer, a_long_run_of_failures_neither_overflows_nor_passes_the_cap) {
    retry_pacer pacer("test loop", {.first_delay = 100ms, .max_delay = 5s});
    std::stop_source stopped;
    stopped.request_stop();
    for (int i = 0; i < 200; ++i) {
        (void)pacer.failed("poll", "fatal", stopped.get_token());
    }
    EXPECT_EQ(pacer.next_delay(), 5s);
}

TEST(retry_pacer, a_failure_without_a_stop_waits_and_asks_for_another_try) {
    retry_pacer pacer("test loop", {.first_delay = 1ms, .max_delay = 1ms});
    std::stop_source running;
    const auto before = std::chrono::steady_clock::now();
    EXPECT_TRUE(pacer.failed("poll", "transient", running.get_token()));
    EXPECT_GE(std::chrono::steady_clock::now() - before, 1ms);
}

TEST(retry_pacer, a_stop_request_ends_a_long_wait) {
    retry_pacer pacer("test loop", {.first_delay = 1h, .max_delay = 1h});
    std::stop_source owner;
    bool retry = true;
    std::thread loop([&] { retry = pacer.failed("inbox write", "down", owner.get_token()); });
    owner.request_stop();  // before or during the wait: either way the wait ends now
    loop.join();
    EXPECT_FALSE(retry);
}

TEST(retry_pacer, logs_the_first_second_fourth_eighth_failure_of_a_run) {
    std::vector<std::size_t> logged;
    for (std::size_t n = 0; n <= 64; ++n) {
        if (retry_pacer::logged(n)) {
            logged.push_back(n);
        }
    }
    EXPECT_EQ(logged, (std::vector<std::size_t>{1, 2, 4, 8, 16, 32, 64}));
}

}  // namespace
}  // namespace starling::base
