// Retention, compaction and topic deletion of the embedded log, driven through the
// run_maintenance_for_test() hook with a manual clock.

#include "unit/adapters/embedded_log/embedded_log_test_support.h"

#include <map>

namespace starling::testing {
namespace {

using namespace std::chrono_literals;

std::string filler(int i) { return "value-" + std::to_string(i) + std::string(60, '.'); }

TEST(embedded_log_retention, deletes_segments_older_than_retention_ms_but_not_the_active_one) {
    temp_dir dir;
    manual_clock clk;
    auto config = small_log_config(dir.path());
    config.time_source = &clk;
    config.segment_ms = 30s;  // the first record after the jump starts a new segment
    auto log = open_log(config);
    ASSERT_NE(log, nullptr);
    ASSERT_TRUE(log->create_topic({.name = "t", .partitions = 1, .retention_ms = 60000}));
    for (int i = 0; i < 100; ++i) {
        ASSERT_TRUE(produce_sync(*log, "t", "k", filler(i)));
    }
    const std::size_t old_segments = segment_files(dir.path(), "t", 0).size();
    ASSERT_GT(old_segments, 3u);

    log->run_maintenance_for_test();  // nothing is old yet
    EXPECT_EQ(segment_files(dir.path(), "t", 0).size(), old_segments);

    clk.advance(2min);
    ASSERT_TRUE(produce_sync(*log, "t", "k", "fresh"));
    log->run_maintenance_for_test();
    EXPECT_EQ(segment_files(dir.path(), "t", 0).size(), 1u);
    EXPECT_EQ(log->segment_count_for_test({"t", 0}), 1u);

    // A consumer starting at 0 is below the log start now: it resets to the earliest record.
    const auto records = read_partition(*log, {"t", 0});
    ASSERT_EQ(records.size(), 1u);
    EXPECT_EQ(records[0].offset, 100);
    EXPECT_EQ(records[0].value, "fresh");

    // The active segment is never deleted, however old.
    clk.advance(10min);
    log->run_maintenance_for_test();
    EXPECT_EQ(read_partition(*log, {"t", 0}).size(), 1u);
}

TEST(embedded_log_retention, keeps_the_partition_near_retention_bytes) {
    temp_dir dir;
    auto log = open_log(small_log_config(dir.path()));
    ASSERT_NE(log, nullptr);
    ASSERT_TRUE(log->create_topic({.name = "t", .partitions = 1, .retention_bytes = 3000}));
    for (int i = 0; i < 200; ++i) {
        ASSERT_TRUE(produce_sync(*log, "t", "k", filler(i)));
    }
    log->run_maintenance_for_test();
    const auto files = segment_files(dir.path(), "t", 0);
    std::uintmax_t total = 0;
    for (const auto& file : files) {
        total += std::filesystem::file_size(file);
    }
    // Without its oldest segment the partition would be under the limit.
    EXPECT_LT(total - std::filesystem::file_size(files.front()), 3000u);
    EXPECT_GE(total, 3000u);
    const auto records = read_partition(*log, {"t", 0});
    ASSERT_FALSE(records.empty());
    EXPECT_GT(records.front().offset, 0);
    EXPECT_EQ(records.back().offset, 199);
    EXPECT_EQ(records.back().value, filler(199));
}

TEST(embedded_log_compaction, keeps_offsets_drops_superseded_records_and_merges_segments) {
    temp_dir dir;
    auto log = open_log(small_log_config(dir.path()));
    ASSERT_NE(log, nullptr);
    ASSERT_TRUE(log->create_topic({.name = "s", .partitions = 1, .compacted = true}));
    std::map<std::string, std::int64_t> last_offset;
    for (int i = 0; i < 300; ++i) {
        const std::string key = "client-" + std::to_string(i % 7);
        auto ack = produce_sync(*log, "s", key, filler(i));
        ASSERT_TRUE(ack);
        last_offset[key] = ack->offset;
    }
    const std::size_t before = segment_files(dir.path(), "s", 0).size();
    log->run_maintenance_for_test();
    const std::size_t after = segment_files(dir.path(), "s", 0).size();
    EXPECT_LT(after, before);

    const auto records = read_partition(*log, {"s", 0});
    // Closed segments hold one record per key now; the active segment is untouched.
    EXPECT_LT(records.size(), 7u + 20u);
    std::map<std::string, const log_record*> last;
    for (const auto& record : records) {
        last[record.key] = &record;
    }
    ASSERT_EQ(last.size(), 7u);
    for (const auto& [key, offset] : last_offset) {
        ASSERT_NE(last[key], nullptr);
        EXPECT_EQ(last[key]->offset, offset) << key;
        EXPECT_EQ(last[key]->value, filler(static_cast<int>(offset))) << key;
    }

    // A restart reads the compacted files back the same way, and appends continue.
    log.reset();
    log = open_log(small_log_config(dir.path()));
    ASSERT_NE(log, nullptr);
    EXPECT_EQ(read_partition(*log, {"s", 0}).size(), records.size());
    auto next = produce_sync(*log, "s", "client-0", "new");
    ASSERT_TRUE(next);
    EXPECT_EQ(next->offset, 300);
}

TEST(embedded_log_compaction, tombstones_go_after_the_grace_period) {
    temp_dir dir;
    manual_clock clk;
    auto config = small_log_config(dir.path());
    config.time_source = &clk;
    config.tombstone_retention = 1h;
    auto log = open_log(config);
    ASSERT_NE(log, nullptr);
    ASSERT_TRUE(log->create_topic({.name = "s", .partitions = 1, .compacted = true}));
    ASSERT_TRUE(produce_sync(*log, "s", "gone", "value"));
    ASSERT_TRUE(produce_sync(*log, "s", "gone", ""));
    ASSERT_TRUE(produce_sync(*log, "s", "kept", "value"));
    for (int i = 0; i < 40; ++i) {
        ASSERT_TRUE(produce_sync(*log, "s", "filler-" + std::to_string(i % 3), filler(i)));
    }

    auto keys = [&] {
        std::map<std::string, std::string> out;
        for (const auto& record : read_partition(*log, {"s", 0})) {
            out[record.key] = record.value;
        }
        return out;
    };
    log->run_maintenance_for_test();
    auto seen = keys();
    ASSERT_EQ(seen.count("gone"), 1u) << "the tombstone stays during the grace period";
    EXPECT_EQ(seen["gone"], "");
    EXPECT_EQ(seen["kept"], "value");

    clk.advance(2h);
    log->run_maintenance_for_test();
    seen = keys();
    EXPECT_EQ(seen.count("gone"), 0u);
    EXPECT_EQ(seen["kept"], "value");
}

TEST(embedded_log_topics, delete_topic_removes_its_files_and_committed_offsets) {
    temp_dir dir;
    auto log = open_log(small_log_config(dir.path()));
    ASSERT_NE(log, nullptr);
    ASSERT_TRUE(log->create_topic({.name = "t", .partitions = 2}));
    ASSERT_TRUE(produce_sync(*log, "t", "k", "v", 0));
    {
        auto consumer = log->create_consumer(manual({{"t", 0}}, "g"));
        ASSERT_TRUE(consumer);
        ASSERT_TRUE((*consumer)->commit({{{"t", 0}, 1}}));
    }
    ASSERT_TRUE(log->delete_topic("t"));
    EXPECT_FALSE(std::filesystem::exists(dir.path() / "log" / "topics" / "t"));
    EXPECT_TRUE(std::filesystem::is_empty(dir.path() / "log" / "trash"));
    auto again = log->delete_topic("t");
    ASSERT_FALSE(again);
    EXPECT_EQ(again.error(), std::errc::no_such_file_or_directory);

    // Recreated, the topic starts empty and the group's old commit is gone.
    ASSERT_TRUE(log->create_topic({.name = "t", .partitions = 1}));
    ASSERT_TRUE(produce_sync(*log, "t", "k", "new"));
    auto consumer = log->create_consumer(manual({{"t", 0}}, "g"));
    ASSERT_TRUE(consumer);
    auto records = (*consumer)->poll(std::chrono::seconds(10));
    ASSERT_TRUE(records);
    ASSERT_EQ(records->size(), 1u);
    EXPECT_EQ((*records)[0].offset, 0);
    EXPECT_EQ((*records)[0].value, "new");
}

}  // namespace
}  // namespace starling::testing
