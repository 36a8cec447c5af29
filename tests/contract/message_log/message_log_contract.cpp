#include "contract/message_log/message_log_contract.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <functional>
#include <future>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <thread>

namespace starling::testing {

// ---------------------------------------------------------------------------------------------
// Fixture

void message_log_contract::SetUp() {
    if (const auto why = GetParam()->unavailable(); !why.empty()) {
        GTEST_SKIP() << why;
    }
    backend_ = GetParam()->new_backend();
    ASSERT_NE(backend_, nullptr);
    log_ = backend_->open();
    ASSERT_NE(log_, nullptr);
}

void message_log_contract::TearDown() {
    log_.reset();
    backend_.reset();
}

void message_log_contract::restart() {
    log_.reset();
    log_ = backend_->open();
    ASSERT_NE(log_, nullptr);
}

void message_log_contract::create(const std::string& topic, std::int32_t partitions,
                                  bool compacted) {
    auto created =
        log_->create_topic({.name = topic, .partitions = partitions, .compacted = compacted});
    ASSERT_TRUE(created) << created.error().message();
}

result<produce_ack> message_log_contract::produce_sync(const std::string& topic, std::string key,
                                                       std::string value,
                                                       std::vector<log_header> headers,
                                                       std::int32_t partition) {
    return await<result<produce_ack>>([&](auto done) {
        log_->produce(topic, std::move(key), std::move(value), std::move(headers), std::move(done),
                      partition);
    });
}

std::vector<produce_ack> message_log_contract::produce_all(
    const std::string& topic, const std::vector<std::pair<std::string, std::string>>& kv) {
    struct slots {
        std::mutex mutex;
        std::vector<std::optional<result<produce_ack>>> acks;
    };
    auto state = std::make_shared<slots>();
    state->acks.resize(kv.size());
    for (std::size_t i = 0; i < kv.size(); ++i) {
        log_->produce(topic, kv[i].first, kv[i].second, {}, [state, i](result<produce_ack> ack) {
            std::lock_guard lock(state->mutex);
            state->acks[i] = ack;
        });
    }
    auto flushed = log_->flush(deadline);
    EXPECT_TRUE(flushed) << flushed.error().message();
    std::vector<produce_ack> out;
    std::lock_guard lock(state->mutex);
    for (std::size_t i = 0; i < kv.size(); ++i) {
        if (!state->acks[i].has_value()) {
            ADD_FAILURE() << "callback " << i << " did not run before flush() returned";
            continue;
        }
        if (!*state->acks[i]) {
            ADD_FAILURE() << "produce " << i << " failed: " << state->acks[i]->error().message();
            continue;
        }
        out.push_back(**state->acks[i]);
    }
    return out;
}

std::unique_ptr<log_consumer> message_log_contract::subscribe(const std::string& group,
                                                              std::vector<std::string> topics,
                                                              offset_reset reset,
                                                              std::string instance_id) {
    consumer_spec spec;
    spec.group_id = group;
    spec.instance_id = std::move(instance_id);
    spec.topics = std::move(topics);
    spec.reset = reset;
    auto consumer = log_->create_consumer(spec);
    EXPECT_TRUE(consumer) << consumer.error().message();
    return consumer ? std::move(*consumer) : nullptr;
}

std::unique_ptr<log_consumer> message_log_contract::assign(const std::string& group,
                                                           std::vector<topic_partition> partitions,
                                                           offset_reset reset) {
    consumer_spec spec;
    spec.group_id = group;
    spec.assignment = std::move(partitions);
    spec.reset = reset;
    auto consumer = log_->create_consumer(spec);
    EXPECT_TRUE(consumer) << consumer.error().message();
    return consumer ? std::move(*consumer) : nullptr;
}

std::vector<log_record> message_log_contract::poll_n(log_consumer& consumer, std::size_t count,
                                                     std::chrono::milliseconds limit) {
    std::vector<log_record> out;
    const auto until = std::chrono::steady_clock::now() + limit;
    while (out.size() < count && std::chrono::steady_clock::now() < until) {
        auto records = consumer.poll(std::chrono::milliseconds(100));
        if (!records) {
            ADD_FAILURE() << "poll: " << records.error().message();
            break;
        }
        for (auto& record : *records) {
            out.push_back(std::move(record));
        }
    }
    return out;
}

bool message_log_contract::poll_until(const std::vector<log_consumer*>& consumers,
                                      const std::function<bool()>& done,
                                      std::chrono::milliseconds limit) {
    const auto until = std::chrono::steady_clock::now() + limit;
    while (!done()) {
        if (std::chrono::steady_clock::now() >= until) {
            return false;
        }
        for (auto* consumer : consumers) {
            (void)consumer->poll(std::chrono::milliseconds(20));
        }
    }
    return true;
}

namespace {

std::vector<std::pair<std::string, std::string>> numbered(std::size_t n, std::size_t keys,
                                                          const std::string& prefix = "v") {
    std::vector<std::pair<std::string, std::string>> kv;
    for (std::size_t i = 0; i < n; ++i) {
        kv.emplace_back("key-" + std::to_string(i % keys), prefix + std::to_string(i));
    }
    return kv;
}

std::set<topic_partition> as_set(const std::vector<topic_partition>& tps) {
    return {tps.begin(), tps.end()};
}

std::set<topic_partition> all_partitions(const std::string& topic, std::int32_t count) {
    std::set<topic_partition> out;
    for (std::int32_t p = 0; p < count; ++p) {
        out.insert({topic, p});
    }
    return out;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Produce and consume

TEST_P(message_log_contract, acks_give_dense_offsets_and_consumers_see_produce_order) {
    const auto topic = name("orders");
    create(topic, 3);
    const auto kv = numbered(300, 10);
    const auto acks = produce_all(topic, kv);
    ASSERT_EQ(acks.size(), kv.size());

    // Per partition, acks carry offsets 0, 1, 2, ... in produce order.
    std::map<std::int32_t, std::vector<std::size_t>> produced;  // partition -> kv indexes
    for (std::size_t i = 0; i < acks.size(); ++i) {
        auto& list = produced[acks[i].partition];
        EXPECT_EQ(acks[i].offset, static_cast<std::int64_t>(list.size()));
        list.push_back(i);
    }

    auto consumer = subscribe(name("g"), {topic});
    ASSERT_NE(consumer, nullptr);
    const auto records = poll_n(*consumer, kv.size());
    ASSERT_EQ(records.size(), kv.size());
    std::map<std::int32_t, std::vector<const log_record*>> consumed;
    for (const auto& record : records) {
        EXPECT_EQ(record.topic, topic);
        consumed[record.partition].push_back(&record);
    }
    for (const auto& [partition, indexes] : produced) {
        ASSERT_EQ(consumed[partition].size(), indexes.size()) << "partition " << partition;
        for (std::size_t n = 0; n < indexes.size(); ++n) {
            const log_record& record = *consumed[partition][n];
            EXPECT_EQ(record.offset, static_cast<std::int64_t>(n));
            EXPECT_EQ(record.key, kv[indexes[n]].first);
            EXPECT_EQ(record.value, kv[indexes[n]].second);
        }
    }
}

TEST_P(message_log_contract, same_key_same_partition_as_partition_for_key) {
    const auto topic = name("keys");
    create(topic, 8);
    for (int i = 0; i < 20; ++i) {
        const std::string key = "client-" + std::to_string(i);
        auto first = produce_sync(topic, key, "a");
        auto second = produce_sync(topic, key, "b");
        ASSERT_TRUE(first && second);
        EXPECT_EQ(first->partition, partition_for_key(key, 8)) << key;
        EXPECT_EQ(second->partition, first->partition) << key;
        EXPECT_EQ(second->offset, first->offset + 1) << key;
    }
}

TEST_P(message_log_contract, explicit_partition_is_used_and_a_bad_one_fails) {
    const auto topic = name("explicit");
    create(topic, 4);
    auto ack = produce_sync(topic, "k", "v", {}, 2);
    ASSERT_TRUE(ack) << ack.error().message();
    EXPECT_EQ(ack->partition, 2);
    EXPECT_FALSE(produce_sync(topic, "k", "v", {}, 99));
}

TEST_P(message_log_contract, produce_to_an_unknown_topic_fails) {
    EXPECT_FALSE(produce_sync(name("missing"), "k", "v"));
}

TEST_P(message_log_contract, headers_timestamps_and_binary_bytes_round_trip) {
    const auto topic = name("headers");
    create(topic, 1);
    const std::string key("k\0ey", 4);
    const std::string value("\x00\xff\x01 value", 9);
    const std::vector<log_header> headers{{"content-type", "application/octet-stream"},
                                          {"dup", "1"},
                                          {"dup", "2"},
                                          {"empty", ""},
                                          {std::string("bin\0", 4), std::string("\xfe\x00", 2)}};
    const auto before = std::chrono::duration_cast<std::chrono::milliseconds>(
                            std::chrono::system_clock::now().time_since_epoch())
                            .count();
    ASSERT_TRUE(produce_sync(topic, key, value, headers));
    const auto after = std::chrono::duration_cast<std::chrono::milliseconds>(
                           std::chrono::system_clock::now().time_since_epoch())
                           .count();
    auto consumer = assign(name("g"), {{topic, 0}});
    ASSERT_NE(consumer, nullptr);
    const auto records = poll_n(*consumer, 1);
    ASSERT_EQ(records.size(), 1u);
    EXPECT_EQ(records[0].key, key);
    EXPECT_EQ(records[0].value, value);
    EXPECT_EQ(records[0].headers, headers);
    EXPECT_GE(records[0].timestamp_ms, before);
    EXPECT_LE(records[0].timestamp_ms, after);
}

TEST_P(message_log_contract, flush_waits_for_every_callback) {
    const auto topic = name("flush");
    create(topic, 4);
    auto done = std::make_shared<std::atomic<int>>(0);
    constexpr int count = 2000;
    for (int i = 0; i < count; ++i) {
        log_->produce(topic, "k" + std::to_string(i), std::string(100, 'x'), {},
                      [done](result<produce_ack> ack) {
                          if (ack) {
                              done->fetch_add(1);
                          }
                      });
    }
    auto flushed = log_->flush(deadline);
    ASSERT_TRUE(flushed) << flushed.error().message();
    EXPECT_EQ(done->load(), count);
}

TEST_P(message_log_contract, end_offset_is_the_next_offset_to_be_written) {
    const auto topic = name("end");
    create(topic, 2);
    auto consumer = assign(name("g"), {{topic, 0}, {topic, 1}});
    ASSERT_NE(consumer, nullptr);
    auto empty = consumer->end_offset({topic, 1});
    ASSERT_TRUE(empty);
    EXPECT_EQ(*empty, 0);
    for (int i = 0; i < 3; ++i) {
        ASSERT_TRUE(produce_sync(topic, "k", "v", {}, 1));
    }
    auto end = consumer->end_offset({topic, 1});
    ASSERT_TRUE(end);
    EXPECT_EQ(*end, 3);
    auto other = consumer->end_offset({topic, 0});
    ASSERT_TRUE(other);
    EXPECT_EQ(*other, 0);
}

TEST_P(message_log_contract, poll_returns_empty_after_the_timeout) {
    const auto topic = name("idle");
    create(topic, 1);
    auto consumer = assign(name("g"), {{topic, 0}});
    ASSERT_NE(consumer, nullptr);
    auto records = consumer->poll(std::chrono::milliseconds(50));
    ASSERT_TRUE(records);
    EXPECT_TRUE(records->empty());
}

TEST_P(message_log_contract, blocked_poll_returns_a_record_produced_meanwhile) {
    const auto topic = name("live");
    create(topic, 1);
    auto consumer = assign(name("g"), {{topic, 0}});
    ASSERT_NE(consumer, nullptr);
    auto polled = std::async(std::launch::async,
                             [&] { return poll_n(*consumer, 1, std::chrono::seconds(30)); });
    ASSERT_TRUE(produce_sync(topic, "k", "late"));
    const auto records = polled.get();
    ASSERT_EQ(records.size(), 1u);
    EXPECT_EQ(records[0].value, "late");
}

TEST_P(message_log_contract, wakeup_unblocks_poll) {
    const auto topic = name("wake");
    create(topic, 1);
    auto consumer = assign(name("g"), {{topic, 0}});
    ASSERT_NE(consumer, nullptr);
    auto polled =
        std::async(std::launch::async, [&] { return consumer->poll(std::chrono::minutes(5)); });
    // wakeup() before the poll blocks also counts: the next poll returns at once.
    consumer->wakeup();
    ASSERT_EQ(polled.wait_for(std::chrono::seconds(30)), std::future_status::ready);
    auto records = polled.get();
    if (records) {
        EXPECT_TRUE(records->empty());
    }
}

// ---------------------------------------------------------------------------------------------
// Ready callback: a consumer polled only when its callback fired (poll(0), no waiting) still
// joins its group, gets its partitions and reads every record — what the broker's consumer pool
// relies on to serve many consumers from a few threads.

namespace {

struct ready_signal {
    std::mutex mutex;
    std::condition_variable cv;
    std::uint64_t calls = 0;

    std::function<void()> callback() {
        return [this] {
            {
                std::lock_guard lock(mutex);
                ++calls;
            }
            cv.notify_all();
        };
    }
    std::uint64_t count() {
        std::lock_guard lock(mutex);
        return calls;
    }
    bool wait_beyond(std::uint64_t seen, std::chrono::steady_clock::time_point until) {
        std::unique_lock lock(mutex);
        return cv.wait_until(lock, until, [&] { return calls > seen; });
    }
};

// Polls without waiting, once now and then only after a callback (or at once after a full
// poll, as the contract says), until `done` holds. False when no callback came in time.
bool drive_by_callback(log_consumer& consumer, ready_signal& signal, std::size_t max_records,
                       std::vector<log_record>& out, const std::function<bool()>& done) {
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    for (;;) {
        const std::uint64_t seen = signal.count();  // before the poll: a call during it counts
        auto polled = consumer.poll(std::chrono::milliseconds(0));
        const bool full = polled && polled->size() >= max_records;
        if (polled) {
            for (auto& r : *polled) {
                out.push_back(std::move(r));
            }
        }
        if (done()) {
            return true;
        }
        if (!full && !signal.wait_beyond(seen, until)) {
            return false;
        }
    }
}

}  // namespace

TEST_P(message_log_contract, a_consumer_polled_only_on_its_ready_callback_joins_and_reads_all) {
    const auto topic = name("ready");
    create(topic, 2);
    consumer_spec spec;
    spec.group_id = name("ready-group");
    spec.topics = {topic};
    spec.max_poll_records = 7;  // several full polls per burst below
    auto created = log_->create_consumer(spec);
    ASSERT_TRUE(created) << created.error().message();
    auto& consumer = **created;
    ready_signal signal;
    ASSERT_TRUE(consumer.set_ready_callback(signal.callback()));

    std::vector<log_record> read;
    // The group assignment arrives through the callback too.
    ASSERT_TRUE(drive_by_callback(consumer, signal, 7, read, [&] {
        return consumer.assignment().size() == 2;
    })) << "assignment never arrived through the ready callback";
    // One record at a time: each must bring its own callback (edge-triggered, re-armed by the
    // poll that emptied the queue).
    const auto in_time = [] { return std::chrono::steady_clock::now() + std::chrono::seconds(60); };
    for (int i = 0; i < 10; ++i) {
        const std::uint64_t seen = signal.count();
        ASSERT_TRUE(produce_sync(topic, "k" + std::to_string(i), "one-" + std::to_string(i)));
        ASSERT_TRUE(signal.wait_beyond(seen, in_time())) << "record " << i << ": no callback";
        const std::size_t want = read.size() + 1;
        ASSERT_TRUE(
            drive_by_callback(consumer, signal, 7, read, [&] { return read.size() >= want; }))
            << "record " << i << " not read";
    }
    // A burst larger than one poll: the polls that stop at max_poll_records leave the rest.
    const std::uint64_t seen = signal.count();
    produce_all(topic, numbered(50, 5, "burst-"));
    ASSERT_TRUE(signal.wait_beyond(seen, in_time())) << "burst: no callback";
    ASSERT_TRUE(drive_by_callback(consumer, signal, 7, read, [&] { return read.size() >= 60; }))
        << read.size() << " of 60 read";
    EXPECT_EQ(read.size(), 60U);
    consumer.close();
}

TEST_P(message_log_contract, a_removed_ready_callback_is_not_called_again) {
    const auto topic = name("ready-off");
    create(topic, 1);
    auto consumer = assign(name("ready-off-group"), {{topic, 0}});
    ASSERT_NE(consumer, nullptr);
    ready_signal signal;
    ASSERT_TRUE(consumer->set_ready_callback(signal.callback()));
    std::vector<log_record> read;
    const std::uint64_t seen = signal.count();
    ASSERT_TRUE(produce_sync(topic, "k", "before"));
    ASSERT_TRUE(
        signal.wait_beyond(seen, std::chrono::steady_clock::now() + std::chrono::seconds(60)));
    ASSERT_TRUE(drive_by_callback(*consumer, signal, 500, read, [&] { return !read.empty(); }));

    ASSERT_TRUE(consumer->set_ready_callback({}));
    const std::uint64_t calls = signal.count();
    ASSERT_TRUE(produce_sync(topic, "k", "after"));
    // The record reached the consumer (a blocking poll returns it) without a call.
    const auto after = poll_n(*consumer, 1, std::chrono::seconds(30));
    ASSERT_EQ(after.size(), 1U);
    EXPECT_EQ(after[0].value, "after");
    consumer->wakeup();
    EXPECT_EQ(signal.count(), calls);
}

// ---------------------------------------------------------------------------------------------
// Consumer groups

TEST_P(message_log_contract, group_members_split_partitions_and_a_leaver_hands_them_over) {
    const auto topic = name("split");
    create(topic, 4);
    const auto group = name("workers");
    auto first = subscribe(group, {topic});
    ASSERT_NE(first, nullptr);
    ASSERT_TRUE(poll_until({first.get()}, [&] { return first->assignment().size() == 4; }));

    auto second = subscribe(group, {topic});
    ASSERT_NE(second, nullptr);
    const bool split = poll_until({first.get(), second.get()}, [&] {
        const auto a = as_set(first->assignment());
        const auto b = as_set(second->assignment());
        if (a.empty() || b.empty() || a.size() + b.size() != 4) {
            return false;
        }
        std::set<topic_partition> both = a;
        both.insert(b.begin(), b.end());
        return both == all_partitions(topic, 4);
    });
    ASSERT_TRUE(split) << first->assignment().size() << " + " << second->assignment().size();

    second->close();
    ASSERT_TRUE(poll_until(
        {first.get()}, [&] { return as_set(first->assignment()) == all_partitions(topic, 4); }));
    // The survivor now reads every partition.
    const auto acks = produce_all(topic, numbered(40, 40));
    std::set<std::int32_t> partitions;
    for (const auto& ack : acks) {
        partitions.insert(ack.partition);
    }
    ASSERT_EQ(partitions.size(), 4u);
    EXPECT_EQ(poll_n(*first, 40).size(), 40u);
}

// A member that commits each batch before its next poll hands partitions over without any record
// read twice: records it gathered for a partition revoked during that poll are not returned (the
// next owner reads them from the committed offset). A joiner and a leaver meet a steady stream.
TEST_P(message_log_contract, a_member_joining_and_leaving_mid_stream_reads_no_record_twice) {
    const auto topic = name("handover");
    create(topic, 4);
    const auto group = name("g");

    std::mutex seen_mutex;
    std::map<std::string, int> seen;  // value -> times returned by any member
    std::atomic<std::size_t> consumed{0};
    auto consume_until = [&](log_consumer& consumer, const std::atomic<bool>& stop) {
        while (!stop.load()) {
            auto records = consumer.poll(std::chrono::milliseconds(20));
            ASSERT_TRUE(records) << records.error().message();
            std::map<topic_partition, std::int64_t> next;
            {
                std::lock_guard lock(seen_mutex);
                for (const auto& r : *records) {
                    ++seen[r.value];
                    next[topic_partition{r.topic, r.partition}] = r.offset + 1;
                }
            }
            consumed += records->size();
            // A commit refused during a rebalance is the adapter's to make before the revoke.
            (void)consumer.commit({next.begin(), next.end()});
        }
    };
    std::size_t produced = 0;
    auto produce_chunk = [&](std::size_t n) {
        ASSERT_EQ(produce_all(topic, numbered(n, 16, "v" + std::to_string(produced) + "-")).size(),
                  n);
        produced += n;
    };
    auto caught_up = [&] {
        const auto until = std::chrono::steady_clock::now() + deadline;
        while (consumed.load() < produced && std::chrono::steady_clock::now() < until) {
            std::this_thread::yield();
        }
        return consumed.load() >= produced;
    };

    auto first = subscribe(group, {topic});
    ASSERT_NE(first, nullptr);
    std::atomic<bool> stop_first{false};
    std::thread first_thread([&] { consume_until(*first, stop_first); });

    produce_chunk(200);
    ASSERT_TRUE(caught_up());

    auto second = subscribe(group, {topic});
    ASSERT_NE(second, nullptr);
    std::atomic<bool> stop_second{false};
    std::thread second_thread([&] { consume_until(*second, stop_second); });
    // Keep records flowing while the group moves partitions to the joiner.
    const auto until = std::chrono::steady_clock::now() + deadline;
    while (second->assignment().empty() && std::chrono::steady_clock::now() < until) {
        produce_chunk(20);
    }
    produce_chunk(200);
    ASSERT_TRUE(caught_up());

    stop_second = true;
    second_thread.join();
    second->close();  // leaves: its partitions move back to the first member
    for (int i = 0; i < 20; ++i) {
        produce_chunk(20);
    }
    ASSERT_TRUE(caught_up());
    stop_first = true;
    first_thread.join();

    std::lock_guard lock(seen_mutex);
    EXPECT_EQ(seen.size(), produced) << "every record read";
    for (const auto& [value, times] : seen) {
        EXPECT_EQ(times, 1) << value << " read " << times << " times";
    }
}

TEST_P(message_log_contract, new_member_resumes_from_the_committed_offset) {
    const auto topic = name("resume");
    create(topic, 1);
    const auto group = name("g");
    ASSERT_EQ(produce_all(topic, numbered(10, 1)).size(), 10u);
    {
        auto consumer = subscribe(group, {topic});
        ASSERT_NE(consumer, nullptr);
        ASSERT_EQ(poll_n(*consumer, 10).size(), 10u);
        auto committed = consumer->commit({{{topic, 0}, 6}});
        ASSERT_TRUE(committed) << committed.error().message();
        consumer->close();
    }
    auto consumer = subscribe(group, {topic});
    ASSERT_NE(consumer, nullptr);
    const auto records = poll_n(*consumer, 4);
    ASSERT_EQ(records.size(), 4u);
    EXPECT_EQ(records.front().offset, 6);
    EXPECT_EQ(records.front().value, "v6");
}

TEST_P(message_log_contract, reset_policy_applies_without_a_commit) {
    const auto topic = name("reset");
    create(topic, 1);
    ASSERT_EQ(produce_all(topic, numbered(5, 1)).size(), 5u);

    auto earliest = subscribe(name("from-start"), {topic}, offset_reset::earliest);
    ASSERT_NE(earliest, nullptr);
    const auto all = poll_n(*earliest, 5);
    ASSERT_EQ(all.size(), 5u);
    EXPECT_EQ(all.front().offset, 0);

    auto latest = subscribe(name("from-end"), {topic}, offset_reset::latest);
    ASSERT_NE(latest, nullptr);
    ASSERT_TRUE(poll_until({latest.get()}, [&] { return latest->assignment().size() == 1; }));
    auto nothing = latest->poll(std::chrono::milliseconds(200));
    ASSERT_TRUE(nothing);
    EXPECT_TRUE(nothing->empty());
    ASSERT_TRUE(produce_sync(topic, "k", "new"));
    const auto fresh = poll_n(*latest, 1);
    ASSERT_EQ(fresh.size(), 1u);
    EXPECT_EQ(fresh[0].offset, 5);
    EXPECT_EQ(fresh[0].value, "new");
}

TEST_P(message_log_contract, static_member_gets_its_partitions_back) {
    const auto topic = name("static");
    create(topic, 6);
    const auto group = name("g");
    auto a = subscribe(group, {topic}, offset_reset::earliest, "member-a");
    auto b = subscribe(group, {topic}, offset_reset::earliest, "member-b");
    ASSERT_TRUE(a && b);
    ASSERT_TRUE(poll_until({a.get(), b.get()}, [&] {
        return a->assignment().size() + b->assignment().size() == 6 && !a->assignment().empty() &&
               !b->assignment().empty();
    }));
    const auto before = as_set(b->assignment());
    b->close();
    b = subscribe(group, {topic}, offset_reset::earliest, "member-b");
    ASSERT_NE(b, nullptr);
    EXPECT_TRUE(poll_until({a.get(), b.get()}, [&] { return as_set(b->assignment()) == before; }));
}

TEST_P(message_log_contract, manual_assignment_reads_only_the_named_partitions) {
    const auto topic = name("manual");
    create(topic, 3);
    for (std::int32_t p = 0; p < 3; ++p) {
        ASSERT_TRUE(produce_sync(topic, "k", "p" + std::to_string(p), {}, p));
    }
    auto consumer = assign(name("g"), {{topic, 1}});
    ASSERT_NE(consumer, nullptr);
    EXPECT_EQ(consumer->assignment(), (std::vector<topic_partition>{{topic, 1}}));
    const auto records = poll_n(*consumer, 1);
    ASSERT_EQ(records.size(), 1u);
    EXPECT_EQ(records[0].partition, 1);
    EXPECT_EQ(records[0].value, "p1");
    auto more = consumer->poll(std::chrono::milliseconds(100));
    ASSERT_TRUE(more);
    EXPECT_TRUE(more->empty());
}

TEST_P(message_log_contract, manual_consumer_starts_from_its_group_commit) {
    const auto topic = name("manual-commit");
    create(topic, 1);
    ASSERT_EQ(produce_all(topic, numbered(5, 1)).size(), 5u);
    const auto group = name("g");
    {
        auto consumer = assign(group, {{topic, 0}});
        ASSERT_NE(consumer, nullptr);
        ASSERT_TRUE(consumer->commit({{{topic, 0}, 3}}));
    }
    auto consumer = assign(group, {{topic, 0}});
    ASSERT_NE(consumer, nullptr);
    const auto records = poll_n(*consumer, 2);
    ASSERT_EQ(records.size(), 2u);
    EXPECT_EQ(records[0].offset, 3);
}

TEST_P(message_log_contract, seek_moves_the_position) {
    const auto topic = name("seek");
    create(topic, 1);
    ASSERT_EQ(produce_all(topic, numbered(10, 1)).size(), 10u);
    auto consumer = assign(name("g"), {{topic, 0}});
    ASSERT_NE(consumer, nullptr);
    ASSERT_TRUE(consumer->seek({topic, 0}, 7));
    auto tail = poll_n(*consumer, 3);
    ASSERT_EQ(tail.size(), 3u);
    EXPECT_EQ(tail[0].offset, 7);
    EXPECT_EQ(tail[2].offset, 9);
    ASSERT_TRUE(consumer->seek({topic, 0}, 2));
    auto again = poll_n(*consumer, 8);
    ASSERT_EQ(again.size(), 8u);
    EXPECT_EQ(again[0].offset, 2);
    EXPECT_EQ(again[0].value, "v2");
}

TEST_P(message_log_contract, paused_partitions_deliver_nothing_until_resumed) {
    const auto topic = name("pause");
    create(topic, 2);
    auto consumer = assign(name("g"), {{topic, 0}, {topic, 1}});
    ASSERT_NE(consumer, nullptr);
    consumer->pause({{topic, 0}});
    ASSERT_TRUE(produce_sync(topic, "k", "zero", {}, 0));
    ASSERT_TRUE(produce_sync(topic, "k", "one", {}, 1));
    auto records = poll_n(*consumer, 1);
    ASSERT_EQ(records.size(), 1u);
    EXPECT_EQ(records[0].partition, 1);
    auto nothing = consumer->poll(std::chrono::milliseconds(200));
    ASSERT_TRUE(nothing);
    EXPECT_TRUE(nothing->empty());
    consumer->resume({{topic, 0}});
    records = poll_n(*consumer, 1);
    ASSERT_EQ(records.size(), 1u);
    EXPECT_EQ(records[0].partition, 0);
    EXPECT_EQ(records[0].value, "zero");
}

// ---------------------------------------------------------------------------------------------
// Topic admin, compaction, restart

TEST_P(message_log_contract, create_topic_is_idempotent_and_keeps_the_partition_count) {
    const auto topic = name("idem");
    create(topic, 3);
    auto again = log_->create_topic({.name = topic, .partitions = 5});
    ASSERT_TRUE(again) << again.error().message();
    auto count = log_->partition_count(topic);
    ASSERT_TRUE(count);
    EXPECT_EQ(*count, 3);
    EXPECT_FALSE(log_->partition_count(name("never-created")));
}

TEST_P(message_log_contract, delete_topic_removes_it) {
    const auto topic = name("doomed");
    create(topic, 2);
    ASSERT_TRUE(produce_sync(topic, "k", "v"));
    auto deleted = log_->delete_topic(topic);
    ASSERT_TRUE(deleted) << deleted.error().message();
    EXPECT_FALSE(log_->partition_count(topic));
    EXPECT_FALSE(produce_sync(topic, "k", "v"));
    // A topic created again under the name starts empty.
    create(topic, 1);
    auto consumer = assign(name("g"), {{topic, 0}});
    ASSERT_NE(consumer, nullptr);
    auto end = consumer->end_offset({topic, 0});
    ASSERT_TRUE(end);
    EXPECT_EQ(*end, 0);
}

TEST_P(message_log_contract, compacted_topic_keeps_the_last_value_per_key) {
    const auto topic = name("state");
    create(topic, 1, true);
    ASSERT_TRUE(produce_sync(topic, "k1", "k1-old"));
    ASSERT_TRUE(produce_sync(topic, "k2", "k2-old"));
    ASSERT_TRUE(produce_sync(topic, "k3", "k3-only"));
    auto k1_new = produce_sync(topic, "k1", "k1-new");
    ASSERT_TRUE(k1_new);
    ASSERT_TRUE(produce_sync(topic, "k2", ""));  // tombstone
    // Filler moves the records above out of the active segment (small segments in tests).
    ASSERT_EQ(produce_all(topic, numbered(200, 20, "filler")).size(), 200u);
    const bool compacted = backend_->compact_now(*log_);

    auto consumer = subscribe(name("reader"), {topic});
    ASSERT_NE(consumer, nullptr);
    auto end = consumer->end_offset({topic, 0});
    ASSERT_TRUE(end);
    std::map<std::string, log_record> last;
    std::vector<log_record> all;
    const auto until = std::chrono::steady_clock::now() + deadline;
    std::int64_t next = 0;
    while (next < *end && std::chrono::steady_clock::now() < until) {
        auto records = consumer->poll(std::chrono::milliseconds(100));
        ASSERT_TRUE(records);
        for (auto& record : *records) {
            EXPECT_GE(record.offset, next) << "offsets go forward";
            next = record.offset + 1;
            last[record.key] = record;
            all.push_back(std::move(record));
        }
    }
    ASSERT_EQ(next, *end);
    EXPECT_EQ(last["k1"].value, "k1-new");
    EXPECT_EQ(last["k1"].offset, k1_new->offset) << "compaction keeps offsets";
    EXPECT_EQ(last["k3"].value, "k3-only");
    if (last.count("k2") != 0) {
        EXPECT_EQ(last["k2"].value, "") << "the tombstone, if kept, is the last k2";
    }
    if (compacted) {
        for (const auto& record : all) {
            EXPECT_NE(record.value, "k1-old");
            EXPECT_NE(record.value, "k2-old");
        }
        EXPECT_LT(all.size(), 205u);
    }
}

TEST_P(message_log_contract, records_and_commits_survive_a_restart) {
    const auto topic = name("durable");
    create(topic, 2);
    for (int i = 0; i < 50; ++i) {
        auto ack = produce_sync(topic, "k", "v" + std::to_string(i), {}, i % 2);
        ASSERT_TRUE(ack) << ack.error().message();
        ASSERT_EQ(ack->offset, i / 2);
    }
    const auto group = name("g");
    {
        auto consumer = assign(group, {{topic, 0}, {topic, 1}});
        ASSERT_NE(consumer, nullptr);
        ASSERT_TRUE(consumer->commit({{{topic, 0}, 1}, {{topic, 1}, 2}}));
    }
    restart();
    auto count = log_->partition_count(topic);
    ASSERT_TRUE(count);
    EXPECT_EQ(*count, 2);
    // Everything from the commits on comes back, in order.
    auto consumer = assign(group, {{topic, 0}, {topic, 1}});
    ASSERT_NE(consumer, nullptr);
    const auto records = poll_n(*consumer, 24 + 23);
    ASSERT_EQ(records.size(), 47u);
    std::map<std::int32_t, std::vector<std::int64_t>> offsets;
    for (const auto& record : records) {
        offsets[record.partition].push_back(record.offset);
        EXPECT_EQ(record.value, "v" + std::to_string(record.offset * 2 + record.partition));
    }
    ASSERT_EQ(offsets[0].size(), 24u);
    ASSERT_EQ(offsets[1].size(), 23u);
    EXPECT_EQ(offsets[0].front(), 1);
    EXPECT_EQ(offsets[1].front(), 2);
    EXPECT_TRUE(std::is_sorted(offsets[0].begin(), offsets[0].end()));
    EXPECT_TRUE(std::is_sorted(offsets[1].begin(), offsets[1].end()));
    // New produces continue the offsets.
    auto next = produce_sync(topic, "k", "after-restart", {}, 1);
    ASSERT_TRUE(next);
    EXPECT_EQ(next->offset, 25);
}

}  // namespace starling::testing
