// Keep Alive, server side: the negotiated interval (MQTT 5.0 3.1.2.10 and 3.2.2.3.14; 3.1.1
// 3.1.2.10) and the deadline that silence reaches. The last test drives the deadline the way
// the client actor does — one timer at deadline(), re-armed when it finds the connection not
// expired — through seeded random packet schedules, against the rule stated directly: the
// connection closes at the first silence of 1.5 × the interval, at exactly that instant.

#include "mqtt/keep_alive.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <vector>

namespace starling::mqtt {
namespace {

using std::chrono::milliseconds;
using time_point = keep_alive_deadline::time_point;

constexpr time_point at(std::int64_t ms) { return time_point{} + milliseconds(ms); }

TEST(keep_alive_negotiation, a_v5_client_within_the_maximum_keeps_its_interval_and_is_not_told) {
    for (std::uint16_t asked : {1, 30, 599, 600}) {
        const auto t = negotiate_keep_alive(asked, 600, protocol_version::v5);
        EXPECT_EQ(t.seconds, asked);
        EXPECT_FALSE(t.server_keep_alive.has_value()) << asked;
    }
}

TEST(keep_alive_negotiation, a_v5_client_asking_for_none_or_more_is_told_the_maximum) {
    for (std::uint16_t asked : {0, 601, 65535}) {
        const auto t = negotiate_keep_alive(asked, 600, protocol_version::v5);
        EXPECT_EQ(t.seconds, 600) << asked;
        ASSERT_TRUE(t.server_keep_alive.has_value()) << asked;
        EXPECT_EQ(*t.server_keep_alive, 600);
    }
}

TEST(keep_alive_negotiation, a_3_1_x_client_gets_the_maximum_enforced_without_being_told) {
    for (auto version : {protocol_version::v3_1, protocol_version::v3_1_1}) {
        EXPECT_EQ(negotiate_keep_alive(0, 600, version).seconds, 600);
        EXPECT_EQ(negotiate_keep_alive(601, 600, version).seconds, 600);
        EXPECT_EQ(negotiate_keep_alive(60, 600, version).seconds, 60);
        EXPECT_FALSE(negotiate_keep_alive(0, 600, version).server_keep_alive.has_value());
        EXPECT_FALSE(negotiate_keep_alive(601, 600, version).server_keep_alive.has_value());
    }
}

TEST(keep_alive_negotiation,
     a_maximum_of_zero_is_taken_as_one_second_so_no_connection_is_unbounded) {
    const auto t = negotiate_keep_alive(0, 0, protocol_version::v5);
    EXPECT_EQ(t.seconds, 1);
    EXPECT_EQ(t.server_keep_alive, std::optional<std::uint16_t>(1));
}

TEST(keep_alive_deadline_test, without_an_interval_there_is_no_deadline) {
    keep_alive_deadline none;
    EXPECT_FALSE(none.deadline().has_value());
    EXPECT_FALSE(none.expired(at(1'000'000'000)));
    keep_alive_deadline zero(0, at(0));
    EXPECT_FALSE(zero.deadline().has_value());
    EXPECT_FALSE(zero.expired(at(1'000'000'000)));
}

TEST(keep_alive_deadline_test, silence_of_one_and_a_half_intervals_expires_and_not_a_moment_less) {
    keep_alive_deadline k(10, at(1000));
    EXPECT_EQ(k.grace(), milliseconds(15000));
    EXPECT_EQ(k.deadline(), at(16000));
    EXPECT_FALSE(k.expired(at(15999)));
    EXPECT_TRUE(k.expired(at(16000)));
}

TEST(keep_alive_deadline_test, every_packet_moves_the_deadline) {
    keep_alive_deadline k(2, at(0));
    k.on_packet(at(2500));
    EXPECT_EQ(k.deadline(), at(5500));
    EXPECT_FALSE(k.expired(at(3000)));  // the first deadline passed, but a packet came
    EXPECT_TRUE(k.expired(at(5500)));
}

TEST(keep_alive_deadline_test, the_largest_interval_does_not_overflow) {
    keep_alive_deadline k(65535, at(0));
    EXPECT_EQ(k.deadline(), at(std::int64_t{65535} * 1500));
}

// The actor's loop over random schedules: a timer armed at deadline(); when it fires, the
// connection closes if expired(), else the timer is armed again at the new deadline(). Packets
// and a firing timer at the same instant: the packet is handled first (either order is a valid
// run; this one is the boundary case of expired()).
TEST(keep_alive_deadline_test, random_schedules_close_at_the_first_long_enough_silence) {
    std::mt19937 rng(20261207);
    for (int run = 0; run < 2000; ++run) {
        const std::uint16_t seconds = std::uniform_int_distribution<int>(1, 5)(rng);
        const std::int64_t grace = std::int64_t{seconds} * 1500;
        // Packet times: gaps mostly under the grace, sometimes exactly at it or just over.
        std::vector<std::int64_t> packets;
        std::int64_t t = 0;
        const int count = std::uniform_int_distribution<int>(0, 30)(rng);
        for (int i = 0; i < count; ++i) {
            switch (std::uniform_int_distribution<int>(0, 9)(rng)) {
                case 0:
                    t += grace;  // a packet at the very deadline still counts
                    break;
                case 1:
                    t += grace + std::uniform_int_distribution<int>(1, 500)(rng);
                    break;
                default:
                    t += std::uniform_int_distribution<std::int64_t>(0, grace - 1)(rng);
            }
            packets.push_back(t);
        }

        // The rule: the connection starts at 0 and closes at last + grace for the first gap
        // longer than the grace, or after the final packet.
        std::int64_t expected_close = -1;
        std::int64_t last = 0;
        for (auto p : packets) {
            if (p - last > grace) {
                expected_close = last + grace;
                break;
            }
            last = p;
        }
        if (expected_close < 0) {
            expected_close = last + grace;
        }

        // The loop under test.
        keep_alive_deadline k(seconds, at(0));
        time_point timer = *k.deadline();
        std::size_t next = 0;
        std::int64_t closed_at = -1;
        int timer_firings = 0;
        while (closed_at < 0) {
            if (next < packets.size() && at(packets[next]) <= timer) {
                k.on_packet(at(packets[next++]));
                continue;
            }
            ++timer_firings;
            ASSERT_LT(timer_firings, 100) << "the timer never expires; run " << run;
            if (k.expired(timer)) {
                closed_at = (timer - time_point{}) / milliseconds(1);
            } else {
                ASSERT_GT(*k.deadline(), timer) << "re-armed at or before the instant it fired";
                timer = *k.deadline();
            }
        }
        ASSERT_EQ(closed_at, expected_close) << "run " << run << ", interval " << seconds << " s";
    }
}

}  // namespace
}  // namespace starling::mqtt
