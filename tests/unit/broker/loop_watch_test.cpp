// loop_watch: a loop is reported stalled exactly when its beat is older than stall_after — a
// blocked dispatcher while the timer thread still beats, and both when nothing beats at all.

#include "broker/loop_watch.h"

#include "support/manual_clock.h"
#include <gtest/gtest.h>

#include <future>
#include <thread>

namespace starling::broker {
namespace {

using namespace std::chrono_literals;

class loop_watch_test : public ::testing::Test {
  protected:
    void SetUp() override {
        timers_.start();
        dispatcher_.start();
    }
    void TearDown() override {
        watch_.stop();
        release_.set_value();  // a blocked handler (if any) returns before the dispatcher stops
        dispatcher_.stop();
        timers_.stop();
    }

    bool stalled(std::string_view loop) {
        for (const auto& l : watch_.check()) {
            if (l.name == loop) {
                return l.stalled;
            }
        }
        ADD_FAILURE() << "no loop " << loop;
        return false;
    }

    // Moves the clock one period and waits until the timer has re-armed after firing.
    void tick() {
        const std::uint64_t fired = timers_.fired();
        clock_.advance(1s);
        timers_.poke();
        const auto deadline = std::chrono::steady_clock::now() + 10s;
        while ((timers_.fired() == fired || timers_.pending() == 0) &&
               std::chrono::steady_clock::now() < deadline) {
            std::this_thread::yield();
        }
        ASSERT_GT(timers_.fired(), fired);
    }

    // Waits (bounded) until the dispatcher's beat is fresh again.
    void wait_until_dispatcher_alive() {
        const auto deadline = std::chrono::steady_clock::now() + 10s;
        while (stalled("clientDispatcher") && std::chrono::steady_clock::now() < deadline) {
            std::this_thread::yield();
        }
    }

    testing::manual_clock clock_;
    actor::timer_service timers_{"loop-watch-test", clock_};
    actor::dispatcher dispatcher_{"loop-watch-test", 1};
    loop_watch watch_{timers_, dispatcher_, clock_, 1s, 5s};
    std::promise<void> release_;
};

TEST_F(loop_watch_test, beating_loops_are_alive) {
    watch_.start();
    for (int i = 0; i < 10; ++i) {
        tick();
    }
    wait_until_dispatcher_alive();
    EXPECT_FALSE(stalled("timers"));
    EXPECT_FALSE(stalled("clientDispatcher"));
}

TEST_F(loop_watch_test, a_blocked_dispatcher_is_stalled_while_the_timers_beat_on) {
    watch_.start();
    // The dispatcher's only thread is held by a handler that waits for the test.
    auto released = release_.get_future().share();
    std::promise<void> entered;
    auto blocker = actor::mailbox<int>::create(dispatcher_, [&entered, released](int&&) {
        entered.set_value();
        released.wait();
    });
    ASSERT_TRUE(blocker->tell(1));
    entered.get_future().wait();
    for (int i = 0; i < 7; ++i) {
        tick();
    }
    EXPECT_FALSE(stalled("timers"));
    EXPECT_TRUE(stalled("clientDispatcher"));

    release_.set_value();
    release_ = std::promise<void>();  // TearDown releases a fresh one
    tick();
    wait_until_dispatcher_alive();
    EXPECT_FALSE(stalled("clientDispatcher"));
    blocker->close();
}

TEST_F(loop_watch_test, with_no_beat_at_all_both_loops_are_stalled) {
    // Not started: nothing beats, as when the timer thread is stuck.
    clock_.advance(4s);
    EXPECT_FALSE(stalled("timers"));
    clock_.advance(2s);
    EXPECT_TRUE(stalled("timers"));
    EXPECT_TRUE(stalled("clientDispatcher"));
}

}  // namespace
}  // namespace starling::broker
