#include "actor/mpsc_queue.h"

#include <gtest/gtest.h>

#include <memory>
#include <thread>
#include <vector>

namespace starling::actor {
namespace {

struct item {
    int producer;
    int seq;
};
using queue = mpsc_queue<item>;

TEST(mpsc_queue, single_thread_fifo_and_empty) {
    queue q;
    EXPECT_EQ(q.pop(), nullptr);
    EXPECT_FALSE(q.has_visible());
    for (int i = 0; i < 3; ++i) {
        q.push(new queue::value_node(item{0, i}));
        EXPECT_TRUE(q.has_visible());
    }
    for (int i = 0; i < 3; ++i) {
        std::unique_ptr<queue::value_node> n(q.pop());
        ASSERT_NE(n, nullptr);
        EXPECT_EQ(n->value.seq, i);
    }
    EXPECT_EQ(q.pop(), nullptr);
    EXPECT_FALSE(q.has_visible());
    // Reusable after running dry (the stub went back in).
    q.push(new queue::value_node(item{0, 9}));
    std::unique_ptr<queue::value_node> n(q.pop());
    ASSERT_NE(n, nullptr);
    EXPECT_EQ(n->value.seq, 9);
}

TEST(mpsc_queue, destructor_frees_remaining_nodes) {
    auto token = std::make_shared<int>(1);
    {
        mpsc_queue<std::shared_ptr<int>> q;
        q.push(new mpsc_queue<std::shared_ptr<int>>::value_node(token));
        q.push(new mpsc_queue<std::shared_ptr<int>>::value_node(token));
        EXPECT_EQ(token.use_count(), 3);
    }
    EXPECT_EQ(token.use_count(), 1);
}

TEST(mpsc_queue, many_producers_keep_per_producer_order) {
    constexpr int producers = 4;
    constexpr int per_producer = 50'000;
    queue q;
    std::vector<std::thread> threads;
    for (int p = 0; p < producers; ++p) {
        threads.emplace_back([&q, p] {
            for (int i = 0; i < per_producer; ++i) {
                q.push(new queue::value_node(item{p, i}));
            }
        });
    }
    std::vector<int> next(producers, 0);
    int received = 0;
    int out_of_order = 0;
    while (received < producers * per_producer) {
        std::unique_ptr<queue::value_node> n(q.pop());
        if (!n) {
            std::this_thread::yield();  // empty or a producer mid-push
            continue;
        }
        if (n->value.seq != next[n->value.producer]) {
            ++out_of_order;
        }
        next[n->value.producer] = n->value.seq + 1;
        ++received;
    }
    for (auto& t : threads) {
        t.join();
    }
    EXPECT_EQ(out_of_order, 0);
    EXPECT_EQ(q.pop(), nullptr);
    for (int p = 0; p < producers; ++p) {
        EXPECT_EQ(next[p], per_producer);
    }
}

}  // namespace
}  // namespace starling::actor
