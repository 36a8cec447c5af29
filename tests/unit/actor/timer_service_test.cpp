#include "actor/timer_service.h"

#include "actor/dispatcher.h"
#include "actor/mailbox.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace starling::actor {
namespace {

using namespace std::chrono_literals;

// A clock that moves only when told to.
class manual_clock final : public starling::clock {
  public:
    steady_point steady_now() const override {
        return steady_point(std::chrono::nanoseconds(steady_ns_.load()));
    }
    system_point system_now() const override { return system_point{}; }
    void advance(std::chrono::nanoseconds by) { steady_ns_.fetch_add(by.count()); }

  private:
    std::atomic<std::int64_t> steady_ns_{1'000'000'000};
};

TEST(timer_service, fires_after_the_delay) {
    timer_service timers("timers");
    timers.start();
    std::promise<std::chrono::steady_clock::time_point> fired;
    const auto before = std::chrono::steady_clock::now();
    auto handle =
        timers.schedule_after(5ms, [&] { fired.set_value(std::chrono::steady_clock::now()); });
    EXPECT_TRUE(handle);
    const auto at = fired.get_future().get();
    EXPECT_GE(at - before, 5ms);
    EXPECT_EQ(timers.fired(), 1U);
    EXPECT_EQ(timers.pending(), 0U);
}

TEST(timer_service, fires_in_deadline_order_then_scheduling_order) {
    timer_service timers("timers");
    const auto base = std::chrono::steady_clock::now();
    std::vector<int> order;  // only touched on the timer thread until `done`
    std::promise<void> done;
    // Scheduled before start(): all may be overdue when the thread starts, order must hold.
    timers.schedule_at(base + 30ms, [&] { order.push_back(3); });
    timers.schedule_at(base + 10ms, [&] { order.push_back(1); });
    timers.schedule_at(base + 20ms, [&] { order.push_back(2); });
    timers.schedule_at(base + 20ms, [&] { order.push_back(22); });
    timers.schedule_at(base + 40ms, [&] { done.set_value(); });
    timers.start();
    done.get_future().wait();
    EXPECT_EQ(order, (std::vector<int>{1, 2, 22, 3}));
}

TEST(timer_service, cancel_by_handle) {
    timer_service timers("timers");
    timers.start();
    auto handle = timers.schedule_after(1h, [] { FAIL() << "cancelled timer fired"; });
    EXPECT_EQ(timers.pending(), 1U);
    EXPECT_TRUE(timers.cancel(handle));
    EXPECT_EQ(timers.pending(), 0U);
    EXPECT_FALSE(timers.cancel(handle));  // already gone
    EXPECT_FALSE(timers.cancel(timer_handle{}));
}

TEST(timer_service, a_cancelled_timer_never_fires_while_later_ones_do) {
    timer_service timers("timers");
    const auto base = std::chrono::steady_clock::now();
    std::atomic<bool> cancelled_ran{false};
    std::promise<void> later_ran;
    auto early = timers.schedule_at(base + 1ms, [&] { cancelled_ran = true; });
    timers.schedule_at(base + 2ms, [&] { later_ran.set_value(); });
    ASSERT_TRUE(timers.cancel(early));
    timers.start();
    later_ran.get_future().wait();  // the single thread would have run `early` first
    EXPECT_FALSE(cancelled_ran.load());
}

TEST(timer_service, cancelling_after_firing_returns_false) {
    timer_service timers("timers");
    timers.start();
    std::promise<void> ran;
    auto handle = timers.schedule_after(0ms, [&] { ran.set_value(); });
    ran.get_future().wait();
    EXPECT_FALSE(timers.cancel(handle));
}

TEST(timer_service, stop_drops_pending_timers_and_refuses_new_ones) {
    timer_service timers("timers");
    timers.start();
    auto token = std::make_shared<int>(0);
    timers.schedule_after(1h, [token] {});
    EXPECT_EQ(token.use_count(), 2);
    timers.stop();
    EXPECT_EQ(token.use_count(), 1);  // the callback was destroyed, never run
    EXPECT_EQ(timers.pending(), 0U);
    EXPECT_FALSE(timers.schedule_after(1ms, [] {}));
    timers.stop();  // idempotent
}

TEST(timer_service, follows_an_injected_clock) {
    manual_clock clock;
    timer_service timers("timers", clock);
    timers.start();
    std::promise<void> first;
    std::promise<void> second;
    timers.schedule_after(5s, [&] { first.set_value(); });
    timers.schedule_after(10s, [&] { second.set_value(); });

    EXPECT_EQ(timers.fired(), 0U);  // the manual clock has not moved: nothing can be due
    clock.advance(5s);
    timers.poke();
    first.get_future().wait();
    EXPECT_EQ(timers.fired(), 1U);
    EXPECT_EQ(timers.pending(), 1U);

    clock.advance(5s);
    timers.poke();
    second.get_future().wait();
    EXPECT_EQ(timers.pending(), 0U);
}

TEST(timer_service, many_cancellations_keep_the_heap_bounded) {
    manual_clock clock;
    timer_service timers("timers", clock);
    timers.start();
    std::vector<timer_handle> handles;
    for (int i = 0; i < 1000; ++i) {
        handles.push_back(timers.schedule_after(1h, [] {}));
    }
    for (int i = 0; i < 990; ++i) {
        ASSERT_TRUE(timers.cancel(handles[i]));
    }
    EXPECT_EQ(timers.pending(), 10U);
    EXPECT_LE(timers.heap_size_for_test(), 2 * timers.pending() + 64);
    std::promise<void> ran;
    timers.schedule_after(0s, [&] { ran.set_value(); });
    ran.get_future().wait();
    clock.advance(1h);
    timers.poke();
    // The ten survivors of the rebuild still fire.
    std::promise<void> last;
    timers.schedule_after(0s, [&] { last.set_value(); });
    last.get_future().wait();
    EXPECT_EQ(timers.fired(), 12U);
}

TEST(timer_service, tell_after_delivers_a_message_to_the_actor_thread) {
    dispatcher pool("actors", 1);
    timer_service timers("timers");
    pool.start();
    timers.start();

    std::promise<std::pair<int, std::thread::id>> got;
    auto box = mailbox<int>::create(pool, [&](int&& v) {
        got.set_value({v, std::this_thread::get_id()});
    });
    std::thread::id timer_thread;
    std::promise<void> probe_ran;
    timers.schedule_after(0ms, [&] {
        timer_thread = std::this_thread::get_id();
        probe_ran.set_value();
    });
    probe_ran.get_future().wait();

    auto handle = tell_after(timers, 1ms, box, 7);
    EXPECT_TRUE(handle);
    auto [value, thread] = got.get_future().get();
    EXPECT_EQ(value, 7);
    EXPECT_NE(thread, timer_thread);  // handled on a worker, not on the timer thread
    timers.stop();
    pool.stop();
}

TEST(timer_service, tell_after_a_mailbox_died_is_harmless) {
    dispatcher pool("actors", 1);
    timer_service timers("timers");
    pool.start();
    timers.start();
    auto box = mailbox<int>::create(pool, [](int&&) { FAIL() << "dead actor handled a tick"; });
    tell_at(timers, std::chrono::steady_clock::now() + 1ms, box, 1);
    box.reset();
    std::promise<void> after;
    timers.schedule_after(2ms, [&] { after.set_value(); });
    after.get_future().wait();
    EXPECT_EQ(timers.fired(), 2U);
}

}  // namespace
}  // namespace starling::actor
