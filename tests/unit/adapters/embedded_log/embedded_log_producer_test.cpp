// The embedded log's produce path: callbacks on the writer thread in produce order, a bounded
// queue that fails fast, I/O errors that fail their batch and clear when writes succeed again,
// stop() draining the queue.

#include "unit/adapters/embedded_log/embedded_log_test_support.h"

#include <atomic>
#include <future>
#include <mutex>
#include <thread>

namespace starling::testing {
namespace {

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

TEST(embedded_log_producer, callbacks_run_on_a_log_thread_in_produce_order) {
    temp_dir dir;
    auto log = open_log(small_log_config(dir.path()));
    ASSERT_NE(log, nullptr);
    ASSERT_TRUE(log->create_topic({.name = "t", .partitions = 4}));
    std::mutex mutex;
    std::vector<int> order;
    std::set<std::thread::id> threads;
    for (int i = 0; i < 1000; ++i) {
        log->produce("t", "k" + std::to_string(i), "v", {}, [&, i](result<produce_ack> ack) {
            EXPECT_TRUE(ack);
            std::lock_guard lock(mutex);
            order.push_back(i);
            threads.insert(std::this_thread::get_id());
        });
    }
    ASSERT_TRUE(log->flush(std::chrono::seconds(30)));
    std::lock_guard lock(mutex);
    ASSERT_EQ(order.size(), 1000u);
    EXPECT_TRUE(std::is_sorted(order.begin(), order.end()));
    ASSERT_EQ(threads.size(), 1u);
    EXPECT_NE(*threads.begin(), std::this_thread::get_id());
}

TEST(embedded_log_producer, a_full_queue_fails_fast_through_the_callback) {
    temp_dir dir;
    auto config = small_log_config(dir.path());
    config.max_queued_records = 4;
    auto log = open_log(config);
    ASSERT_NE(log, nullptr);
    ASSERT_TRUE(log->create_topic({.name = "t", .partitions = 1}));

    // Hold the writer thread inside the first callback, so the queue cannot drain.
    std::promise<void> entered;
    std::promise<void> release;
    auto released = release.get_future().share();
    log->produce("t", "k", "first", {}, [&entered, released](result<produce_ack>) {
        entered.set_value();
        released.wait();
    });
    entered.get_future().wait();

    std::vector<std::promise<result<produce_ack>>> outcomes(6);
    for (std::size_t i = 0; i < outcomes.size(); ++i) {
        // Returns at once even though nothing can be written now.
        log->produce("t", "k", "v" + std::to_string(i), {},
                     [&outcomes, i](result<produce_ack> ack) { outcomes[i].set_value(ack); });
    }
    EXPECT_EQ(log->queue_depth(), 4u);
    release.set_value();
    ASSERT_TRUE(log->flush(std::chrono::seconds(30)));
    EXPECT_EQ(log->queue_depth(), 0u);
    for (std::size_t i = 0; i < outcomes.size(); ++i) {
        auto ack = outcomes[i].get_future().get();
        if (i < 4) {
            ASSERT_TRUE(ack) << i << ": " << ack.error().message();
            EXPECT_EQ(ack->offset, static_cast<std::int64_t>(i) + 1);
        } else {
            ASSERT_FALSE(ack) << i;
            EXPECT_EQ(ack.error(), log_errc::queue_full);
            EXPECT_EQ(ack.error(), std::errc::resource_unavailable_try_again);
        }
    }
    // Nothing rejected was written.
    EXPECT_EQ(read_partition(*log, {"t", 0}).size(), 5u);
}

TEST(embedded_log_producer, a_write_error_fails_the_batch_and_the_log_recovers_when_it_clears) {
    temp_dir dir;
    // A space error is also cleared by a free-space reading with room: the file system says
    // it is full for as long as the injected ENOSPC lasts.
    std::atomic<std::uint64_t> free_bytes{0};
    auto config = small_log_config(dir.path());
    config.disk_space_for_test =
        [&](const std::filesystem::path&) -> result<adapters::embedded::disk_space> {
        return adapters::embedded::disk_space{.total_bytes = 1ULL << 30, .free_bytes = free_bytes};
    };
    auto log = open_log(config);
    ASSERT_NE(log, nullptr);
    ASSERT_TRUE(log->create_topic({.name = "t", .partitions = 1}));
    ASSERT_TRUE(produce_sync(*log, "t", "k", "before"));
    EXPECT_TRUE(log->healthy());

    log->inject_write_error_for_test(std::make_error_code(std::errc::no_space_on_device));
    auto failed = produce_sync(*log, "t", "k", "lost");
    ASSERT_FALSE(failed);
    EXPECT_EQ(failed.error(), std::errc::no_space_on_device);
    EXPECT_FALSE(log->healthy());
    EXPECT_EQ(log->log_status().write_error, std::errc::no_space_on_device);
    EXPECT_EQ(log->log_status().write_errors, 1u);
    auto again = produce_sync(*log, "t", "k", "still-lost");  // tried again, fails again
    ASSERT_FALSE(again);
    EXPECT_EQ(again.error(), std::errc::no_space_on_device);

    EXPECT_FALSE(log->healthy()) << "the file system still reads full";

    // The disk has room again: the next produce is written, no restart needed, and the offsets
    // continue right after the last acknowledged record.
    log->inject_write_error_for_test({});
    free_bytes = 1ULL << 30;
    auto after = produce_sync(*log, "t", "k", "after");
    ASSERT_TRUE(after) << after.error().message();
    EXPECT_EQ(after->offset, 1);
    EXPECT_TRUE(log->healthy());
    EXPECT_FALSE(log->log_status().write_error);

    const auto records = read_partition(*log, {"t", 0});
    ASSERT_EQ(records.size(), 2u);
    EXPECT_EQ(records[0].value, "before");
    EXPECT_EQ(records[1].value, "after");
}

// Health follows the partition that failed: a write that succeeds elsewhere (a page the log
// already holds on a full disk) does not hide it; its own next write, or a free-space reading
// with room when the error was ENOSPC, ends it.
TEST(embedded_log_producer, health_stays_down_until_the_failed_partition_can_write) {
    temp_dir dir;
    std::atomic<std::uint64_t> free_bytes{0};
    auto config = small_log_config(dir.path());
    config.disk_check_interval = std::chrono::milliseconds(20);
    config.disk_space_for_test =
        [&](const std::filesystem::path&) -> result<adapters::embedded::disk_space> {
        return adapters::embedded::disk_space{.total_bytes = 1ULL << 30, .free_bytes = free_bytes};
    };
    auto log = open_log(config);
    ASSERT_NE(log, nullptr);
    ASSERT_TRUE(log->create_topic({.name = "t", .partitions = 2}));
    log->inject_write_error_for_test(std::make_error_code(std::errc::no_space_on_device));
    ASSERT_FALSE(produce_sync(*log, "t", "k", "lost", 0));
    log->inject_write_error_for_test({});
    ASSERT_TRUE(produce_sync(*log, "t", "k", "other-partition", 1));
    EXPECT_FALSE(log->healthy()) << "partition 0 has not written since it failed";
    EXPECT_EQ(log->log_status().write_error, std::errc::no_space_on_device);
    // Room on the file system: the writer's own reading ends it, no traffic to partition 0.
    free_bytes = 1ULL << 30;
    EXPECT_TRUE(eventually([&] { return log->healthy(); }));
    EXPECT_FALSE(log->log_status().write_error);
    auto next = produce_sync(*log, "t", "k", "after", 0);
    ASSERT_TRUE(next);
    EXPECT_EQ(next->offset, 0) << "the failed record took no offset";
}

// A failed batch that had rolled to a new segment leaves no trace: the segment it created is
// gone and the next records go where their offsets belong, so they are read back (now and
// after a restart) in order with none missing.
TEST(embedded_log_producer, a_failed_batch_that_rolled_a_segment_is_undone) {
    temp_dir dir;
    const auto config = small_log_config(dir.path());  // 1 KiB segments
    {
        auto log = open_log(config);
        ASSERT_NE(log, nullptr);
        ASSERT_TRUE(log->create_topic({.name = "t", .partitions = 1}));
        ASSERT_TRUE(produce_sync(*log, "t", "k", "v0"));
        log->inject_write_error_for_test(std::make_error_code(std::errc::io_error));
        std::atomic<int> failures{0};
        for (int i = 0; i < 20; ++i) {  // ~2.5 KiB: the batch rolls at least once
            log->produce("t", "k", std::string(100, 'x'), {}, [&](result<produce_ack> ack) {
                if (!ack) {
                    ++failures;
                }
            });
        }
        ASSERT_TRUE(log->flush(std::chrono::seconds(30)));
        EXPECT_EQ(failures.load(), 20);
        EXPECT_EQ(segment_files(dir.path(), "t", 0).size(), 1u) << "the rolled segment stayed";
        log->inject_write_error_for_test({});
        for (int i = 1; i <= 20; ++i) {
            auto ack = produce_sync(*log, "t", "k", "v" + std::to_string(i));
            ASSERT_TRUE(ack);
            EXPECT_EQ(ack->offset, i);
        }
        const auto records = read_partition(*log, {"t", 0});
        ASSERT_EQ(records.size(), 21u);
        for (int i = 0; i <= 20; ++i) {
            EXPECT_EQ(records[static_cast<std::size_t>(i)].value, "v" + std::to_string(i));
        }
    }
    auto log = open_log(config);
    ASSERT_NE(log, nullptr);
    const auto records = read_partition(*log, {"t", 0});
    ASSERT_EQ(records.size(), 21u);
    for (int i = 0; i <= 20; ++i) {
        EXPECT_EQ(records[static_cast<std::size_t>(i)].offset, i);
        EXPECT_EQ(records[static_cast<std::size_t>(i)].value, "v" + std::to_string(i));
    }
}

TEST(embedded_log_producer, bad_requests_fail_through_the_callback) {
    temp_dir dir;
    auto config = small_log_config(dir.path());
    config.max_record_bytes = 1024;
    auto log = open_log(config);
    ASSERT_NE(log, nullptr);
    ASSERT_TRUE(log->create_topic({.name = "t", .partitions = 2}));
    auto big = produce_sync(*log, "t", "k", std::string(2000, 'x'));
    ASSERT_FALSE(big);
    EXPECT_EQ(big.error(), std::errc::message_size);
    auto unknown = produce_sync(*log, "nope", "k", "v");
    ASSERT_FALSE(unknown);
    EXPECT_EQ(unknown.error(), log_errc::unknown_topic);
    auto partition = produce_sync(*log, "t", "k", "v", 2);
    ASSERT_FALSE(partition);
    EXPECT_EQ(partition.error(), log_errc::unknown_partition);
}

TEST(embedded_log_producer, flush_inside_a_callback_refuses_instead_of_deadlocking) {
    temp_dir dir;
    auto log = open_log(small_log_config(dir.path()));
    ASSERT_NE(log, nullptr);
    ASSERT_TRUE(log->create_topic({.name = "t", .partitions = 1}));
    auto inner = await<status>([&](auto done) {
        log->produce("t", "k", "v", {},
                     [&, done](result<produce_ack>) { done(log->flush(std::chrono::seconds(5))); });
    });
    ASSERT_FALSE(inner);
    EXPECT_EQ(inner.error(), log_errc::would_deadlock);
}

TEST(embedded_log_producer, stop_runs_every_queued_callback_and_later_produces_fail) {
    temp_dir dir;
    auto log = open_log(small_log_config(dir.path()));
    ASSERT_NE(log, nullptr);
    ASSERT_TRUE(log->create_topic({.name = "t", .partitions = 3}));
    std::atomic<int> acked{0};
    std::atomic<int> calls{0};
    for (int i = 0; i < 5000; ++i) {
        log->produce("t", "k" + std::to_string(i), "v", {}, [&](result<produce_ack> ack) {
            calls.fetch_add(1);
            if (ack) {
                acked.fetch_add(1);
            }
        });
    }
    log->stop();
    EXPECT_EQ(calls.load(), 5000);
    EXPECT_EQ(acked.load(), 5000);
    bool ran = false;
    log->produce("t", "k", "late", {}, [&](result<produce_ack> ack) {
        ran = true;
        ASSERT_FALSE(ack);
        EXPECT_EQ(ack.error(), log_errc::stopped);
    });
    EXPECT_TRUE(ran) << "after stop() the callback runs on the caller's thread";
    log->stop();  // idempotent
}

TEST(embedded_log_producer, every_fsync_policy_acknowledges_and_persists) {
    for (auto policy : {fsync_policy::none, fsync_policy::interval, fsync_policy::always}) {
        temp_dir dir;
        auto config = small_log_config(dir.path());
        config.fsync = policy;
        config.fsync_interval = std::chrono::milliseconds(5);
        {
            auto log = open_log(config);
            ASSERT_NE(log, nullptr);
            ASSERT_TRUE(log->create_topic({.name = "t", .partitions = 2}));
            for (int i = 0; i < 100; ++i) {
                log->produce("t", "k" + std::to_string(i), "v", {},
                             [](result<produce_ack> ack) { ASSERT_TRUE(ack); });
            }
            ASSERT_TRUE(log->flush(std::chrono::seconds(30)));
        }
        auto log = open_log(config);
        ASSERT_NE(log, nullptr);
        EXPECT_EQ(read_partition(*log, {"t", 0}).size() + read_partition(*log, {"t", 1}).size(),
                  100u);
    }
}

TEST(embedded_log_producer, parse_fsync_policy_names) {
    using adapters::embedded::parse_fsync_policy;
    EXPECT_EQ(parse_fsync_policy("none").value(), fsync_policy::none);
    EXPECT_EQ(parse_fsync_policy("interval").value(), fsync_policy::interval);
    EXPECT_EQ(parse_fsync_policy("always").value(), fsync_policy::always);
    EXPECT_FALSE(parse_fsync_policy("sometimes"));
}

}  // namespace
}  // namespace starling::testing
