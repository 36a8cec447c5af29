// A consumer loop whose poll keeps failing (a fatal Kafka error, a closed consumer) must wait
// between tries, longer each time, and stop at once when asked — not spin a core writing a log
// line per turn. app_consumer stands for the broker's log consumer loops here: it is the one
// built on the message_log port alone, so a fake log can make every poll fail.

#include "broker/application_delivery.h"

#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <vector>

namespace starling::broker {
namespace {

using namespace std::chrono_literals;
using clock_type = std::chrono::steady_clock;

// Records when each poll happened; every poll fails.
struct poll_journal {
    std::mutex mutex;
    std::condition_variable changed;
    std::vector<clock_type::time_point> polls;

    bool wait_for_polls(std::size_t n, std::chrono::seconds timeout) {
        std::unique_lock lock(mutex);
        return changed.wait_for(lock, timeout, [&] { return polls.size() >= n; });
    }
    std::vector<clock_type::time_point> snapshot() {
        std::lock_guard lock(mutex);
        return polls;
    }
};

class failing_consumer final : public log_consumer {
  public:
    explicit failing_consumer(poll_journal& journal) : journal_(journal) {}
    result<std::vector<log_record>> poll(std::chrono::milliseconds) override {
        std::lock_guard lock(journal_.mutex);
        journal_.polls.push_back(clock_type::now());
        journal_.changed.notify_all();
        return std::make_error_code(std::errc::io_error);
    }
    status commit(const std::vector<std::pair<topic_partition, std::int64_t>>&) override {
        return {};
    }
    status seek(const topic_partition&, std::int64_t) override { return {}; }
    void pause(const std::vector<topic_partition>&) override {}
    void resume(const std::vector<topic_partition>&) override {}
    std::vector<topic_partition> assignment() const override { return {}; }
    result<std::int64_t> end_offset(const topic_partition&) override { return 0; }
    void wakeup() override {}
    void close() override {}

  private:
    poll_journal& journal_;
};

class failing_log final : public message_log {
  public:
    poll_journal journal;

    status create_topic(const topic_spec&) override { return {}; }
    status delete_topic(std::string_view) override { return {}; }
    result<std::int32_t> partition_count(std::string_view) override { return 1; }
    void produce(std::string_view, std::string, std::string, std::vector<log_header>,
                 produce_callback done, std::int32_t) override {
        done(std::make_error_code(std::errc::io_error));
    }
    result<std::unique_ptr<log_consumer>> create_consumer(const consumer_spec&) override {
        return std::unique_ptr<log_consumer>(std::make_unique<failing_consumer>(journal));
    }
    status flush(std::chrono::milliseconds) override { return {}; }
    bool healthy() const override { return false; }
};

TEST(consumer_retry, a_poll_that_keeps_failing_is_retried_after_growing_waits) {
    failing_log log;
    consumer_pool pool("test-pool", 2);
    app_consumer consumer(pool, log,
                          {.topic = "t", .group = "g", .prepare = [] { return status{}; }}, [] {});
    consumer.start();
    // 100 + 200 + 400 ms of waiting between the first and the fourth poll.
    ASSERT_TRUE(log.journal.wait_for_polls(4, 30s));
    const auto polls = log.journal.snapshot();
    auto wait = 100ms;
    for (std::size_t i = 1; i < 4; ++i, wait *= 2) {
        EXPECT_GE(polls[i] - polls[i - 1], wait) << "retry " << i << " came too soon";
    }
    // The fifth try is 800 ms away (a loop that spun would have polled thousands of times by
    // now); stop() ends the wait and joins.
    consumer.stop();
    EXPECT_LE(log.journal.snapshot().size(), 5U);
}

}  // namespace
}  // namespace starling::broker
