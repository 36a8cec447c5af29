// Readers match while writers subscribe, unsubscribe and replace. Checked on every match:
//   - every permanent subscription is seen exactly once when it matches, never otherwise;
//   - a churned subscription is never seen once its unsubscribe has returned (and before the
//     next subscribe started), and is always seen once its subscribe has returned (until the
//     next unsubscribe starts), with the identifier of that generation;
//   - a subscription replaced over and over is seen exactly once, and never goes back in time;
//   - every filter reported matches the topic.
// Built and run under ThreadSanitizer as well (build/routing-tsan), where it must be clean.

#include "routing/subscription_trie.h"

#include "unit/routing/naive_match.h"
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <cstdint>
#include <random>
#include <string>
#include <thread>
#include <vector>

namespace starling::routing {
namespace {

using test_support::naive_matches;

constexpr int writer_count = 2;
constexpr int reader_count = 3;
constexpr int clients_per_writer = 24;
constexpr int client_count = writer_count * clients_per_writer;
constexpr int ops_per_writer = 20000;

const std::vector<std::string> topics = {"s/p/x", "s/q/x", "$SYS/p/x", "s/p/x/deeper"};

struct permanent {
    std::string filter;
    std::string client_id;
    std::string share_group;
};
// "t0" is also a churned client: its shared entry must not be confused with its plain one.
const std::vector<permanent> permanents = {
    {"s/p/x", "perm0", ""}, {"s/+/x", "perm1", ""},  {"s/#", "perm2", ""}, {"#", "perm3", ""},
    {"+/p/x", "perm4", ""}, {"$SYS/#", "perm5", ""}, {"s/p/x", "t0", "g"}, {"s/p/y", "perm7", ""},
};

// The filter churned client `client` uses in generation `gen`: mostly filters along the readers'
// paths (so entry tables holding permanent entries are rebuilt), plus one unique filter per
// client below "s" (so the child table of "s", on every permanent path, grows and shrinks).
std::string churn_filter(int client, std::uint64_t gen) {
    static const std::vector<std::string> filters = {
        "s/p/x", "s/+/x", "s/#",   "#",        "s/p/#",        "s/p/y",
        "s/q/x", "+/+/+", "+/p/#", "$SYS/p/x", "s/p/x/deeper", "",
    };
    const std::string& f = filters[(static_cast<std::uint64_t>(client) + gen) % filters.size()];
    return f.empty() ? "s/u" + std::to_string(client) + "/x" : f;
}

std::string client_name(int client) { return "t" + std::to_string(client); }

// state = generation * 4 + phase
enum phase : std::uint64_t { unsubscribed = 0, subscribing = 1, subscribed = 2, unsubscribing = 3 };

struct shared_state {
    subscription_trie trie;
    std::atomic<std::uint64_t> states[client_count] = {};
    std::atomic<bool> writers_done{false};
    std::atomic<std::uint64_t> matches{0};
    std::atomic<std::uint64_t> violations{0};
    std::atomic<std::uint64_t> replaced_sid{0};
};

void report(shared_state& st, const std::string& what) {
    // First few only; the count is what fails the test.
    if (st.violations.fetch_add(1) < 10) {
        ADD_FAILURE() << what;
    }
}

void run_writer(shared_state& st, int writer) {
    rcu_reader_registration registration;
    std::mt19937 rng(1000 + static_cast<unsigned>(writer));
    for (int op = 0; op < ops_per_writer; ++op) {
        if (writer == 0 && op % 5 == 0) {
            const std::uint64_t sid = st.replaced_sid.load(std::memory_order_relaxed) + 1;
            st.trie.subscribe("s/p/x", {"replaced", {}, static_cast<std::uint32_t>(sid), ""});
            st.replaced_sid.store(sid, std::memory_order_release);
            continue;
        }
        const int client =
            writer * clients_per_writer + static_cast<int>(rng() % clients_per_writer);
        std::atomic<std::uint64_t>& state = st.states[client];
        const std::uint64_t s = state.load(std::memory_order_relaxed);
        const std::uint64_t gen = s / 4;
        if (s % 4 == unsubscribed) {
            state.store(gen * 4 + subscribing, std::memory_order_release);
            subscription sub{client_name(client), {}, static_cast<std::uint32_t>(gen), ""};
            sub.options.qos = static_cast<std::uint8_t>(client % 3);
            if (st.trie.subscribe(churn_filter(client, gen), std::move(sub))) {
                report(st, "subscribe of a fresh generation replaced something");
            }
            state.store(gen * 4 + subscribed, std::memory_order_release);
        } else {
            state.store(gen * 4 + unsubscribing, std::memory_order_release);
            if (!st.trie.unsubscribe(churn_filter(client, gen), client_name(client))) {
                report(st, "unsubscribe did not find the entry");
            }
            state.store((gen + 1) * 4 + unsubscribed, std::memory_order_release);
        }
    }
}

void run_reader(shared_state& st, int reader) {
    rcu_reader_registration registration;
    std::vector<std::uint64_t> before(client_count);
    std::vector<int> seen(client_count);
    std::vector<std::uint32_t> seen_sid(client_count);
    std::vector<int> permanent_seen(permanents.size());
    std::uint64_t last_replaced_sid = 0;
    auto round = static_cast<std::uint64_t>(reader);
    int iterations = 0;
    do {
        const std::string& topic = topics[round++ % topics.size()];
        for (int c = 0; c < client_count; ++c) {
            before[c] = st.states[c].load(std::memory_order_acquire);
        }
        std::fill(seen.begin(), seen.end(), 0);
        std::fill(permanent_seen.begin(), permanent_seen.end(), 0);
        // Read before the match: once it is non-zero the entry exists for the whole match.
        const std::uint64_t replaced_before = st.replaced_sid.load(std::memory_order_acquire);
        int replaced_seen = 0;
        std::uint64_t replaced_sid = 0;
        bool filters_ok = true;
        st.trie.match(topic, [&](std::string_view filter, const subscription& s) {
            filters_ok = filters_ok && naive_matches(filter, topic);
            if (s.client_id == "replaced") {
                ++replaced_seen;
                replaced_sid = s.subscription_identifier.value_or(0);
                return;
            }
            for (std::size_t p = 0; p < permanents.size(); ++p) {
                if (s.client_id == permanents[p].client_id &&
                    s.share_group == permanents[p].share_group) {
                    ++permanent_seen[p];
                    filters_ok = filters_ok && filter == permanents[p].filter;
                    return;
                }
            }
            int client = -1;
            const char* first = s.client_id.data() + 1;
            const char* last = s.client_id.data() + s.client_id.size();
            if (s.client_id.size() < 2 || s.client_id[0] != 't' || !s.share_group.empty() ||
                std::from_chars(first, last, client).ptr != last || client < 0 ||
                client >= client_count || s.options.qos != client % 3) {
                filters_ok = false;
                return;
            }
            ++seen[client];
            seen_sid[client] = s.subscription_identifier.value_or(~0U);
        });
        if (!filters_ok) {
            report(st, "a visited entry is malformed or its filter does not match " + topic);
        }
        for (std::size_t p = 0; p < permanents.size(); ++p) {
            const int expected = naive_matches(permanents[p].filter, topic) ? 1 : 0;
            if (permanent_seen[p] != expected) {
                report(st, "permanent " + permanents[p].filter + " seen " +
                               std::to_string(permanent_seen[p]) + " times for " + topic);
            }
        }
        if (topic == "s/p/x" && replaced_before > 0) {
            if (replaced_seen != 1 || replaced_sid < std::max(last_replaced_sid, replaced_before)) {
                report(st, "replaced entry seen " + std::to_string(replaced_seen) + " times, sid " +
                               std::to_string(replaced_sid) + " after " +
                               std::to_string(last_replaced_sid));
            }
            last_replaced_sid = replaced_sid;
        }
        for (int c = 0; c < client_count; ++c) {
            const std::uint64_t after = st.states[c].load(std::memory_order_acquire);
            if (after != before[c]) {
                // A write overlapped the match: the old entry, the new one, both (an unsubscribe
                // and the next subscribe on another filter both overlapped) or neither is right.
                continue;
            }
            if (seen[c] > 1) {
                report(st, client_name(c) + " seen twice");
            }
            const std::uint64_t gen = after / 4;
            if (after % 4 == unsubscribed && seen[c] != 0) {
                report(st, client_name(c) + " seen after its unsubscribe returned");
            }
            if (after % 4 == subscribed) {
                const bool expected = naive_matches(churn_filter(c, gen), topic);
                if (expected != (seen[c] == 1)) {
                    report(st, client_name(c) + " gen " + std::to_string(gen) + " on " +
                                   churn_filter(c, gen) +
                                   (expected ? " missed " : " wrongly seen ") + "for " + topic);
                } else if (expected && seen_sid[c] != gen) {
                    report(st, client_name(c) + " seen with a stale generation");
                }
            }
        }
        st.matches.fetch_add(1, std::memory_order_relaxed);
        ++iterations;
    } while (!st.writers_done.load(std::memory_order_acquire) || iterations < 100);
}

TEST(subscription_trie_concurrency, readers_see_a_consistent_trie_while_writers_churn) {
    shared_state st;
    {
        rcu_reader_registration registration;
        for (const auto& p : permanents) {
            st.trie.subscribe(p.filter, {p.client_id, {}, std::nullopt, p.share_group});
        }
    }
    std::vector<std::thread> readers;
    readers.reserve(reader_count);
    for (int r = 0; r < reader_count; ++r) {
        readers.emplace_back(run_reader, std::ref(st), r);
    }
    std::vector<std::thread> writers;
    writers.reserve(writer_count);
    for (int w = 0; w < writer_count; ++w) {
        writers.emplace_back(run_writer, std::ref(st), w);
    }
    for (auto& t : writers) {
        t.join();
    }
    st.writers_done.store(true, std::memory_order_release);
    for (auto& t : readers) {
        t.join();
    }

    EXPECT_EQ(st.violations.load(), 0U);
    EXPECT_GE(st.matches.load(), static_cast<std::uint64_t>(reader_count) * 100);
    RecordProperty("matches", std::to_string(st.matches.load()));

    // Writers are done: the trie must hold exactly the permanents, "replaced" and the subscribed.
    std::size_t subscribed_now = 0;
    for (const auto& state : st.states) {
        subscribed_now += state.load() % 4 == subscribed ? 1 : 0;
    }
    EXPECT_EQ(st.trie.subscription_count(), permanents.size() + 1 + subscribed_now);

    rcu_reader_registration registration;
    for (int c = 0; c < client_count; ++c) {
        const std::uint64_t s = st.states[c].load();
        if (s % 4 == subscribed) {
            EXPECT_TRUE(st.trie.unsubscribe(churn_filter(c, s / 4), client_name(c)));
        }
    }
    for (const auto& p : permanents) {
        EXPECT_TRUE(st.trie.unsubscribe(p.filter, p.client_id, p.share_group));
    }
    EXPECT_TRUE(st.trie.unsubscribe("s/p/x", "replaced"));
    EXPECT_EQ(st.trie.subscription_count(), 0U);
    EXPECT_EQ(st.trie.node_count(), 1U);
}

}  // namespace
}  // namespace starling::routing
