#include "base/lazy_deque.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <deque>
#include <memory>
#include <random>
#include <string>
#include <vector>

namespace starling::base {
namespace {

TEST(lazy_deque, a_queue_that_was_only_read_owns_no_storage) {
    lazy_deque<std::string> q;
    EXPECT_TRUE(q.empty());
    EXPECT_EQ(q.size(), 0U);
    EXPECT_EQ(q.begin(), q.end());
    int visited = 0;
    for ([[maybe_unused]] const auto& item : q) {
        ++visited;
    }
    EXPECT_EQ(visited, 0);
    q.clear();
    EXPECT_FALSE(q.allocated());
    EXPECT_EQ(sizeof(q), sizeof(void*));
}

TEST(lazy_deque, a_moved_from_queue_is_empty_and_usable) {
    lazy_deque<std::unique_ptr<int>> a;
    a.push_back(std::make_unique<int>(7));
    lazy_deque<std::unique_ptr<int>> b = std::move(a);
    EXPECT_TRUE(a.empty());  // NOLINT(bugprone-use-after-move): the documented moved-from state
    ASSERT_EQ(b.size(), 1U);
    EXPECT_EQ(*b.front(), 7);
    a.emplace_back(std::make_unique<int>(8));
    EXPECT_EQ(*a.front(), 8);
}

TEST(lazy_deque, elements_keep_their_address_while_others_are_added_and_removed) {
    lazy_deque<int> q;
    q.push_back(1);
    int* first = &q.front();
    for (int i = 0; i < 10'000; ++i) {
        q.push_back(i);
    }
    EXPECT_EQ(&q.front(), first);
}

// Random operation sequences against std::deque as the reference model.
TEST(lazy_deque, behaves_as_std_deque_under_random_operations) {
    for (std::uint32_t seed = 1; seed <= 50; ++seed) {
        std::mt19937 rng(seed);
        lazy_deque<int> q;
        std::deque<int> model;
        for (int step = 0; step < 2'000; ++step) {
            switch (rng() % 8) {
                case 0:
                case 1:
                case 2: {
                    const int v = static_cast<int>(rng());
                    q.push_back(v);
                    model.push_back(v);
                    break;
                }
                case 3: {
                    const int v = static_cast<int>(rng());
                    EXPECT_EQ(q.emplace_back(v), v);
                    model.emplace_back(v);
                    break;
                }
                case 4:
                case 5:
                    if (!model.empty()) {
                        ASSERT_EQ(q.front(), model.front()) << "seed " << seed;
                        q.pop_front();
                        model.pop_front();
                    }
                    break;
                case 6:
                    if (!model.empty()) {
                        ASSERT_EQ(q.back(), model.back()) << "seed " << seed;
                        q.pop_back();
                        model.pop_back();
                    }
                    break;
                case 7:
                    if (rng() % 16 == 0) {
                        q.clear();
                        model.clear();
                    }
                    break;
            }
            ASSERT_EQ(q.size(), model.size()) << "seed " << seed << " step " << step;
            ASSERT_EQ(q.empty(), model.empty());
        }
        const lazy_deque<int> copy = q;
        EXPECT_EQ(std::vector<int>(copy.begin(), copy.end()),
                  std::vector<int>(model.begin(), model.end()))
            << "seed " << seed;
    }
}

}  // namespace
}  // namespace starling::base
