// Multi-threaded checks of the mailbox scheduling protocol. Plain (non-atomic) actor state is
// used on purpose: ThreadSanitizer reports a race if two workers ever run one mailbox at once
// or if a turn's writes are not visible to the next turn on another worker.

#include "actor/dispatcher.h"
#include "actor/mailbox.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <future>
#include <latch>
#include <memory>
#include <thread>
#include <vector>

namespace starling::actor {
namespace {

struct sequenced {
    int sender;
    int seq;
};

// Retries a tell refused for capacity: the sender-side pushback a real producer would apply.
template <class Msg>
void tell_until_accepted(mailbox<Msg>& box, Msg message) {
    for (;;) {
        Msg copy = message;
        if (box.tell(std::move(copy))) {
            return;
        }
        std::this_thread::yield();
    }
}

TEST(mailbox_concurrency, messages_from_one_sender_are_handled_in_send_order) {
    constexpr int senders = 6;
    constexpr int per_sender = 20'000;
    dispatcher pool("order", 4);
    pool.start();

    std::vector<int> last(senders, -1);  // actor state: plain ints
    int out_of_order = 0;
    int handled = 0;
    std::promise<void> done;
    auto box = mailbox<sequenced>::create(
        pool,
        [&](sequenced&& m) {
            if (m.seq != last[m.sender] + 1) {
                ++out_of_order;
            }
            last[m.sender] = m.seq;
            if (++handled == senders * per_sender) {
                done.set_value();
            }
        },
        mailbox_options{.capacity = 128, .throughput = 5});

    std::vector<std::thread> threads;
    for (int s = 0; s < senders; ++s) {
        threads.emplace_back([&box, s] {
            for (int i = 0; i < per_sender; ++i) {
                tell_until_accepted(*box, sequenced{s, i});
            }
        });
    }
    for (auto& t : threads) {
        t.join();
    }
    done.get_future().wait();
    pool.stop();  // counters are published at the end of a turn: let it finish
    EXPECT_EQ(out_of_order, 0);
    for (int s = 0; s < senders; ++s) {
        EXPECT_EQ(last[s], per_sender - 1);
    }
    EXPECT_EQ(box->stats().processed.load(), std::uint64_t{senders * per_sender});
}

TEST(mailbox_concurrency, a_mailbox_never_runs_on_two_workers_at_once) {
    constexpr int actors = 3;
    constexpr int senders = 6;
    constexpr int per_sender = 10'000;
    dispatcher pool("exclusive", 4);
    pool.start();

    struct actor_state {
        std::atomic<int> inside{0};
        int overlaps = 0;      // plain: only the handler touches it
        std::int64_t sum = 0;  // plain
    };
    std::vector<actor_state> state(actors);
    std::latch all_done(senders * per_sender);  // each sender spreads its messages
    std::vector<std::shared_ptr<mailbox<int>>> boxes;
    for (int a = 0; a < actors; ++a) {
        boxes.push_back(mailbox<int>::create(
            pool,
            [&st = state[a], &all_done](int&& v) {
                if (st.inside.fetch_add(1) != 0) {
                    ++st.overlaps;
                }
                st.sum += v;
                st.inside.fetch_sub(1);
                all_done.count_down();
            },
            mailbox_options{.capacity = 64, .throughput = 5}));
    }

    std::vector<std::thread> threads;
    for (int s = 0; s < senders; ++s) {
        threads.emplace_back([&boxes] {
            for (int i = 0; i < per_sender; ++i) {
                // Alternate lanes: control and normal must be just as exclusive.
                auto& box = *boxes[i % actors];
                if (i % 7 == 0) {
                    ASSERT_TRUE(box.tell_control(1));
                } else {
                    tell_until_accepted(box, 1);
                }
            }
        });
    }
    for (auto& t : threads) {
        t.join();
    }
    all_done.wait();
    pool.stop();
    for (int a = 0; a < actors; ++a) {
        const std::int64_t per_sender_share = (per_sender - a + actors - 1) / actors;
        EXPECT_EQ(state[a].overlaps, 0);
        EXPECT_EQ(state[a].sum, senders * per_sender_share);
    }
    EXPECT_EQ(pool.stats().messages_processed.load(), std::uint64_t{senders * per_sender});
}

TEST(mailbox_concurrency, stop_finishes_the_running_turn_and_drops_the_rest) {
    dispatcher pool("stop", 1);
    std::promise<void> entered;
    std::latch release(1);
    int handled = 0;
    auto box = mailbox<int>::create(
        pool,
        [&](int&& v) {
            ++handled;
            if (v == 0) {
                entered.set_value();
                release.wait();  // hold the worker inside the first turn
            }
        },
        mailbox_options{.capacity = 100, .throughput = 5});
    for (int i = 0; i < 12; ++i) {
        ASSERT_TRUE(box->tell(int{i}));
    }
    pool.start();
    entered.get_future().wait();

    std::thread stopper([&] { pool.stop(); });
    while (!pool.stopping()) {
        std::this_thread::yield();  // wait for stop() to begin: a state change, not a timeout
    }
    release.count_down();
    stopper.join();

    EXPECT_EQ(handled, 5);  // the turn that was running completed; nothing else ran
    // The other 7 were freed unhandled (a queued message may own the mailbox's actor).
    EXPECT_EQ(box->depth(), 0U);
    EXPECT_FALSE(box->tell(99));
    EXPECT_FALSE(pool.running());
}

TEST(mailbox_concurrency, dropped_mailboxes_finish_their_queue_then_die_on_a_worker) {
    constexpr int actors = 200;
    constexpr int per_actor = 50;
    dispatcher pool("lifetime", 4);
    pool.start();

    std::atomic<int> handled{0};
    std::latch destroyed(actors);
    struct on_destroy {
        explicit on_destroy(std::latch* l) : latch(l) {}
        on_destroy(const on_destroy&) = delete;
        on_destroy& operator=(const on_destroy&) = delete;
        ~on_destroy() { latch->count_down(); }
        std::latch* latch;
    };
    std::vector<std::thread> threads;
    for (int t = 0; t < 2; ++t) {
        threads.emplace_back([&] {
            for (int a = 0; a < actors / 2; ++a) {
                auto guard = std::make_shared<on_destroy>(&destroyed);
                auto box = mailbox<int>::create(
                    pool, [guard, &handled](int&&) { handled.fetch_add(1); },
                    mailbox_options{.capacity = per_actor, .throughput = 5});
                guard.reset();  // the handler now holds the only reference
                for (int i = 0; i < per_actor; ++i) {
                    ASSERT_TRUE(box->tell(int{i}));
                }
                // `box` goes out of scope here, possibly while its turns are running.
            }
        });
    }
    for (auto& t : threads) {
        t.join();
    }
    destroyed.wait();
    EXPECT_EQ(handled.load(), actors * per_actor);
    pool.stop();
}

TEST(mailbox_concurrency, self_tells_and_external_tells_interleave_safely) {
    dispatcher pool("self", 2);
    pool.start();
    constexpr int external = 20'000;
    constexpr int chain = 20'000;
    mailbox<int>* self = nullptr;
    int handled = 0;  // plain actor state
    std::promise<void> done;
    auto box = mailbox<int>::create(
        pool,
        [&](int&& v) {
            if (v > 0) {
                self->tell_control(v - 1);  // a chain of self-tells on the control lane
            }
            if (++handled == external + chain + 1) {
                done.set_value();
            }
        },
        mailbox_options{.capacity = 64, .throughput = 5});
    self = box.get();
    ASSERT_TRUE(box->tell_control(int{chain}));
    std::thread sender([&] {
        for (int i = 0; i < external; ++i) {
            tell_until_accepted(*box, 0);
        }
    });
    sender.join();
    done.get_future().wait();
    pool.stop();
    EXPECT_EQ(handled, external + chain + 1);
}

}  // namespace
}  // namespace starling::actor
