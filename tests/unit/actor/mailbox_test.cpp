#include "actor/mailbox.h"

#include "actor/dispatcher.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <future>
#include <latch>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <variant>
#include <vector>

namespace starling::actor {
namespace {

// Collects handled values; completes a future once `expected` values were seen. Only touched by
// the handler (one worker at a time) until the future is ready, then by the test thread.
struct recorder {
    explicit recorder(std::size_t expected_count) : expected(expected_count) {}

    void record(int value) {
        seen.push_back(value);
        if (seen.size() == expected) {
            done.set_value();
        }
    }
    void wait() { done.get_future().wait(); }

    std::size_t expected;
    std::vector<int> seen;
    std::promise<void> done;
};

TEST(mailbox, control_messages_are_handled_before_normal_ones) {
    dispatcher pool("test", 1);
    recorder rec(4);
    auto box = mailbox<int>::create(pool, [&](int&& v) { rec.record(v); });

    // Queued before start: the turn finds both lanes populated.
    ASSERT_TRUE(box->tell(1));
    ASSERT_TRUE(box->tell(2));
    ASSERT_TRUE(box->tell(3));
    ASSERT_TRUE(box->tell_control(100));
    pool.start();
    rec.wait();
    pool.stop();  // counters are published at the end of a turn: let it finish

    EXPECT_EQ(rec.seen, (std::vector<int>{100, 1, 2, 3}));
    EXPECT_EQ(box->stats().processed.load(), 4U);
    EXPECT_EQ(box->depth(), 0U);
}

TEST(mailbox, control_told_mid_turn_overtakes_queued_normal_messages) {
    dispatcher pool("test", 1);
    recorder rec(4);
    mailbox<int>* self = nullptr;
    auto box = mailbox<int>::create(pool, [&](int&& v) {
        if (v == 1) {
            self->tell_control(100);  // arrives while 2 and 3 are still queued
        }
        rec.record(v);
    });
    self = box.get();

    ASSERT_TRUE(box->tell(1));
    ASSERT_TRUE(box->tell(2));
    ASSERT_TRUE(box->tell(3));
    pool.start();
    rec.wait();

    EXPECT_EQ(rec.seen, (std::vector<int>{1, 100, 2, 3}));
}

TEST(mailbox, a_busy_mailbox_yields_after_throughput_messages) {
    dispatcher pool("test", 1);  // one worker: fairness must come from yielding
    recorder rec(101);
    auto busy = mailbox<int>::create(pool, [&](int&& v) { rec.record(v); });
    auto quiet = mailbox<int>::create(
        pool, [&](int&& v) { rec.record(v); }, mailbox_options{.capacity = 1024, .throughput = 5});

    for (int i = 0; i < 100; ++i) {
        ASSERT_TRUE(busy->tell(int{i}));
    }
    ASSERT_TRUE(quiet->tell(-1));  // scheduled after `busy`
    pool.start();
    rec.wait();

    // `busy` ran one turn of 5, re-queued itself behind `quiet`, which ran next.
    auto pos = std::find(rec.seen.begin(), rec.seen.end(), -1) - rec.seen.begin();
    EXPECT_EQ(pos, 5);
    EXPECT_GE(pool.stats().turns.load(), 100U / 5U);
}

TEST(mailbox, an_actor_that_never_runs_dry_does_not_starve_another) {
    dispatcher pool("test", 1);
    std::promise<void> quiet_ran;
    mailbox<int>* self = nullptr;
    // Re-tells itself forever: without the per-turn yield the one worker would never leave it.
    auto greedy = mailbox<int>::create(pool, [&](int&& v) { self->tell(v + 1); });
    self = greedy.get();
    auto quiet = mailbox<int>::create(pool, [&](int&&) { quiet_ran.set_value(); });

    pool.start();
    ASSERT_TRUE(greedy->tell(0));
    ASSERT_TRUE(quiet->tell(0));
    quiet_ran.get_future().wait();
    greedy->close();  // ends the loop: further self-tells are refused
    pool.stop();
    EXPECT_GT(greedy->stats().processed.load(), 0U);
}

TEST(mailbox, a_full_normal_queue_rejects_and_counts) {
    dispatcher pool("test", 1);
    recorder rec(4);
    auto box = mailbox<int>::create(
        pool, [&](int&& v) { rec.record(v); }, mailbox_options{.capacity = 3, .throughput = 5});

    EXPECT_TRUE(box->tell(1));
    EXPECT_TRUE(box->tell(2));
    EXPECT_TRUE(box->tell(3));
    EXPECT_FALSE(box->tell(4));
    EXPECT_EQ(box->stats().rejected.load(), 1U);
    EXPECT_EQ(pool.stats().tells_rejected.load(), 1U);
    EXPECT_EQ(box->depth(), 3U);
    // Control is not bounded by the normal capacity.
    EXPECT_TRUE(box->tell_control(100));
    EXPECT_EQ(box->depth(), 4U);

    pool.start();
    rec.wait();
    EXPECT_EQ(rec.seen, (std::vector<int>{100, 1, 2, 3}));
}

TEST(mailbox, a_refused_message_stays_with_the_caller) {
    dispatcher pool("test", 1);
    auto box = mailbox<std::unique_ptr<int>>::create(
        pool, [](std::unique_ptr<int>&&) {}, mailbox_options{.capacity = 1, .throughput = 5});
    auto first = std::make_unique<int>(1);
    auto second = std::make_unique<int>(2);
    ASSERT_TRUE(box->tell(std::move(first)));
    EXPECT_EQ(first, nullptr);  // accepted: moved into the mailbox
    ASSERT_FALSE(box->tell(std::move(second)));
    ASSERT_NE(second, nullptr);  // refused: still ours, e.g. to park until the box drains
    EXPECT_EQ(*second, 2);
    box->close();
    ASSERT_FALSE(box->tell_control(std::move(second)));
    EXPECT_NE(second, nullptr);
}

TEST(mailbox, capacity_frees_up_as_messages_are_handled) {
    dispatcher pool("test", 1);
    std::vector<std::promise<void>> handled(2);
    int count = 0;
    auto box = mailbox<int>::create(
        pool, [&](int&&) { handled[count++].set_value(); },
        mailbox_options{.capacity = 1, .throughput = 5});
    ASSERT_TRUE(box->tell(1));
    EXPECT_FALSE(box->tell(2));
    pool.start();
    handled[0].get_future().wait();
    EXPECT_TRUE(box->tell(3));
    handled[1].get_future().wait();
}

// A message whose destruction is observable, to see discarded messages die.
struct probe {
    explicit probe(std::latch& l) : destroyed(&l) {}
    probe(probe&& other) noexcept : destroyed(std::exchange(other.destroyed, nullptr)) {}
    probe& operator=(probe&&) = delete;
    ~probe() {
        if (destroyed != nullptr) {
            destroyed->count_down();
        }
    }
    std::latch* destroyed;
};

TEST(mailbox, close_refuses_tells_and_discards_pending_messages) {
    dispatcher pool("test", 1);
    std::latch destroyed(4);  // three queued, one refused
    std::atomic<int> handled{0};
    auto box = mailbox<probe>::create(pool, [&](probe&&) { handled.fetch_add(1); });

    ASSERT_TRUE(box->tell(probe(destroyed)));
    ASSERT_TRUE(box->tell(probe(destroyed)));
    ASSERT_TRUE(box->tell_control(probe(destroyed)));
    box->close();
    EXPECT_TRUE(box->closed());
    EXPECT_FALSE(box->tell(probe(destroyed)));  // refused: destroyed at once, not counted
    EXPECT_EQ(box->stats().rejected.load(), 0U);

    pool.start();
    destroyed.wait();  // the refused one died at once; the turn close() scheduled freed the rest
    EXPECT_EQ(handled.load(), 0);
    pool.stop();
    EXPECT_EQ(box->depth(), 0U);
}

TEST(mailbox, closing_from_the_handler_discards_the_rest_of_the_turn) {
    dispatcher pool("test", 1);
    std::promise<void> first;
    mailbox<int>* self = nullptr;
    std::vector<int> seen;
    auto box = mailbox<int>::create(pool, [&](int&& v) {
        seen.push_back(v);
        self->close();
        first.set_value();
    });
    self = box.get();
    ASSERT_TRUE(box->tell(1));
    ASSERT_TRUE(box->tell(2));
    ASSERT_TRUE(box->tell(3));
    pool.start();
    first.get_future().wait();
    pool.stop();  // waits for the rest of the turn, which discards 2 and 3
    EXPECT_EQ(seen, (std::vector<int>{1}));
    EXPECT_EQ(box->depth(), 0U);
}

TEST(mailbox, tells_are_refused_once_the_dispatcher_stopped) {
    auto pool = std::make_unique<dispatcher>("test", 2);
    auto box = mailbox<int>::create(*pool, [](int&&) {});
    pool->start();
    pool->stop();
    EXPECT_FALSE(box->tell(1));
    EXPECT_FALSE(box->tell_control(2));
    // The mailbox may outlive its dispatcher: it shares the core.
    pool.reset();
    EXPECT_FALSE(box->tell(3));
}

TEST(mailbox, a_throwing_handler_is_counted_and_the_actor_continues) {
    dispatcher pool("test", 1);
    recorder rec(1);
    auto box = mailbox<int>::create(pool, [&](int&& v) {
        if (v == 1) {
            throw std::runtime_error("handler bug");
        }
        rec.record(v);
    });
    ASSERT_TRUE(box->tell(1));
    ASSERT_TRUE(box->tell(2));
    pool.start();
    rec.wait();
    EXPECT_EQ(rec.seen, (std::vector<int>{2}));
    EXPECT_EQ(pool.stats().handler_failures.load(), 1U);
}

TEST(mailbox, move_only_messages_and_variants) {
    using message = std::variant<std::unique_ptr<int>, std::string>;
    dispatcher pool("test", 1);
    std::promise<std::string> got;
    int sum = 0;
    auto box = mailbox<message>::create(pool, [&](message&& m) {
        if (auto* p = std::get_if<std::unique_ptr<int>>(&m)) {
            sum += **p;
        } else {
            got.set_value(std::get<std::string>(m) + std::to_string(sum));
        }
    });
    ASSERT_TRUE(box->tell(std::make_unique<int>(40)));
    ASSERT_TRUE(box->tell(std::make_unique<int>(2)));
    ASSERT_TRUE(box->tell(std::string("sum=")));
    pool.start();
    EXPECT_EQ(got.get_future().get(), "sum=42");
}

TEST(dispatcher, stop_is_idempotent_and_works_without_start) {
    dispatcher never_started("idle", 2);
    never_started.stop();
    never_started.stop();
    EXPECT_TRUE(never_started.stopping());

    dispatcher pool("test", 3);
    EXPECT_EQ(pool.thread_count(), 3U);
    EXPECT_EQ(pool.name(), "test");
    pool.start();
    EXPECT_TRUE(pool.running());
    pool.stop();
    pool.stop();
    EXPECT_FALSE(pool.running());
    EXPECT_EQ(pool.run_queue_depth(), 0U);
}

}  // namespace
}  // namespace starling::actor
