// stats_history: the sampler's arithmetic, and the recorder driven by a manual clock against a
// store that records (and can hold) its calls.

#include "broker/stats_history.h"

#include "support/manual_clock.h"
#include <gtest/gtest.h>

#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>

namespace starling::broker {
namespace {

using namespace std::chrono_literals;

std::int64_t value_of(const std::vector<stats_point>& points, std::string_view key) {
    for (const auto& p : points) {
        if (p.key == key) {
            return p.value;
        }
    }
    ADD_FAILURE() << "no point for " << key;
    return -1;
}

TEST(stats_sampler, counters_become_changes_and_gauges_stay_as_read) {
    stats_sampler sampler("node-1");
    auto first = sampler.sample(60000, {.incoming_msgs = 10,
                                        .outgoing_msgs = 30,
                                        .dropped_msgs = 2,
                                        .sessions = 4,
                                        .subscriptions = 7,
                                        .retained_msgs = 1});
    ASSERT_EQ(first.size(), stats_keys.size());
    for (const auto& p : first) {
        EXPECT_EQ(p.entity_id, "node-1");
        EXPECT_EQ(p.ts_ms, 60000);
        EXPECT_TRUE(stats_key_to_id(p.key)) << p.key;
    }
    EXPECT_EQ(value_of(first, "incomingMsgs"), 10);  // counted from the process's start
    EXPECT_EQ(value_of(first, "outgoingMsgs"), 30);
    EXPECT_EQ(value_of(first, "droppedMsgs"), 2);
    EXPECT_EQ(value_of(first, "sessions"), 4);

    auto second = sampler.sample(120000, {.incoming_msgs = 15,
                                          .outgoing_msgs = 30,
                                          .dropped_msgs = 9,
                                          .sessions = 3,
                                          .subscriptions = 8,
                                          .retained_msgs = 0});
    EXPECT_EQ(value_of(second, "incomingMsgs"), 5);
    EXPECT_EQ(value_of(second, "outgoingMsgs"), 0);
    EXPECT_EQ(value_of(second, "droppedMsgs"), 7);
    EXPECT_EQ(value_of(second, "sessions"), 3);
    EXPECT_EQ(value_of(second, "subscriptions"), 8);
    EXPECT_EQ(value_of(second, "retainedMsgs"), 0);
}

TEST(stats_sampler, a_counter_that_went_backwards_is_taken_as_restarted) {
    stats_sampler sampler("n");
    sampler.sample(0, {.incoming_msgs = 100});
    auto points = sampler.sample(60000, {.incoming_msgs = 4});
    EXPECT_EQ(value_of(points, "incomingMsgs"), 4);
}

// Records the recorder's calls; save_stats completions can be held back to model a slow store.
class recording_store final : public metadata_store {
  public:
    void save_stats(std::vector<stats_point> points, done_callback done) override {
        std::unique_lock lock(mutex_);
        if (hold_) {
            saves_.push_back(std::move(points));
            held_.push_back(std::move(done));
            changed_.notify_all();
            return;
        }
        // Completed before it is recorded: a waiter that sees the save sees its completion too.
        lock.unlock();
        done({});
        lock.lock();
        saves_.push_back(std::move(points));
        changed_.notify_all();
    }
    void delete_stats_before(std::int64_t ts_ms, callback<std::size_t> done) override {
        {
            std::lock_guard lock(mutex_);
            sweeps_.push_back(ts_ms);
            changed_.notify_all();
        }
        done(std::size_t{0});
    }

    void hold(bool on) {
        std::lock_guard lock(mutex_);
        hold_ = on;
    }
    void release_held() {
        std::vector<done_callback> held;
        {
            std::lock_guard lock(mutex_);
            held.swap(held_);
        }
        for (auto& done : held) {
            done({});
        }
    }
    // Blocks until `n` saves were made (bounded: a broken recorder fails, it does not hang).
    std::vector<std::vector<stats_point>> wait_for_saves(std::size_t n) {
        std::unique_lock lock(mutex_);
        EXPECT_TRUE(changed_.wait_for(lock, 10s, [&] { return saves_.size() >= n; }))
            << "saves: " << saves_.size();
        return saves_;
    }
    std::vector<std::int64_t> wait_for_sweeps(std::size_t n) {
        std::unique_lock lock(mutex_);
        EXPECT_TRUE(changed_.wait_for(lock, 10s, [&] { return sweeps_.size() >= n; }));
        return sweeps_;
    }

