#include "metrics/drop_log.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

namespace starling::metrics {
namespace {

// A clock the test moves by hand; read from several threads in the concurrency test.
class manual_clock final : public starling::clock {
  public:
    steady_point steady_now() const override {
        return steady_point(std::chrono::seconds(seconds_.load()));
    }
    system_point system_now() const override {
        return system_point(std::chrono::seconds(seconds_.load()));
    }
    void advance(std::chrono::seconds s) { seconds_ += s.count(); }

  private:
    std::atomic<std::int64_t> seconds_{1'000'000};
};

std::uint64_t count_of(const drop_row& row, drop_reason r) {
    return row.counts[static_cast<std::size_t>(r)];
}

TEST(drop_log, records_by_client_and_by_topic_with_reason_counts) {
    manual_clock clock;
    drop_log log(clock);
    log.record(drop_reason::incoming_rate, "pub-1", "a/b", 3);
    log.record(drop_reason::non_writable, "sub-1", "a/b");
    log.record(drop_reason::non_writable, "sub-1", "c/d");

    auto by_client = log.query({.by = drop_key_kind::client});
    ASSERT_EQ(by_client.rows.size(), 2U);
    EXPECT_EQ(by_client.rows[0].key, "pub-1");
    EXPECT_EQ(count_of(by_client.rows[0], drop_reason::incoming_rate), 3U);
    EXPECT_EQ(by_client.rows[1].key, "sub-1");
    EXPECT_EQ(count_of(by_client.rows[1], drop_reason::non_writable), 2U);
    EXPECT_EQ(by_client.total, 5U);
    EXPECT_EQ(by_client.totals[static_cast<std::size_t>(drop_reason::non_writable)], 2U);

    auto by_topic = log.query({.by = drop_key_kind::topic});
    ASSERT_EQ(by_topic.rows.size(), 2U);
    EXPECT_EQ(by_topic.rows[0].key, "a/b");
    EXPECT_EQ(by_topic.rows[0].total, 4U);
    EXPECT_EQ(by_topic.total, 5U);  // totals count each drop once, whatever the view
}

TEST(drop_log, filters_by_reason_and_key_and_limits) {
    manual_clock clock;
    drop_log log(clock);
    for (int i = 0; i < 10; ++i) {
        log.record(drop_reason::outgoing_rate, "c" + std::to_string(i), "t",
                   static_cast<std::uint64_t>(i + 1));
    }
    log.record(drop_reason::expired, "c0", "t", 100);

    auto top =
        log.query({.by = drop_key_kind::client, .reason = drop_reason::outgoing_rate, .limit = 3});
    ASSERT_EQ(top.rows.size(), 3U);
    EXPECT_EQ(top.matching, 10U);
    EXPECT_EQ(top.rows[0].key, "c9");  // ranked by the filtered reason, not the total
    EXPECT_EQ(top.rows[2].key, "c7");

    auto expired = log.query({.by = drop_key_kind::client, .reason = drop_reason::expired});
    ASSERT_EQ(expired.rows.size(), 1U);
    EXPECT_EQ(expired.rows[0].key, "c0");

    auto one = log.query({.by = drop_key_kind::client, .key = std::string("c4")});
    ASSERT_EQ(one.rows.size(), 1U);
    EXPECT_EQ(one.rows[0].total, 5U);
    EXPECT_TRUE(
        log.query({.by = drop_key_kind::client, .key = std::string("nobody")}).rows.empty());
}

TEST(drop_log, window_rolls_bucket_by_bucket) {
    manual_clock clock;
    drop_log log(clock, {.bucket_length = std::chrono::seconds(60), .buckets = 5});
    EXPECT_EQ(log.window(), std::chrono::seconds(300));
    log.record(drop_reason::quota, "c", "t", 7);
    clock.advance(std::chrono::seconds(120));
    log.record(drop_reason::quota, "c", "t", 5);

    auto r = log.query({});
    ASSERT_EQ(r.rows.size(), 1U);
    EXPECT_EQ(r.rows[0].total, 12U);

    // 4 more minutes: the first bucket has left the window, the second has not.
    clock.advance(std::chrono::seconds(200));
    r = log.query({});
    ASSERT_EQ(r.rows.size(), 1U);
    EXPECT_EQ(r.rows[0].total, 5U);
    EXPECT_EQ(r.total, 5U);

    // Everything out of the window: no row, no total; the key is forgotten on the next insert.
    clock.advance(std::chrono::seconds(300));
    r = log.query({});
    EXPECT_TRUE(r.rows.empty());
    EXPECT_EQ(r.total, 0U);
    log.record(drop_reason::quota, "other", "t2");
    EXPECT_EQ(log.evictions(drop_key_kind::client), 0U);  // stale keys are not "evicted"
}

TEST(drop_log, a_reused_slot_starts_from_zero) {
    manual_clock clock;
    drop_log log(clock, {.bucket_length = std::chrono::seconds(1), .buckets = 2});
    log.record(drop_reason::offline, "c", "", 4);
    clock.advance(std::chrono::seconds(2));  // same slot index, next lap of the ring
    log.record(drop_reason::offline, "c", "", 1);
    auto r = log.query({});
    ASSERT_EQ(r.rows.size(), 1U);
    EXPECT_EQ(r.rows[0].total, 1U);
}

TEST(drop_log, key_cap_evicts_the_least_recent_and_counts_it) {
    manual_clock clock;
    // One shard so the cap is exact.
    drop_log log(clock, {.max_keys = 3, .shards = 1});
    log.record(drop_reason::offline, "a", "");
    log.record(drop_reason::offline, "b", "");
    log.record(drop_reason::offline, "c", "");
    log.record(drop_reason::offline, "a", "");  // a is now the most recent
    log.record(drop_reason::offline, "d", "");  // evicts b

    EXPECT_EQ(log.keys(drop_key_kind::client), 3U);
    EXPECT_EQ(log.evictions(drop_key_kind::client), 1U);
    auto r = log.query({.limit = 10});
    std::vector<std::string> keys;
    for (const auto& row : r.rows) {
        keys.push_back(row.key);
    }
    EXPECT_EQ(keys, (std::vector<std::string>{"a", "c", "d"}));
    EXPECT_EQ(r.total, 5U);  // the evicted key's drop still counts in the totals
}

TEST(drop_log, a_topic_storm_stays_within_the_cap) {
    manual_clock clock;
    drop_log log(clock, {.max_keys = 64, .shards = 4});
    for (int i = 0; i < 10000; ++i) {
        log.record(drop_reason::no_usable_shared_member, "", "storm/" + std::to_string(i));
    }
    EXPECT_LE(log.keys(drop_key_kind::topic), 64U);
    EXPECT_GE(log.evictions(drop_key_kind::topic), 10000U - 64U);
    EXPECT_EQ(log.keys(drop_key_kind::client), 0U);
    EXPECT_EQ(log.query({.by = drop_key_kind::topic}).total, 10000U);
}

TEST(drop_log, concurrent_records_and_queries_lose_nothing) {
    manual_clock clock;
    drop_log log(clock, {.max_keys = 1000});
    constexpr int threads = 4;
    constexpr int per_thread = 5000;
    std::atomic<bool> done{false};
    std::thread reader([&] {
        while (!done.load()) {
            auto r = log.query({.limit = 5});
            EXPECT_LE(r.rows.size(), 5U);
        }
    });
    std::vector<std::thread> writers;
    for (int t = 0; t < threads; ++t) {
        writers.emplace_back([&log, t] {
            for (int i = 0; i < per_thread; ++i) {
                log.record(drop_reason::non_writable, "c" + std::to_string(i % 50),
                           "t/" + std::to_string(t));
            }
        });
    }
    for (auto& w : writers) {
        w.join();
    }
    done = true;
    reader.join();
    auto r = log.query({.limit = 100});
    EXPECT_EQ(r.total, static_cast<std::uint64_t>(threads * per_thread));
    ASSERT_EQ(r.rows.size(), 50U);
    for (const auto& row : r.rows) {
        EXPECT_EQ(row.total, static_cast<std::uint64_t>(threads * per_thread / 50));
    }
}

}  // namespace
}  // namespace starling::metrics
