#include "routing/retained_trie.h"

#include "unit/routing/naive_match.h"
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <utility>
#include <vector>

namespace starling::routing {
namespace {

using test_support::level_prefixes;
using test_support::naive_matches;
using ::testing::ElementsAre;
using ::testing::IsEmpty;

std::vector<std::string> topics_matching(const retained_trie<int>& trie, std::string_view filter) {
    std::vector<std::string> out;
    trie.match_filter(filter, [&](std::string_view topic, const int& value) {
        out.push_back(std::string(topic) + "=" + std::to_string(value));
    });
    std::sort(out.begin(), out.end());
    return out;
}

TEST(retained_trie, put_replaces_and_erase_removes) {
    retained_trie<int> trie;
    EXPECT_FALSE(trie.put("a/b", 1));
    EXPECT_TRUE(trie.put("a/b", 2));
    EXPECT_EQ(trie.size(), 1U);
    EXPECT_THAT(topics_matching(trie, "a/b"), ElementsAre("a/b=2"));
    EXPECT_FALSE(trie.erase("a"));  // an interior node holds no value
    EXPECT_FALSE(trie.erase("a/b/c"));
    EXPECT_TRUE(trie.erase("a/b"));
    EXPECT_FALSE(trie.erase("a/b"));
    EXPECT_EQ(trie.size(), 0U);
    EXPECT_EQ(trie.node_count(), 1U);
    EXPECT_THAT(topics_matching(trie, "#"), IsEmpty());
}

TEST(retained_trie, exact_plus_and_hash_filters) {
    retained_trie<int> trie;
    trie.put("a", 1);
    trie.put("a/b", 2);
    trie.put("a/b/c", 3);
    trie.put("a//c", 4);
    trie.put("x/b", 5);
    trie.put("/", 6);
    EXPECT_THAT(topics_matching(trie, "a/b"), ElementsAre("a/b=2"));
    EXPECT_THAT(topics_matching(trie, "a/+"), ElementsAre("a/b=2"));
    EXPECT_THAT(topics_matching(trie, "a/+/c"), ElementsAre("a//c=4", "a/b/c=3"));
    EXPECT_THAT(topics_matching(trie, "+/b"), ElementsAre("a/b=2", "x/b=5"));
    EXPECT_THAT(topics_matching(trie, "a/#"), ElementsAre("a//c=4", "a/b/c=3", "a/b=2", "a=1"));
    EXPECT_THAT(topics_matching(trie, "+/+"), ElementsAre("/=6", "a/b=2", "x/b=5"));
    EXPECT_THAT(topics_matching(trie, "#"),
                ElementsAre("/=6", "a//c=4", "a/b/c=3", "a/b=2", "a=1", "x/b=5"));
    EXPECT_THAT(topics_matching(trie, "b/#"), IsEmpty());
}

TEST(retained_trie, wildcards_skip_dollar_topics_at_the_first_level) {
    retained_trie<int> trie;
    trie.put("$SYS/load", 1);
    trie.put("a/$x", 2);
    EXPECT_THAT(topics_matching(trie, "#"), ElementsAre("a/$x=2"));
    EXPECT_THAT(topics_matching(trie, "+/load"), IsEmpty());
    EXPECT_THAT(topics_matching(trie, "+/#"), ElementsAre("a/$x=2"));
    EXPECT_THAT(topics_matching(trie, "$SYS/#"), ElementsAre("$SYS/load=1"));
    EXPECT_THAT(topics_matching(trie, "$SYS/+"), ElementsAre("$SYS/load=1"));
    EXPECT_THAT(topics_matching(trie, "a/+"), ElementsAre("a/$x=2"));
}

TEST(retained_trie, erase_prunes_empty_nodes_only) {
    retained_trie<int> trie;
    trie.put("a/b/c", 1);
    trie.put("a", 2);
    EXPECT_EQ(trie.node_count(), 4U);
    EXPECT_TRUE(trie.erase("a/b/c"));
    EXPECT_EQ(trie.node_count(), 2U);  // "a" keeps its value
    EXPECT_TRUE(trie.erase("a"));
    EXPECT_EQ(trie.node_count(), 1U);
}

TEST(retained_trie, holds_move_only_shared_values_and_visits_them_by_value_only) {
    retained_trie<std::shared_ptr<const std::string>> trie;
    trie.put("t", std::make_shared<const std::string>("payload"));
    std::vector<std::string> seen;
    trie.match_filter("t",
                      [&](const std::shared_ptr<const std::string>& v) { seen.push_back(*v); });
    EXPECT_THAT(seen, ElementsAre("payload"));
}

TEST(retained_trie, deep_topics_are_walked_and_torn_down_without_recursion) {
    retained_trie<int> trie;
    std::string topic = "a";
    for (int k = 0; k < 30000; ++k) {
        topic += "/b";
    }
    trie.put(topic, 1);
    trie.put("a", 2);
    EXPECT_EQ(topics_matching(trie, "a/#").size(), 2U);
    EXPECT_EQ(topics_matching(trie, "#").size(), 2U);
    EXPECT_EQ(trie.node_count(), 30002U);
    // destructor frees the 30001-level chain
}

TEST(retained_trie, agrees_with_a_brute_force_matcher) {
    std::mt19937 rng(424242);
    const std::vector<std::string> topic_levels = {"a", "b", "", "$sys"};
    const std::vector<std::string> filter_levels = {"a", "b", "", "$sys", "+"};
    const auto random_path = [&](const std::vector<std::string>& alphabet, bool wildcard_tail) {
        const std::size_t levels = 1 + rng() % 4;
        std::string path;
        for (std::size_t i = 0; i < levels; ++i) {
            if (i != 0) {
                path += '/';
            }
            if (wildcard_tail && i + 1 == levels && rng() % 4 == 0) {
                path += '#';
            } else {
                path += alphabet[rng() % alphabet.size()];
            }
        }
        return path;
    };

    retained_trie<int> trie;
    std::map<std::string, int> model;
    std::map<std::string, int> node_refs;  // how many stored topics need each node
    const auto count_nodes = [&](const std::string& topic, int delta) {
        for (auto& prefix : level_prefixes(topic)) {
            if ((node_refs[prefix] += delta) == 0) {
                node_refs.erase(prefix);
            }
        }
    };
    for (int step = 0; step < 6000; ++step) {
        // Alternate between filling up to ~100 topics and draining to empty.
        const std::size_t target = (step / 500) % 2 == 0 ? 100 : 0;
        const bool grow = model.empty() || rng() % 100 < (model.size() < target ? 70U : 25U);
        if (grow) {
            const std::string topic = random_path(topic_levels, false);
            const int value = static_cast<int>(rng() % 1000);
            const bool existed = model.contains(topic);
            ASSERT_EQ(trie.put(topic, value), existed);
            if (!existed) {
                count_nodes(topic, 1);
            }
            model[topic] = value;
        } else if (rng() % 4 == 0) {
            // usually absent
            const std::string topic = random_path(topic_levels, false);
            const bool existed = model.erase(topic) > 0;
            ASSERT_EQ(trie.erase(topic), existed);
            if (existed) {
                count_nodes(topic, -1);
            }
        } else {
            auto it = model.begin();
            std::advance(it, static_cast<long>(rng() % model.size()));
            const std::string topic = it->first;
            model.erase(it);
            ASSERT_TRUE(trie.erase(topic));
            count_nodes(topic, -1);
        }
        ASSERT_EQ(trie.size(), model.size());
        ASSERT_EQ(trie.node_count(), 1 + node_refs.size()) << "pruning is off at step " << step;

        for (int probe = 0; probe < 3; ++probe) {
            const std::string filter = random_path(filter_levels, true);
            std::vector<std::pair<std::string, int>> expected;
            for (const auto& [t, v] : model) {
                if (naive_matches(filter, t)) {
                    expected.emplace_back(t, v);
                }
            }
            std::vector<std::pair<std::string, int>> actual;
            trie.match_filter(filter, [&](std::string_view t, const int& v) {
                actual.emplace_back(std::string(t), v);
            });
            std::sort(actual.begin(), actual.end());
            ASSERT_EQ(actual, expected) << "filter '" << filter << "' at step " << step;
        }
    }
    for (const auto& [topic, value] : model) {
        ASSERT_TRUE(trie.erase(topic));
    }
    EXPECT_EQ(trie.size(), 0U);
    EXPECT_EQ(trie.node_count(), 1U);
}

}  // namespace
}  // namespace starling::routing
