// Several producer threads and a consumer group under churn, at once (labels unit and
// concurrency: the TSan build runs it). Every acknowledged record reaches some group member,
// each partition keeps each producer's order, and admin calls, wakeups and end_offset() from
// other threads interleave safely.

#include "unit/adapters/embedded_log/embedded_log_test_support.h"

#include <atomic>
#include <condition_variable>
#include <map>
#include <mutex>
#include <semaphore>
#include <set>
#include <thread>

namespace starling::testing {
namespace {

using namespace std::chrono_literals;

constexpr int producers = 4;
constexpr int per_producer = 2500;
constexpr int total = producers * per_producer;
constexpr std::int32_t partitions = 8;

struct shared_state {
    std::mutex mutex;
    std::condition_variable changed;
    std::set<std::pair<std::int32_t, std::int64_t>> acked;
    std::set<std::pair<std::int32_t, std::int64_t>> seen;
    std::atomic<bool> done{false};
};

// Polls as a member of group "g" until told to stop (or until `until_seen` records were seen by
// anyone, for the member that joins and leaves mid-run), committing after every poll.
void consume(message_log& log, shared_state& state, std::atomic<log_consumer*>* publish,
             std::size_t until_seen) {
    auto consumer = log.create_consumer([] {
        auto spec = subscription("g", {"t"});
        spec.max_poll_records = 64;
        return spec;
    }());
    ASSERT_TRUE(consumer) << consumer.error().message();
    if (publish != nullptr) {
        publish->store(consumer->get());
    }
    while (!state.done.load()) {
        auto records = (*consumer)->poll(20ms);
        ASSERT_TRUE(records) << records.error().message();
        std::map<std::int32_t, std::int64_t> next;
        for (const auto& record : *records) {
            auto [it, fresh] = next.emplace(record.partition, record.offset + 1);
            if (!fresh) {
                EXPECT_EQ(record.offset, it->second) << "a poll returns a partition in order";
                it->second = record.offset + 1;
            }
        }
        std::size_t seen = 0;
        {
            std::lock_guard lock(state.mutex);
            for (const auto& record : *records) {
                state.seen.emplace(record.partition, record.offset);
            }
            seen = state.seen.size();
        }
        state.changed.notify_all();
        std::vector<std::pair<topic_partition, std::int64_t>> commit;
        for (const auto& [partition, offset] : next) {
            commit.push_back({{"t", partition}, offset});
        }
        if (!commit.empty()) {
            // Fails with not_assigned when a rebalance moved the partition meanwhile: fine,
            // its new owner starts from the last successful commit (at-least-once).
            (void)(*consumer)->commit(commit);
        }
        if (seen >= until_seen) {
            break;
        }
    }
    if (publish != nullptr) {
        publish->store(nullptr);
    }
    (*consumer)->close();
}

TEST(embedded_log_concurrency, producers_and_a_churning_group_agree_on_every_record) {
    temp_dir dir;
    auto config = small_log_config(dir.path());
    config.segment_bytes = 32 * 1024;
    config.max_queued_records = 2048;
    auto log = open_log(config);
    ASSERT_NE(log, nullptr);
    ASSERT_TRUE(log->create_topic({.name = "t", .partitions = partitions}));
    shared_state state;

    std::atomic<log_consumer*> first{nullptr};
    std::vector<std::thread> consumers;
    consumers.emplace_back([&] { consume(*log, state, &first, SIZE_MAX); });
    for (int i = 0; i < 2; ++i) {
        consumers.emplace_back([&] { consume(*log, state, nullptr, SIZE_MAX); });
    }

    std::vector<std::thread> threads;
    for (int p = 0; p < producers; ++p) {
        threads.emplace_back([&, p] {
            std::counting_semaphore<256> window(256);  // in flight per producer, under the bound
            for (int i = 0; i < per_producer; ++i) {
                window.acquire();
                log->produce("t", "p" + std::to_string(p) + "-k" + std::to_string(i % 16),
                             std::to_string(p) + ":" + std::to_string(i), {},
                             [&state, &window](result<produce_ack> ack) {
                                 EXPECT_TRUE(ack) << ack.error().message();
                                 if (ack) {
                                     std::lock_guard lock(state.mutex);
                                     state.acked.emplace(ack->partition, ack->offset);
                                 }
                                 window.release();
                             });
            }
            ASSERT_TRUE(log->flush(60s));
        });
    }
    // A member that joins mid-run and leaves again: two rebalances under load.
    threads.emplace_back([&] {
        {
            std::unique_lock lock(state.mutex);
            state.changed.wait(lock, [&] { return state.seen.size() >= total / 4; });
        }
        consume(*log, state, nullptr, total / 2);
    });
    // Admin calls, wakeups and reads of the end offsets from yet another thread.
    threads.emplace_back([&] {
        for (int i = 0; i < 20; ++i) {
            const std::string name = "side-" + std::to_string(i);
            EXPECT_TRUE(log->create_topic({.name = name, .partitions = 2}));
            EXPECT_TRUE(produce_sync(*log, name, "k", "v"));
            EXPECT_TRUE(log->delete_topic(name));
            if (auto* consumer = first.load(); consumer != nullptr) {
                consumer->wakeup();
            }
            EXPECT_TRUE(log->partition_count("t"));
        }
    });
    for (auto& thread : threads) {
        thread.join();
    }
    {
        std::unique_lock lock(state.mutex);
        ASSERT_EQ(state.acked.size(), static_cast<std::size_t>(total));
        const bool all = state.changed.wait_for(lock, 120s, [&] {
            return std::includes(state.seen.begin(), state.seen.end(), state.acked.begin(),
                                 state.acked.end());
        });
        EXPECT_TRUE(all) << state.seen.size() << " of " << total << " seen";
    }
    state.done.store(true);
    for (auto& thread : consumers) {
        thread.join();
    }

    // Each partition holds each producer's records in the order it produced them.
    std::size_t records = 0;
    for (std::int32_t p = 0; p < partitions; ++p) {
        std::map<int, int> last;  // producer -> last sequence number
        for (const auto& record : read_partition(*log, {"t", p})) {
            const auto colon = record.value.find(':');
            const int producer = std::stoi(record.value.substr(0, colon));
            const int sequence = std::stoi(record.value.substr(colon + 1));
            auto [it, fresh] = last.emplace(producer, sequence);
            if (!fresh) {
                EXPECT_GT(sequence, it->second) << "partition " << p;
                it->second = sequence;
            }
            ++records;
        }
    }
    EXPECT_EQ(records, static_cast<std::size_t>(total));
}

}  // namespace
}  // namespace starling::testing
