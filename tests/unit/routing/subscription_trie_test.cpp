#include "routing/subscription_trie.h"

#include "unit/routing/naive_match.h"
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <random>
#include <string>
#include <tuple>
#include <vector>

namespace starling::routing {
namespace {

using test_support::level_prefixes;
using test_support::naive_matches;
using ::testing::ElementsAre;
using ::testing::IsEmpty;
using ::testing::UnorderedElementsAre;

subscription make_sub(std::string client, std::uint8_t qos = 0, std::string group = {},
                      std::optional<std::uint32_t> id = std::nullopt) {
    subscription s;
    s.client_id = std::move(client);
    s.options.qos = qos;
    s.share_group = std::move(group);
    s.subscription_identifier = id;
    return s;
}

// "filter client" for every match, sorted; share group appended as "@group" when set.
std::vector<std::string> matches(const subscription_trie& trie, std::string_view topic) {
    std::vector<std::string> out;
    trie.match(topic, [&](std::string_view filter, const subscription& s) {
        std::string line = std::string(filter) + " " + s.client_id;
        if (!s.share_group.empty()) {
            line += "@" + s.share_group;
        }
        out.push_back(std::move(line));
    });
    std::sort(out.begin(), out.end());
    return out;
}

class subscription_trie_test : public ::testing::Test {
  protected:
    rcu_reader_registration registration_;  // the test thread matches
    subscription_trie trie_;
};

TEST_F(subscription_trie_test, empty_trie_matches_nothing) {
    EXPECT_THAT(matches(trie_, "a/b"), IsEmpty());
    EXPECT_EQ(trie_.subscription_count(), 0U);
    EXPECT_EQ(trie_.node_count(), 1U);
}

TEST_F(subscription_trie_test, exact_filter_matches_only_the_same_topic) {
    EXPECT_FALSE(trie_.subscribe("a/b/c", make_sub("c1")));
    EXPECT_THAT(matches(trie_, "a/b/c"), ElementsAre("a/b/c c1"));
    EXPECT_THAT(matches(trie_, "a/b"), IsEmpty());
    EXPECT_THAT(matches(trie_, "a/b/c/d"), IsEmpty());
    EXPECT_THAT(matches(trie_, "a/b/x"), IsEmpty());
    EXPECT_THAT(matches(trie_, "a/b/c/"), IsEmpty());
    EXPECT_EQ(trie_.node_count(), 4U);
    EXPECT_EQ(trie_.subscription_count(), 1U);
}

TEST_F(subscription_trie_test, plus_matches_exactly_one_level_including_an_empty_one) {
    trie_.subscribe("a/+/b", make_sub("c1"));
    trie_.subscribe("+", make_sub("c2"));
    trie_.subscribe("+/+", make_sub("c3"));
    EXPECT_THAT(matches(trie_, "a/x/b"), ElementsAre("a/+/b c1"));
    EXPECT_THAT(matches(trie_, "a//b"), ElementsAre("a/+/b c1"));
    EXPECT_THAT(matches(trie_, "a/b"), ElementsAre("+/+ c3"));
    EXPECT_THAT(matches(trie_, "a/x/y/b"), IsEmpty());
    EXPECT_THAT(matches(trie_, "a"), ElementsAre("+ c2"));
    EXPECT_THAT(matches(trie_, "/"), ElementsAre("+/+ c3"));
}

TEST_F(subscription_trie_test, hash_matches_the_parent_level_and_everything_below) {
    trie_.subscribe("a/#", make_sub("c1"));
    trie_.subscribe("#", make_sub("c2"));
    trie_.subscribe("+/#", make_sub("c3"));
    EXPECT_THAT(matches(trie_, "a"), ElementsAre("# c2", "+/# c3", "a/# c1"));
    EXPECT_THAT(matches(trie_, "a/b/c"), ElementsAre("# c2", "+/# c3", "a/# c1"));
    EXPECT_THAT(matches(trie_, "a/"), ElementsAre("# c2", "+/# c3", "a/# c1"));
    EXPECT_THAT(matches(trie_, "ab"), ElementsAre("# c2", "+/# c3"));
    EXPECT_THAT(matches(trie_, "/a"), ElementsAre("# c2", "+/# c3"));
}

TEST_F(subscription_trie_test, wildcards_never_match_a_first_level_starting_with_dollar) {
    trie_.subscribe("#", make_sub("hash"));
    trie_.subscribe("+/x", make_sub("plus"));
    trie_.subscribe("+/#", make_sub("plus_hash"));
    trie_.subscribe("+", make_sub("plus_only"));
    trie_.subscribe("$SYS/#", make_sub("sys_hash"));
    trie_.subscribe("$SYS/+", make_sub("sys_plus"));
    trie_.subscribe("a/+", make_sub("deeper"));
    EXPECT_THAT(matches(trie_, "$SYS/x"), ElementsAre("$SYS/# sys_hash", "$SYS/+ sys_plus"));
    EXPECT_THAT(matches(trie_, "$SYS"), ElementsAre("$SYS/# sys_hash"));
    // '$' only matters at the first level.
    EXPECT_THAT(matches(trie_, "a/$b"), ElementsAre("# hash", "+/# plus_hash", "a/+ deeper"));
}

TEST_F(subscription_trie_test, second_subscribe_of_the_same_client_replaces_the_entry) {
    EXPECT_FALSE(trie_.subscribe("a/b", make_sub("c1", 0, {}, 7)));
    EXPECT_TRUE(trie_.subscribe("a/b", make_sub("c1", 2, {}, 9)));
    EXPECT_EQ(trie_.subscription_count(), 1U);
    std::vector<subscription> seen;
    trie_.match("a/b", [&](const subscription& s) { seen.push_back(s); });
    ASSERT_EQ(seen.size(), 1U);
    EXPECT_EQ(seen[0], make_sub("c1", 2, {}, 9));
}

TEST_F(subscription_trie_test, share_groups_are_kept_apart) {
    EXPECT_FALSE(trie_.subscribe("a/b", make_sub("c1")));
    EXPECT_FALSE(trie_.subscribe("a/b", make_sub("c1", 1, "g1")));
    EXPECT_FALSE(trie_.subscribe("a/b", make_sub("c1", 1, "g2")));
    EXPECT_TRUE(trie_.subscribe("a/b", make_sub("c1", 2, "g2")));
    EXPECT_EQ(trie_.subscription_count(), 3U);
    EXPECT_THAT(matches(trie_, "a/b"), ElementsAre("a/b c1", "a/b c1@g1", "a/b c1@g2"));

    EXPECT_FALSE(trie_.unsubscribe("a/b", "c1", "g3"));
    EXPECT_TRUE(trie_.unsubscribe("a/b", "c1", "g1"));
    EXPECT_FALSE(trie_.unsubscribe("a/b", "c1", "g1"));
    EXPECT_THAT(matches(trie_, "a/b"), ElementsAre("a/b c1", "a/b c1@g2"));
    EXPECT_TRUE(trie_.unsubscribe("a/b", "c1"));
    EXPECT_THAT(matches(trie_, "a/b"), ElementsAre("a/b c1@g2"));
    EXPECT_EQ(trie_.subscription_count(), 1U);
}

TEST_F(subscription_trie_test, unsubscribe_prunes_every_empty_node) {
    const std::vector<std::string> filters = {"a/b/c", "a/b",     "a/+/c", "a/#",     "#",
                                              "+",     "x/y/z/w", "a//",   "$SYS/+/#"};
    for (const auto& f : filters) {
        trie_.subscribe(f, make_sub("c1"));
        trie_.subscribe(f, make_sub("c2", 0, "g"));
    }
    // root + a, a/b, a/b/c, a/+, a/+/c, a/#, #, +, x, x/y, x/y/z, x/y/z/w, a/, a//, $SYS,
    // $SYS/+, $SYS/+/#
    EXPECT_EQ(trie_.node_count(), 18U);
    EXPECT_EQ(trie_.subscription_count(), 2 * filters.size());

    EXPECT_FALSE(trie_.unsubscribe("a/b/c/d", "c1"));  // looking up creates nothing
    EXPECT_FALSE(trie_.unsubscribe("q/+", "c1"));
    EXPECT_EQ(trie_.node_count(), 18U);

    for (const auto& f : filters) {
        EXPECT_TRUE(trie_.unsubscribe(f, "c1")) << f;
    }
    EXPECT_EQ(trie_.node_count(), 18U);  // the shared entries still hold every node
    trie_.unsubscribe("a/b", "c2", "g");
    EXPECT_EQ(trie_.node_count(), 18U);  // a/b still has the child c
    trie_.unsubscribe("x/y/z/w", "c2", "g");
    EXPECT_EQ(trie_.node_count(), 14U);
    for (const auto& f : filters) {
        trie_.unsubscribe(f, "c2", "g");
    }
    EXPECT_EQ(trie_.node_count(), 1U);
    EXPECT_EQ(trie_.subscription_count(), 0U);
    EXPECT_THAT(matches(trie_, "a/b/c"), IsEmpty());
}

TEST_F(subscription_trie_test, visitor_learns_the_filter_that_matched) {
    trie_.subscribe("a/+/c", make_sub("c1"));
    trie_.subscribe("a/b/#", make_sub("c1"));
    std::multiset<std::string> filters;
    trie_.match("a/b/c", [&](std::string_view filter, const subscription& s) {
        EXPECT_EQ(s.client_id, "c1");
        filters.emplace(filter);
    });
    EXPECT_THAT(filters, UnorderedElementsAre("a/+/c", "a/b/#"));
}

TEST_F(subscription_trie_test, wide_nodes_grow_and_shrink) {
    constexpr int count = 3000;
    for (int i = 0; i < count; ++i) {
        trie_.subscribe("devices/" + std::to_string(i) + "/cmd", make_sub("d" + std::to_string(i)));
        trie_.subscribe("broadcast", make_sub("d" + std::to_string(i)));
    }
    EXPECT_EQ(trie_.node_count(), 1U + 1U + 2U * count + 1U);
    for (int i = 0; i < count; i += 97) {
        EXPECT_THAT(matches(trie_, "devices/" + std::to_string(i) + "/cmd"),
                    ElementsAre("devices/" + std::to_string(i) + "/cmd d" + std::to_string(i)));
    }
    std::size_t seen = 0;
    trie_.match("broadcast", [&](const subscription&) { ++seen; });
    EXPECT_EQ(seen, static_cast<std::size_t>(count));

    for (int i = 0; i < count; ++i) {
        if (i % 10 != 0) {
            EXPECT_TRUE(trie_.unsubscribe("devices/" + std::to_string(i) + "/cmd",
                                          "d" + std::to_string(i)));
            EXPECT_TRUE(trie_.unsubscribe("broadcast", "d" + std::to_string(i)));
        }
    }
    for (int i = 0; i < count; ++i) {
        const auto topic = "devices/" + std::to_string(i) + "/cmd";
        EXPECT_EQ(matches(trie_, topic).size(), i % 10 == 0 ? 1U : 0U) << topic;
    }
    seen = 0;
    trie_.match("broadcast", [&](const subscription& s) {
        EXPECT_EQ(std::stoi(s.client_id.substr(1)) % 10, 0);
        ++seen;
    });
    EXPECT_EQ(seen, static_cast<std::size_t>(count / 10));
    for (int i = 0; i < count; i += 10) {
        trie_.unsubscribe("devices/" + std::to_string(i) + "/cmd", "d" + std::to_string(i));
        trie_.unsubscribe("broadcast", "d" + std::to_string(i));
    }
    EXPECT_EQ(trie_.node_count(), 1U);
    EXPECT_EQ(trie_.subscription_count(), 0U);
}

// A walk with more pending branches than the walker keeps on the stack still finds everything.
TEST_F(subscription_trie_test, deep_branching_filters_spill_the_walk_to_the_heap) {
    constexpr int depth = 200;
    std::string prefix;
    std::string topic = "a";
    for (int k = 0; k < depth; ++k) {
        trie_.subscribe(prefix + "+/#", make_sub("c" + std::to_string(k)));
        prefix += "a/";
        topic += "/a";
    }
    // every node a^k has a '+' child and an 'a' child: the walk keeps ~depth branches pending
    std::size_t seen = 0;
    trie_.match(topic, [&](std::string_view filter, const subscription&) {
        EXPECT_TRUE(naive_matches(filter, topic));
        ++seen;
    });
    EXPECT_EQ(seen, static_cast<std::size_t>(depth));
    prefix.clear();
    for (int k = 0; k < depth; ++k) {
        EXPECT_TRUE(trie_.unsubscribe(prefix + "+/#", "c" + std::to_string(k)));
        prefix += "a/";
    }
    EXPECT_EQ(trie_.node_count(), 1U);
}

TEST_F(subscription_trie_test, very_deep_filter_neither_recurses_nor_fails) {
    std::string filter = "a";
    for (int k = 0; k < 20000; ++k) {
        filter += "/+";
    }
    std::string topic = "a";
    for (int k = 0; k < 20000; ++k) {
        topic += "/x";
    }
    trie_.subscribe(filter, make_sub("deep"));
    EXPECT_EQ(matches(trie_, topic).size(), 1U);
    EXPECT_TRUE(trie_.unsubscribe(filter, "deep"));
    EXPECT_EQ(trie_.node_count(), 1U);
    trie_.subscribe(filter, make_sub("deep"));  // left for the destructor to free
}

// An entry unsubscribed while a reader is inside its critical section stays readable until the
// reader leaves: unsubscribe defers the free (and does not wait for the reader, which would
// deadlock here since both run on this thread). ASan builds turn a premature free into a report.
TEST_F(subscription_trie_test, unsubscribed_entry_stays_readable_inside_the_read_section) {
    trie_.subscribe("a/b", make_sub("c1", 1, {}, 42));
    {
        rcu_read_guard guard;
        const subscription* held = nullptr;
        trie_.match("a/b", [&](const subscription& s) { held = &s; });
        ASSERT_NE(held, nullptr);
        EXPECT_TRUE(trie_.unsubscribe("a/b", "c1"));
        EXPECT_EQ(trie_.node_count(), 1U);
        EXPECT_THAT(matches(trie_, "a/b"), IsEmpty());
        EXPECT_EQ(held->client_id, "c1");
        EXPECT_EQ(held->subscription_identifier, 42U);
    }
}

TEST(rcu_reader_registration, nests_per_thread) {
    EXPECT_FALSE(rcu_reader_registration::this_thread_registered());
    {
        rcu_reader_registration outer;
        {
            rcu_reader_registration inner;
            EXPECT_TRUE(rcu_reader_registration::this_thread_registered());
        }
        EXPECT_TRUE(rcu_reader_registration::this_thread_registered());
    }
    EXPECT_FALSE(rcu_reader_registration::this_thread_registered());
}

// --- randomized comparison with a brute-force matcher ---------------------------------------

// Small alphabets so that filters and topics collide often.
const std::vector<std::string> filter_levels = {"a", "b", "", "$sys", "+"};
const std::vector<std::string> topic_levels = {"a", "b", "", "$sys"};

std::string random_filter(std::mt19937& rng) {
    const std::size_t levels = 1 + rng() % 4;
    std::string filter;
    for (std::size_t i = 0; i < levels; ++i) {
        if (i != 0) {
            filter += '/';
        }
        if (i + 1 == levels && rng() % 4 == 0) {
            filter += '#';
        } else {
            filter += filter_levels[rng() % filter_levels.size()];
        }
    }
    return filter;
}

std::string random_topic(std::mt19937& rng) {
    const std::size_t levels = 1 + rng() % 4;
    std::string topic;
    for (std::size_t i = 0; i < levels; ++i) {
        if (i != 0) {
            topic += '/';
        }
        topic += topic_levels[rng() % topic_levels.size()];
    }
    return topic;
}

TEST_F(subscription_trie_test, agrees_with_a_brute_force_matcher) {
    std::mt19937 rng(20240601);
    const std::vector<std::string> clients = {"c0", "c1", "c2", "c3", "c4"};
    const std::vector<std::string> groups = {"", "g"};
    // (filter, client, group) -> qos
    std::map<std::tuple<std::string, std::string, std::string>, std::uint8_t> model;
    // How many model entries need each trie node (named by its filter prefix).
    std::map<std::string, int> node_refs;
    const auto count_nodes = [&](const std::string& filter, int delta) {
        for (auto& prefix : level_prefixes(filter)) {
            if ((node_refs[prefix] += delta) == 0) {
                node_refs.erase(prefix);
            }
        }
    };

    for (int step = 0; step < 6000; ++step) {
        // Alternate between filling up to ~120 entries and draining to empty.
        const std::size_t target = (step / 500) % 2 == 0 ? 120 : 0;
        const bool grow = model.empty() || rng() % 100 < (model.size() < target ? 70U : 25U);
        if (grow) {
            const std::string filter = random_filter(rng);
            const std::string& client = clients[rng() % clients.size()];
            const std::string& group = groups[rng() % groups.size()];
            const auto qos = static_cast<std::uint8_t>(rng() % 3);
            const bool existed = model.contains({filter, client, group});
            ASSERT_EQ(trie_.subscribe(filter, make_sub(client, qos, group)), existed);
            if (!existed) {
                count_nodes(filter, 1);
            }
            model[{filter, client, group}] = qos;
        } else if (rng() % 4 == 0) {
            // usually absent
            const std::string filter = random_filter(rng);
            const std::string& client = clients[rng() % clients.size()];
            const bool existed = model.erase({filter, client, ""}) > 0;
            ASSERT_EQ(trie_.unsubscribe(filter, client), existed);
            if (existed) {
                count_nodes(filter, -1);
            }
        } else {
            auto it = model.begin();
            std::advance(it, static_cast<long>(rng() % model.size()));
            const auto [filter, client, group] = it->first;
            model.erase(it);
            ASSERT_TRUE(trie_.unsubscribe(filter, client, group));
            count_nodes(filter, -1);
        }

        ASSERT_EQ(trie_.subscription_count(), model.size());
        ASSERT_EQ(trie_.node_count(), 1 + node_refs.size()) << "pruning is off at step " << step;

        for (int probe = 0; probe < 3; ++probe) {
            const std::string topic = random_topic(rng);
            using row = std::tuple<std::string, std::string, std::string, int>;
            std::vector<row> expected;
            for (const auto& [key, qos] : model) {
                if (naive_matches(std::get<0>(key), topic)) {
                    expected.emplace_back(std::get<0>(key), std::get<1>(key), std::get<2>(key),
                                          qos);
                }
            }
            std::vector<row> actual;
            trie_.match(topic, [&](std::string_view filter, const subscription& s) {
                actual.emplace_back(std::string(filter), s.client_id, s.share_group, s.options.qos);
            });
            std::sort(expected.begin(), expected.end());
            std::sort(actual.begin(), actual.end());  // duplicates would survive the sort
            ASSERT_EQ(actual, expected) << "topic '" << topic << "' at step " << step;
        }
    }

    for (const auto& [key, qos] : model) {
        ASSERT_TRUE(trie_.unsubscribe(std::get<0>(key), std::get<1>(key), std::get<2>(key)));
    }
    EXPECT_EQ(trie_.node_count(), 1U);
    EXPECT_EQ(trie_.subscription_count(), 0U);
}

TEST_F(subscription_trie_test, mirrored_entries_never_replace_or_remove_local_ones) {
    subscription local = make_sub("c", 1);
    trie_.subscribe("a/b", local);
    subscription remote = make_sub("c", 2);
    remote.owner_node = "node-b";
    // A record of another node about the same client leaves the local actor's entry alone.
    EXPECT_FALSE(trie_.mirror_subscribe("a/b", remote));
    EXPECT_FALSE(trie_.mirror_unsubscribe("a/b", "c"));
    std::vector<subscription> seen;
    trie_.match("a/b", [&](const subscription& s) { seen.push_back(s); });
    ASSERT_EQ(seen.size(), 1U);
    EXPECT_EQ(seen[0].options.qos, 1);
    EXPECT_TRUE(seen[0].owner_node.empty());

    // A mirrored entry is added, replaced by a newer mirror and removed by a mirror unsubscribe.
    EXPECT_TRUE(trie_.mirror_subscribe("x/+", remote));
    remote.options.qos = 0;
    EXPECT_TRUE(trie_.mirror_subscribe("x/+", remote));
    EXPECT_EQ(trie_.subscription_count(), 2U);
    EXPECT_THAT(matches(trie_, "x/y"), ElementsAre("x/+ c"));
    EXPECT_TRUE(trie_.mirror_unsubscribe("x/+", "c"));
    EXPECT_THAT(matches(trie_, "x/y"), IsEmpty());

    // The local actor subscribing takes over a mirrored entry (the client moved here).
    EXPECT_TRUE(trie_.mirror_subscribe("m", remote));
    EXPECT_TRUE(trie_.subscribe("m", local));
    EXPECT_FALSE(trie_.mirror_unsubscribe("m", "c"));
    EXPECT_THAT(matches(trie_, "m"), ElementsAre("m c"));
}

}  // namespace
}  // namespace starling::routing
