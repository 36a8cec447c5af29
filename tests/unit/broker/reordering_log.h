#pragma once

// reordering_log: a message_log decorator whose produce acknowledgements for one topic can be
// held and then released in an order the test chooses. The embedded log acknowledges in the
// order it was given records; Kafka need not (records of one PUBLISH burst go to different
// partitions, each acknowledged on its own). A broker test that claims "whatever order the log
// acknowledges in" uses this to make that order something else.
//
// It can also hold the records of one topic back from the log (hold_records): a record that
// the log has not yet given to its consumers, as when routing lags behind the PUBLISH.
//
// Everything else is passed through. While nothing is held it is invisible. flush() releases
// whatever is held (in arrival order) before flushing the log below, so a node stopping over a
// test that forgot to release still drains.
//
// Thread-safety: produce() may be called from any thread (actors); the acknowledgements of
// held records run on the thread that calls release()/flush().

#include "starling/message_log.h"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <mutex>
#include <random>
#include <string>
#include <utility>
#include <vector>

namespace starling::testing {

class reordering_log final : public message_log {
  public:
    explicit reordering_log(message_log& inner) : inner_(inner) {}

    // From now on, acknowledgements of produce() to `topic` are held until released.
    void hold(std::string topic) {
        std::lock_guard lock(mutex_);
        held_topic_ = std::move(topic);
    }

    // From now on, records produced to `topic` are held back from the log itself (no consumer
    // sees them, nothing acknowledges them) until release_records() writes them, in order.
    void hold_records(std::string topic) {
        std::lock_guard lock(mutex_);
        records_topic_ = std::move(topic);
    }
    bool wait_records_held(std::size_t n, std::chrono::milliseconds timeout) {
        std::unique_lock lock(mutex_);
        return changed_.wait_for(lock, timeout, [&] { return held_records_.size() >= n; });
    }
    // Stops holding records and writes the held ones in the order they came.
    void release_records() {
        std::vector<held_record> records;
        {
            std::lock_guard lock(mutex_);
            records_topic_.clear();
            records = std::exchange(held_records_, {});
        }
        for (auto& r : records) {
            produce(r.topic, std::move(r.key), std::move(r.value), std::move(r.headers),
                    std::move(r.done), r.partition);
        }
    }

    // Waits until `n` acknowledgements are held; false on timeout.
    bool wait_held(std::size_t n, std::chrono::milliseconds timeout) {
        std::unique_lock lock(mutex_);
        return changed_.wait_for(lock, timeout, [&] { return held_.size() >= n; });
    }

    // Stops holding, then runs the held acknowledgements in a seeded random order.
    void release_shuffled(std::uint32_t seed) {
        auto held = take_held();
        std::mt19937 rng(seed);
        std::shuffle(held.begin(), held.end(), rng);
        run(held);
    }

    // Stops holding, then runs the held acknowledgements last first.
    void release_reversed() {
        auto held = take_held();
        std::reverse(held.begin(), held.end());
        run(held);
    }

    status create_topic(const topic_spec& spec) override { return inner_.create_topic(spec); }
    status delete_topic(std::string_view name) override { return inner_.delete_topic(name); }
    result<std::int32_t> partition_count(std::string_view topic) override {
        return inner_.partition_count(topic);
    }

    void produce(std::string_view topic, std::string key, std::string value,
                 std::vector<log_header> headers, produce_callback done,
                 std::int32_t partition = -1) override {
        bool hold_this = false;
        {
            std::lock_guard lock(mutex_);
            if (!records_topic_.empty() && topic == records_topic_) {
                held_records_.push_back(held_record{std::string(topic), std::move(key),
                                                    std::move(value), std::move(headers),
                                                    std::move(done), partition});
                changed_.notify_all();
                return;
            }
            hold_this = !held_topic_.empty() && topic == held_topic_;
        }
        if (!hold_this) {
            inner_.produce(topic, std::move(key), std::move(value), std::move(headers),
                           std::move(done), partition);
            return;
        }
        inner_.produce(
            topic, std::move(key), std::move(value), std::move(headers),
            [this, done = std::move(done)](result<produce_ack> r) mutable {
                std::lock_guard lock(mutex_);
                held_.push_back(held_ack{std::move(done), std::move(r)});
                changed_.notify_all();
            },
            partition);
    }

    result<std::unique_ptr<log_consumer>> create_consumer(const consumer_spec& spec) override {
        return inner_.create_consumer(spec);
    }

    status flush(std::chrono::milliseconds timeout) override {
        release_records();
        run(take_held());
        auto st = inner_.flush(timeout);
        run(take_held());  // held while the log below flushed
        return st;
    }

    bool healthy() const override { return inner_.healthy(); }

  private:
    struct held_record {
        std::string topic;
        std::string key;
        std::string value;
        std::vector<log_header> headers;
        produce_callback done;
        std::int32_t partition;
    };
    struct held_ack {
        produce_callback done;
        result<produce_ack> outcome;
    };

    std::vector<held_ack> take_held() {
        std::lock_guard lock(mutex_);
        held_topic_.clear();
        return std::exchange(held_, {});
    }

    static void run(std::vector<held_ack>& acks) {
        for (auto& a : acks) {
            a.done(std::move(a.outcome));
        }
    }
    static void run(std::vector<held_ack>&& acks) { run(acks); }

    message_log& inner_;
    std::mutex mutex_;
    std::condition_variable changed_;
    std::string held_topic_;
    std::vector<held_ack> held_;
    std::string records_topic_;
    std::vector<held_record> held_records_;
};

}  // namespace starling::testing
