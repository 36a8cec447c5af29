// consumer_pool: a task runs once per request that came before its turn, once more when a
// request arrives during its turn (no signal lost between a poll that found nothing and the end
// of the turn), never on two threads at once, never after retire() returned; timers fire no
// earlier than asked and the earliest wins.

#include "broker/consumer_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <random>
#include <thread>
#include <vector>

namespace starling::broker {
namespace {

using namespace std::chrono_literals;

// Every event gets a number from one counter, so "the last run started after the last request"
// can be checked without clocks.
std::atomic<std::uint64_t> sequence{0};

class probe_task final : public pooled_task {
  public:
    std::function<void(probe_task&)> on_step;  // set before the first schedule
    std::atomic<int> runs{0};
    std::atomic<int> finishes{0};
    std::atomic<bool> in_step{false};
    std::atomic<bool> overlapped{false};
    std::atomic<std::uint64_t> last_run_start{0};
    std::atomic<std::uint64_t> last_request{0};
    std::atomic<std::thread::id> finished_on{};

    std::mutex mutex;
    std::condition_variable changed;

    void request(consumer_pool& pool) {
        last_request = ++sequence;
        pool.schedule(std::static_pointer_cast<pooled_task>(shared_from_this()));
    }
    bool wait_for_runs(int n, std::chrono::seconds timeout = 30s) {
        std::unique_lock lock(mutex);
        return changed.wait_for(lock, timeout, [&] { return runs.load() >= n; });
    }
    bool wait_for_finish(std::chrono::seconds timeout = 30s) {
        std::unique_lock lock(mutex);
        return changed.wait_for(lock, timeout, [&] { return finishes.load() >= 1; });
    }

