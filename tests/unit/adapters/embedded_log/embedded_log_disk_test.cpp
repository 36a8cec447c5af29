// The embedded log against a filling disk: the free-space watermarks (refuse the message flow
// below the minimum, slow down below the slow threshold, both ending by themselves when space
// returns), and the default size bound of topics created without one. The free space comes
// from an injected source, so a "full disk" needs no real file system.

#include "unit/adapters/embedded_log/embedded_log_test_support.h"

#include <atomic>
#include <thread>

namespace starling::testing {
namespace {

using adapters::embedded::disk_space;
using adapters::embedded::disk_state;

constexpr std::uint64_t gib = 1ULL << 30;

// The file system as the test says it is.
struct fake_disk {
    std::atomic<std::uint64_t> free_bytes{10 * gib};
    std::atomic<int> reads{0};

    adapters::embedded::disk_space_source source() {
        return [this](const std::filesystem::path&) -> result<disk_space> {
            ++reads;
            return disk_space{.total_bytes = 100 * gib, .free_bytes = free_bytes.load()};
        };
    }
};

// Bounded polling for a state the log's own thread reaches.
template <class Condition>
bool eventually(Condition condition, std::chrono::seconds limit = std::chrono::seconds(20)) {
    const auto deadline = std::chrono::steady_clock::now() + limit;
    while (std::chrono::steady_clock::now() < deadline) {
        if (condition()) {
            return true;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    return condition();
}

embedded_log_config watched(const std::filesystem::path& dir, fake_disk& disk) {
    auto config = small_log_config(dir);
    config.min_free_bytes = 1000;
    config.slow_free_bytes = 5000;
    config.disk_check_interval = std::chrono::milliseconds(0);  // read before every batch
    config.disk_space_for_test = disk.source();
    return config;
}

TEST(embedded_log_disk, below_the_minimum_produces_are_refused_until_space_returns) {
    temp_dir dir;
    fake_disk disk;
    auto log = open_log(watched(dir.path(), disk));
    ASSERT_NE(log, nullptr);
    ASSERT_TRUE(log->create_topic({.name = "t", .partitions = 1}));
    ASSERT_TRUE(produce_sync(*log, "t", "k", "before"));
    EXPECT_EQ(log->log_status().disk, disk_state::ok);
    EXPECT_EQ(log->log_status().space.free_bytes, 10 * gib);

    disk.free_bytes = 999;
    auto refused = produce_sync(*log, "t", "k", "refused");
    ASSERT_FALSE(refused);
    EXPECT_EQ(refused.error(), log_errc::disk_full);
    EXPECT_EQ(refused.error(), std::errc::no_space_on_device) << "the condition the broker maps";
    EXPECT_FALSE(log->healthy());
    auto status = log->log_status();
    EXPECT_EQ(status.disk, disk_state::refusing);
    EXPECT_EQ(status.space.free_bytes, 999u);
    EXPECT_EQ(status.disk_refused_records, 1u);
    EXPECT_FALSE(status.write_error) << "a refusal is not a write error";
    EXPECT_FALSE(produce_sync(*log, "t", "k", "refused-too"));
    EXPECT_EQ(log->log_status().disk_refused_records, 2u);
    // State (compacted) topics are still written from the reserve: clients can connect and
    // disconnect while publishes are refused.
    ASSERT_TRUE(log->create_topic({.name = "state", .partitions = 1, .compacted = true}));
    EXPECT_TRUE(produce_sync(*log, "state", "client-1", "session"));
    EXPECT_EQ(log->log_status().disk_refused_records, 2u);

    // Space comes back (retention ran, an operator cleaned up): no restart, the next produce is
    // written at the next offset.
    disk.free_bytes = 10 * gib;
    auto after = produce_sync(*log, "t", "k", "after");
    ASSERT_TRUE(after) << after.error().message();
    EXPECT_EQ(after->offset, 1);
    EXPECT_TRUE(log->healthy());
    EXPECT_EQ(log->log_status().disk, disk_state::ok);
    const auto records = read_partition(*log, {"t", 0});
    ASSERT_EQ(records.size(), 2u);
    EXPECT_EQ(records[1].value, "after");
}

// A full disk at start-up refuses from the first produce on.
TEST(embedded_log_disk, a_full_disk_at_open_refuses_at_once) {
    temp_dir dir;
    fake_disk disk;
    disk.free_bytes = 10;
    auto log = open_log(watched(dir.path(), disk));
    ASSERT_NE(log, nullptr);
    EXPECT_EQ(log->log_status().disk, disk_state::refusing);
    EXPECT_FALSE(log->healthy());
    ASSERT_TRUE(log->create_topic({.name = "t", .partitions = 1}));
    auto refused = produce_sync(*log, "t", "k", "v");
    ASSERT_FALSE(refused);
    EXPECT_EQ(refused.error(), std::errc::no_space_on_device);
}

// While idle, the writer reads the free space on its own every disk_check_interval, so the
// refusing state (and health) ends without any produce arriving.
TEST(embedded_log_disk, the_refusing_state_ends_without_traffic) {
    temp_dir dir;
    fake_disk disk;
    disk.free_bytes = 10;
    auto config = watched(dir.path(), disk);
    config.disk_check_interval = std::chrono::milliseconds(20);
    auto log = open_log(config);
    ASSERT_NE(log, nullptr);
    ASSERT_FALSE(log->healthy());
    disk.free_bytes = 10 * gib;
    EXPECT_TRUE(eventually([&] { return log->healthy(); }));
    EXPECT_EQ(log->log_status().disk, disk_state::ok);
}

// Between the two watermarks writes are paced at slow_write_rate: a batch of 32 KiB at 64 KiB/s
// holds the next batch back about half a second. Wall-clock, as the rate is what is tested.
TEST(embedded_log_disk, below_the_slow_threshold_writes_are_paced) {
    temp_dir dir;
    fake_disk disk;
    auto config = watched(dir.path(), disk);
    config.segment_bytes = 1 << 20;
    config.slow_write_rate = 64 * 1024;
    auto log = open_log(config);
    ASSERT_NE(log, nullptr);
    ASSERT_TRUE(log->create_topic({.name = "t", .partitions = 1}));
    disk.free_bytes = 3000;  // between min (1000) and slow (5000)
    ASSERT_TRUE(produce_sync(*log, "t", "k", std::string(32 * 1024, 'x')));
    EXPECT_EQ(log->log_status().disk, disk_state::slowed);
    EXPECT_TRUE(log->healthy()) << "slowed still serves";
    const auto start = std::chrono::steady_clock::now();
    ASSERT_TRUE(produce_sync(*log, "t", "k", "next"));
    const auto waited = std::chrono::steady_clock::now() - start;
    EXPECT_GE(waited, std::chrono::milliseconds(400));
    EXPECT_LT(waited, std::chrono::seconds(20));

    // Back above the threshold: no pacing.
    disk.free_bytes = 10 * gib;
    ASSERT_TRUE(produce_sync(*log, "t", "k", std::string(32 * 1024, 'y')));
    EXPECT_EQ(log->log_status().disk, disk_state::ok);
    const auto again = std::chrono::steady_clock::now();
    ASSERT_TRUE(produce_sync(*log, "t", "k", "fast"));
    EXPECT_LT(std::chrono::steady_clock::now() - again, std::chrono::milliseconds(400));
}

// A burst written between two readings counts against the last reading: crossing a watermark
// reads the file system at once rather than at the next interval.
TEST(embedded_log_disk, a_burst_that_may_cross_a_watermark_reads_the_space_at_once) {
    temp_dir dir;
    fake_disk disk;
    disk.free_bytes = 6000;  // 1000 above the slow threshold
    auto config = watched(dir.path(), disk);
    config.disk_check_interval = std::chrono::hours(1);
    auto log = open_log(config);
    ASSERT_NE(log, nullptr);
    ASSERT_TRUE(log->create_topic({.name = "t", .partitions = 1}));
    const int reads_at_open = disk.reads.load();
    ASSERT_TRUE(produce_sync(*log, "t", "k", "small"));
    EXPECT_EQ(disk.reads.load(), reads_at_open) << "nothing near a watermark yet";
    disk.free_bytes = 500;
    ASSERT_TRUE(produce_sync(*log, "t", "k", std::string(2000, 'x')));  // estimate below 5000
    auto refused = produce_sync(*log, "t", "k", "v");
    ASSERT_FALSE(refused);
    EXPECT_EQ(refused.error(), log_errc::disk_full);
    EXPECT_GT(disk.reads.load(), reads_at_open);
}

// msg.all and msg.persisted are created without a size bound; the log's default bounds them.
// Compacted topics (state) and topics with a bound of their own are left alone.
TEST(embedded_log_disk, topics_without_a_size_bound_get_the_default) {
    temp_dir dir;
    auto config = small_log_config(dir.path());  // 1 KiB segments
    config.default_retention_bytes = 2048;
    auto log = open_log(config);
    ASSERT_NE(log, nullptr);
    ASSERT_TRUE(log->create_topic({.name = "plain", .partitions = 1, .retention_ms = -1}));
    ASSERT_TRUE(log->create_topic({.name = "own", .partitions = 1, .retention_bytes = 8192}));
    ASSERT_TRUE(log->create_topic({.name = "state", .partitions = 1, .compacted = true}));
    for (int i = 0; i < 100; ++i) {  // ~14 KiB into each
        const auto key = "k" + std::to_string(i);
        ASSERT_TRUE(produce_sync(*log, "plain", key, std::string(100, 'p')));
        ASSERT_TRUE(produce_sync(*log, "own", key, std::string(100, 'o')));
        ASSERT_TRUE(produce_sync(*log, "state", key, std::string(100, 's')));
    }
    const auto plain_before = log->segment_count_for_test({"plain", 0});
    ASSERT_GT(plain_before, 10u);
    log->run_maintenance_for_test();
    // At most 2 KiB of closed segments stay, plus the active one.
    EXPECT_LE(log->segment_count_for_test({"plain", 0}), 4u);
    const auto plain = read_partition(*log, {"plain", 0}, 0);
    ASSERT_FALSE(plain.empty());
    EXPECT_GT(plain.front().offset, 0) << "the oldest records went";
    EXPECT_EQ(plain.back().offset, 99);
    // The topic's own bound (8 KiB) wins over the default.
    EXPECT_GE(log->segment_count_for_test({"own", 0}), 8u);
    // Compaction keeps every key of the state topic.
    EXPECT_EQ(read_partition(*log, {"state", 0}).size(), 100u);
}

}  // namespace
}  // namespace starling::testing