    // Not used by the recorder.
    void save_credentials(client_credentials, done_callback done) override { done(unused()); }
    void delete_credentials(std::string, done_callback done) override { done(unused()); }
    void find_credentials(std::vector<std::string>,
                          callback<std::vector<client_credentials>> done) override {
        done(unused());
    }
    void list_credentials(std::size_t, std::size_t,
                          callback<std::vector<client_credentials>> done) override {
        done(unused());
    }
    void count_credentials(callback<std::size_t> done) override { done(unused()); }
    void save_session_context(session_context, done_callback done) override { done(unused()); }
    void load_session_context(std::string, callback<std::optional<session_context>> done) override {
        done(unused());
    }
    void delete_session_context(std::string, done_callback done) override { done(unused()); }
    void save_application_context(application_session_context, done_callback done) override {
        done(unused());
    }
    void load_application_context(
        std::string, callback<std::optional<application_session_context>> done) override {
        done(unused());
    }
    void delete_application_context(std::string, done_callback done) override { done(unused()); }
    void save_application_shared_subscription(application_shared_subscription,
                                              done_callback done) override {
        done(unused());
    }
    void find_application_shared_subscription(
        std::string, callback<std::optional<application_shared_subscription>> done) override {
        done(unused());
    }
    void list_application_shared_subscriptions(
        callback<std::vector<application_shared_subscription>> done) override {
        done(unused());
    }
    void delete_application_shared_subscription(std::string, callback<bool> done) override {
        done({boost::system::in_place_error, unused()});
    }
    void save_integration(integration_row, done_callback done) override { done(unused()); }
    void list_integrations(callback<std::vector<integration_row>> done) override { done(unused()); }
    void delete_integration(std::string, callback<bool> done) override {
        done({boost::system::in_place_error, unused()});
    }
    void record_unauthorized(unauthorized_client, done_callback done) override { done(unused()); }
    void list_unauthorized(unauthorized_query, callback<unauthorized_page> done) override {
        done(unused());
    }
    void find_unauthorized(std::string,
                           callback<std::optional<unauthorized_client>> done) override {
        done(unused());
    }
    void delete_unauthorized(std::string, callback<bool> done) override {
        done({boost::system::in_place_error, unused()});
    }
    void clear_unauthorized(callback<std::size_t> done) override { done(unused()); }
    void read_stats(stats_query, callback<std::vector<stats_point>> done) override {
        done(unused());
    }
    void put_setting(std::string, std::string, done_callback done) override { done(unused()); }
    void get_setting(std::string, callback<std::optional<std::string>> done) override {
        done(unused());
    }
    bool healthy() const override { return true; }

  private:
    static std::error_code unused() {
        ADD_FAILURE() << "the recorder called a store method it has no use for";
        return make_error_code(std::errc::operation_not_supported);
    }

    std::mutex mutex_;
    std::condition_variable changed_;
    bool hold_ = false;
    std::vector<std::vector<stats_point>> saves_;
    std::vector<done_callback> held_;
    std::vector<std::int64_t> sweeps_;
};

class stats_recorder_test : public ::testing::Test {
  protected:
    void SetUp() override { timers_.start(); }
    void TearDown() override {
        recorder_.stop();
        timers_.stop();
    }

    // Moves the clock to the next interval boundary (plus `past`) and lets the timer fire.
    // Called once the previous tick's effect was seen; that tick re-arms right after, and the
    // clock must not move before it has (the new timer would aim one interval further).
    void advance_to_next_boundary(std::chrono::milliseconds past = 0ms) {
        const auto deadline = std::chrono::steady_clock::now() + 10s;
        while (timers_.pending() == 0 && std::chrono::steady_clock::now() < deadline) {
            std::this_thread::yield();
        }
        ASSERT_EQ(timers_.pending(), 1U) << "the recorder did not re-arm";
        const std::int64_t now = clock_.epoch_ms();
        const std::int64_t boundary = (now / interval_ms + 1) * interval_ms;
        clock_.advance(std::chrono::milliseconds(boundary - now) + past);
        timers_.poke();
    }

