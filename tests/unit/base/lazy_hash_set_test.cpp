#include "base/lazy_hash_set.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <unordered_set>

namespace starling::base {
namespace {

TEST(lazy_hash_set, reading_and_erasing_a_never_used_set_allocates_nothing) {
    lazy_hash_set<std::uint16_t> s;
    EXPECT_TRUE(s.empty());
    EXPECT_EQ(s.size(), 0U);
    EXPECT_FALSE(s.contains(7));
    EXPECT_EQ(s.erase(7), 0U);
    s.clear();
    EXPECT_FALSE(s.allocated());
    EXPECT_EQ(sizeof(s), sizeof(void*));
}

TEST(lazy_hash_set, copies_are_independent_and_a_moved_from_set_is_empty_and_usable) {
    lazy_hash_set<std::uint16_t> a;
    EXPECT_TRUE(a.insert(1));
    EXPECT_FALSE(a.insert(1));
    lazy_hash_set<std::uint16_t> copy = a;
    copy.insert(2);
    EXPECT_FALSE(a.contains(2));
    lazy_hash_set<std::uint16_t> moved = std::move(a);
    EXPECT_TRUE(moved.contains(1));
    EXPECT_TRUE(a.empty());  // NOLINT(bugprone-use-after-move): the documented moved-from state
    a.insert(3);
    EXPECT_TRUE(a.contains(3));
}

// Random operation sequences against std::unordered_set as the reference model.
TEST(lazy_hash_set, behaves_as_std_unordered_set_under_random_operations) {
    for (std::uint32_t seed = 1; seed <= 50; ++seed) {
        std::mt19937 rng(seed);
        lazy_hash_set<std::uint16_t> s;
        std::unordered_set<std::uint16_t> model;
        for (int step = 0; step < 2'000; ++step) {
            const auto id = static_cast<std::uint16_t>(rng() % 64);  // small: many repeats
            switch (rng() % 6) {
                case 0:
                case 1:
                    ASSERT_EQ(s.insert(id), model.insert(id).second) << "seed " << seed;
                    break;
                case 2:
                case 3:
                    ASSERT_EQ(s.erase(id), model.erase(id)) << "seed " << seed;
                    break;
                case 4:
                    ASSERT_EQ(s.contains(id), model.contains(id)) << "seed " << seed;
                    break;
                case 5:
                    if (rng() % 50 == 0) {
                        s.clear();
                        model.clear();
                    }
                    break;
            }
            ASSERT_EQ(s.size(), model.size()) << "seed " << seed << " step " << step;
            ASSERT_EQ(s.empty(), model.empty());
        }
    }
}

}  // namespace
}  // namespace starling::base
