#include "bench/sequence_tracker.h"

#include <gtest/gtest.h>

namespace starling::bench {
namespace {

TEST(sequence_tracker, in_order_stream_has_no_anomalies) {
    sequence_tracker t;
    for (std::uint64_t s = 0; s < 1000; ++s) {
        EXPECT_EQ(t.on_message(s), arrival::in_order);
    }
    EXPECT_EQ(t.unique(), 1000u);
    EXPECT_EQ(t.received(), 1000u);
    EXPECT_EQ(t.duplicates(), 0u);
    EXPECT_EQ(t.out_of_order(), 0u);
    EXPECT_EQ(t.missing(), 0u);
    EXPECT_EQ(t.lost(1000), 0u);
}

TEST(sequence_tracker, lost_counts_gaps_and_the_missing_tail) {
    sequence_tracker t;
    for (std::uint64_t s : {0, 1, 2, 5, 6}) {  // 3 and 4 never come; 7..9 were sent too
        t.on_message(s);
    }
    EXPECT_EQ(t.gaps(), 1u);
    EXPECT_EQ(t.missing(), 2u);
    EXPECT_EQ(t.lost(10), 5u);
    EXPECT_EQ(t.out_of_order(), 0u);
}

TEST(sequence_tracker, a_missing_first_message_is_a_gap) {
    sequence_tracker t;
    EXPECT_EQ(t.on_message(3), arrival::gap);
    EXPECT_EQ(t.missing(), 3u);
    EXPECT_EQ(t.lost(4), 3u);
}

TEST(sequence_tracker, late_arrival_fills_its_gap_and_counts_as_out_of_order) {
    sequence_tracker t;
    t.on_message(0);
    t.on_message(1);
    EXPECT_EQ(t.on_message(4), arrival::gap);  // 2, 3 missing
    EXPECT_EQ(t.on_message(3), arrival::out_of_order);
    EXPECT_EQ(t.on_message(2), arrival::out_of_order);
    EXPECT_EQ(t.on_message(5), arrival::in_order);
    EXPECT_EQ(t.out_of_order(), 2u);
    EXPECT_EQ(t.missing(), 0u);
    EXPECT_EQ(t.missing_ranges(), 0u);
    EXPECT_EQ(t.duplicates(), 0u);
    EXPECT_EQ(t.lost(6), 0u);
}

TEST(sequence_tracker, late_arrival_in_the_middle_of_a_gap_splits_it) {
    sequence_tracker t;
    t.on_message(0);
    t.on_message(10);  // 1..9 missing
    EXPECT_EQ(t.missing_ranges(), 1u);
    EXPECT_EQ(t.on_message(5), arrival::out_of_order);
    EXPECT_EQ(t.missing_ranges(), 2u);  // 1..4 and 6..9
    EXPECT_EQ(t.missing(), 8u);
    EXPECT_EQ(t.on_message(5), arrival::duplicate);
    EXPECT_EQ(t.on_message(1), arrival::out_of_order);
    EXPECT_EQ(t.on_message(9), arrival::out_of_order);
    EXPECT_EQ(t.missing(), 6u);
    EXPECT_EQ(t.lost(11), 6u);
}

TEST(sequence_tracker, duplicates_are_counted_and_not_unique) {
    sequence_tracker t;
    t.on_message(0);
    t.on_message(1);
    EXPECT_EQ(t.on_message(1), arrival::duplicate);
    EXPECT_EQ(t.on_message(0), arrival::duplicate);
    t.on_message(2);
    EXPECT_EQ(t.duplicates(), 2u);
    EXPECT_EQ(t.unique(), 3u);
    EXPECT_EQ(t.received(), 5u);
    EXPECT_EQ(t.lost(3), 0u);
    // More received than sent never makes lost negative.
    EXPECT_EQ(t.lost(2), 0u);
}

TEST(sequence_tracker, a_stream_can_start_anywhere) {
    sequence_tracker t(100);
    EXPECT_EQ(t.on_message(100), arrival::in_order);
    EXPECT_EQ(t.on_message(101), arrival::in_order);
    // Below the declared start: never expected, so a duplicate rather than a late arrival.
    EXPECT_EQ(t.on_message(50), arrival::duplicate);
    EXPECT_EQ(t.ambiguous(), 1u);
    EXPECT_EQ(t.next_expected(), 102u);
}

TEST(sequence_tracker, too_many_gaps_write_off_the_oldest_but_keep_them_lost) {
    sequence_tracker t(0, /*max_ranges=*/2);
    t.on_message(0);
    t.on_message(2);  // gap {1}
    t.on_message(4);  // gap {3}
    t.on_message(6);  // gap {5}: {1} is written off
    EXPECT_EQ(t.missing_ranges(), 2u);
    EXPECT_EQ(t.missing(), 3u);
    EXPECT_EQ(t.lost(7), 3u);
    // 1 arrives late, but its range was forgotten: counted as an (ambiguous) duplicate.
    EXPECT_EQ(t.on_message(1), arrival::duplicate);
    EXPECT_EQ(t.ambiguous(), 1u);
    // 5 is still tracked.
    EXPECT_EQ(t.on_message(5), arrival::out_of_order);
    EXPECT_EQ(t.lost(7), 2u);
}

}  // namespace
}  // namespace starling::bench