    void step() override {
        if (in_step.exchange(true)) {
            overlapped = true;
        }
        last_run_start = ++sequence;
        if (on_step) {
            on_step(*this);
        }
        in_step = false;
        {
            std::lock_guard lock(mutex);
            ++runs;
        }
        changed.notify_all();
    }
    void finish() override {
        finished_on = std::this_thread::get_id();
        {
            std::lock_guard lock(mutex);
            ++finishes;
        }
        changed.notify_all();
    }
};

// A gate a step waits on, opened by the test.
struct gate {
    std::mutex mutex;
    std::condition_variable cv;
    bool entered = false;
    bool open = false;
    void pass() {
        std::unique_lock lock(mutex);
        entered = true;
        cv.notify_all();
        cv.wait(lock, [&] { return open; });
    }
    void wait_entered() {
        std::unique_lock lock(mutex);
        cv.wait(lock, [&] { return entered; });
    }
    void release() {
        std::lock_guard lock(mutex);
        open = true;
        cv.notify_all();
    }
};

TEST(consumer_pool, a_request_during_a_turn_brings_exactly_one_more_turn) {
    consumer_pool pool("test", 2);
    auto task = std::make_shared<probe_task>();
    gate first;
    task->on_step = [&](probe_task& t) {
        if (t.runs == 0) {
            first.pass();
        }
    };
    task->request(pool);
    first.wait_entered();
    // Three requests while the first turn runs: one more turn, not three.
    task->request(pool);
    task->request(pool);
    task->request(pool);
    first.release();
    ASSERT_TRUE(task->wait_for_runs(2));
    // The second turn started after the last request: nothing asked for is left undone.
    EXPECT_GT(task->last_run_start.load(), task->last_request.load());
    EXPECT_TRUE(pool.retire(*task));
    EXPECT_EQ(task->runs.load(), 2);
}

TEST(consumer_pool, concurrent_requests_never_overlap_turns_and_none_is_left_behind) {
    const unsigned seed = std::random_device{}();
    SCOPED_TRACE("seed " + std::to_string(seed));
    consumer_pool pool("test", 4);
    std::vector<std::shared_ptr<probe_task>> tasks;
    for (int i = 0; i < 16; ++i) {
        auto t = std::make_shared<probe_task>();
        t->on_step = [](probe_task&) { std::this_thread::yield(); };
        tasks.push_back(t);
    }
    std::vector<std::thread> requesters;
    for (unsigned r = 0; r < 4; ++r) {
        requesters.emplace_back([&, r] {
            std::mt19937 rng(seed + r);
            for (int i = 0; i < 5000; ++i) {
                tasks[rng() % tasks.size()]->request(pool);
            }
        });
    }
    for (auto& t : requesters) {
        t.join();
    }
    for (auto& t : tasks) {
        // Settled: the turn that follows the last request has started and ended.
        std::unique_lock lock(t->mutex);
        ASSERT_TRUE(t->changed.wait_for(lock, 30s, [&] {
            return t->last_run_start.load() > t->last_request.load() && !t->in_step.load();
        }));
    }
    for (auto& t : tasks) {
        EXPECT_FALSE(t->overlapped.load());
        EXPECT_GE(t->runs.load(), 1);
        EXPECT_TRUE(pool.retire(*t));
    }
}

TEST(consumer_pool, retire_waits_for_the_turn_in_progress_and_no_turn_follows) {
    consumer_pool pool("test", 2);
    auto task = std::make_shared<probe_task>();
    gate turn;
    task->on_step = [&](probe_task&) { turn.pass(); };
    task->request(pool);
    turn.wait_entered();
    task->request(pool);  // would bring another turn, but the task is retired first
    std::atomic<bool> retired{false};
    std::thread retirer([&] {
        EXPECT_TRUE(pool.retire(*task));
        retired = true;
    });
    // retire() cannot return while the turn runs; let the retirer reach its wait.
    std::this_thread::sleep_for(50ms);
    EXPECT_FALSE(retired.load());
    turn.release();
    retirer.join();
    EXPECT_EQ(task->runs.load(), 1);
    task->request(pool);
    pool.schedule_at(task, consumer_pool::clock::now());
    pool.stop();  // joins the threads: a turn queued by mistake would have run by now
    EXPECT_EQ(task->runs.load(), 1);
    EXPECT_EQ(task->finishes.load(), 0);  // the caller of retire() finishes
}

TEST(consumer_pool, retire_from_inside_the_turn_leaves_finish_to_the_pool) {
    consumer_pool pool("test", 1);
    auto task = std::make_shared<probe_task>();
    std::atomic<bool> retire_result{true};
    std::atomic<std::thread::id> turn_thread{};
    task->on_step = [&](probe_task& t) {
        turn_thread = std::this_thread::get_id();
        retire_result = pool.retire(t);
    };
    task->request(pool);
    ASSERT_TRUE(task->wait_for_finish());
    EXPECT_FALSE(retire_result.load());
    EXPECT_EQ(task->finished_on.load(), turn_thread.load());
    EXPECT_EQ(task->finishes.load(), 1);
}

TEST(consumer_pool, a_timer_fires_no_earlier_than_asked_and_the_earliest_wins) {
    consumer_pool pool("test", 2);
    auto task = std::make_shared<probe_task>();
    const auto start = consumer_pool::clock::now();
    std::atomic<consumer_pool::clock::time_point> ran_at{};
    task->on_step = [&](probe_task&) { ran_at = consumer_pool::clock::now(); };
    pool.schedule_at(task, start + 10s);
    pool.schedule_at(task, start + 200ms);  // earlier: replaces the 10 s timer
    pool.schedule_at(task, start + 5s);     // later than the armed one: ignored
    ASSERT_TRUE(task->wait_for_runs(1));
    EXPECT_GE(ran_at.load() - start, 200ms);
    // The armed timer was disarmed when it fired: a new one at 300 ms is armed (not refused as
    // later than a stale 5 s or 10 s one) and brings the next turn.
    pool.schedule_at(task, consumer_pool::clock::now() + 300ms);
    ASSERT_TRUE(task->wait_for_runs(2));
    EXPECT_EQ(task->runs.load(), 2);
    EXPECT_TRUE(pool.retire(*task));
}

}  // namespace
}  // namespace starling::broker