    static constexpr std::int64_t interval_ms = 60000;
    testing::manual_clock clock_;
    actor::timer_service timers_{"stats-test", clock_};
    recording_store store_;
    std::atomic<std::uint64_t> incoming_{0};
    std::atomic<std::int64_t> sessions_{0};
    stats_recorder recorder_{{.node_id = "node-7",
                              .interval = std::chrono::milliseconds(interval_ms),
                              .retention = 7 * 24h,
                              .sweep_every = 1h},
                             store_,
                             timers_,
                             clock_,
                             [this] {
                                 return stats_reading{.incoming_msgs = incoming_.load(),
                                                      .sessions = sessions_.load()};
                             }};
};

TEST_F(stats_recorder_test, writes_each_interval_stamped_with_its_aligned_start) {
    recorder_.start();
    incoming_ = 12;
    sessions_ = 3;
    advance_to_next_boundary();
    auto saves = store_.wait_for_saves(1);
    ASSERT_EQ(saves.size(), 1U);
    const std::int64_t first_ts = saves[0].front().ts_ms;
    EXPECT_EQ(first_ts % interval_ms, 0);
    EXPECT_LE(first_ts + interval_ms, clock_.epoch_ms());  // the interval has ended
    EXPECT_EQ(value_of(saves[0], "incomingMsgs"), 12);
    EXPECT_EQ(value_of(saves[0], "sessions"), 3);

    incoming_ = 20;
    advance_to_next_boundary();
    saves = store_.wait_for_saves(2);
    ASSERT_EQ(saves.size(), 2U);
    EXPECT_EQ(saves[1].front().ts_ms, first_ts + interval_ms);
    EXPECT_EQ(value_of(saves[1], "incomingMsgs"), 8);
    EXPECT_EQ(recorder_.skipped(), 0U);
}

TEST_F(stats_recorder_test, an_interval_met_by_a_slow_store_is_carried_into_the_next_point) {
    recorder_.start();
    store_.hold(true);
    incoming_ = 5;
    advance_to_next_boundary();
    auto saves = store_.wait_for_saves(1);
    const std::int64_t first_ts = saves[0].front().ts_ms;

    // The first write is still in flight at the next boundary: nothing is sampled.
    incoming_ = 9;
    advance_to_next_boundary();
    const auto deadline = std::chrono::steady_clock::now() + 10s;
    while (recorder_.skipped() == 0 && std::chrono::steady_clock::now() < deadline) {
        std::this_thread::yield();
    }
    ASSERT_EQ(recorder_.skipped(), 1U);
    EXPECT_EQ(store_.wait_for_saves(1).size(), 1U);

    store_.hold(false);
    store_.release_held();
    incoming_ = 11;
    advance_to_next_boundary();
    saves = store_.wait_for_saves(2);
    ASSERT_EQ(saves.size(), 2U);
    EXPECT_EQ(saves[1].front().ts_ms, first_ts + 2 * interval_ms);
    EXPECT_EQ(value_of(saves[1], "incomingMsgs"), 6);  // 9 - 5 of the skipped, + 2
    EXPECT_EQ(recorder_.skipped(), 1U);
    EXPECT_EQ(recorder_.written(), 2U);
}

TEST_F(stats_recorder_test, sweeps_past_the_retention_at_once_then_every_sweep_interval) {
    recorder_.start();
    advance_to_next_boundary();
    auto sweeps = store_.wait_for_sweeps(1);
    ASSERT_EQ(sweeps.size(), 1U);
    const std::int64_t first_boundary = sweeps[0] + 7LL * 24 * 3600 * 1000;
    EXPECT_EQ(first_boundary % interval_ms, 0);

    for (int minute = 1; minute < 60; ++minute) {
        advance_to_next_boundary();
        store_.wait_for_saves(static_cast<std::size_t>(minute) + 1);
    }
    EXPECT_EQ(store_.wait_for_sweeps(1).size(), 1U);  // not yet an hour
    advance_to_next_boundary();
    sweeps = store_.wait_for_sweeps(2);
    ASSERT_EQ(sweeps.size(), 2U);
    EXPECT_EQ(sweeps[1] - sweeps[0], 3600 * 1000);
}

TEST_F(stats_recorder_test, stop_cancels_the_next_tick) {
    recorder_.start();
    EXPECT_EQ(timers_.pending(), 1U);
    recorder_.stop();
    EXPECT_EQ(timers_.pending(), 0U);
}

}  // namespace
}  // namespace starling::broker
