// retained_echoes (src/broker/retained_echoes.h): a SUBSCRIBE's retained copies and the live
// copies routed to the same client agree — each message once, never an older value after a
// newer one.

#include "broker/retained_echoes.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

namespace starling::broker {
namespace {

constexpr std::int64_t now = 1'000'000;

// The live path and the retained store hold different objects of one message.
message_ptr copy_of(const app_message& m) { return std::make_shared<const app_message>(m); }

app_message message(std::string topic, std::string payload, std::int64_t created = now - 5) {
    app_message m;
    m.topic = std::move(topic);
    m.payload = std::move(payload);
    m.retain = true;
    m.publisher_id = "pub";
    m.created_at_ms = created;
    return m;
}

TEST(retained_echoes, a_live_copy_after_the_retained_one_is_skipped_once) {
    retained_echoes e;
    const auto m = message("t/1", "a");
    e.subscribe_started();
    EXPECT_TRUE(e.admit_retained(copy_of(m), now, true));
    e.subscribe_finished();
    EXPECT_TRUE(e.take_live_echo(copy_of(m), now));
    EXPECT_FALSE(e.take_live_echo(copy_of(m), now)) << "only one echo per retained copy";
    EXPECT_TRUE(e.idle(now));
}

TEST(retained_echoes, a_retained_copy_after_its_live_one_is_skipped) {
    retained_echoes e;
    const auto m = message("t/1", "a");
    e.subscribe_started();
    EXPECT_FALSE(e.take_live_echo(copy_of(m), now));
    e.live_sent(copy_of(m), now);
    EXPECT_FALSE(e.admit_retained(copy_of(m), now, true));
    e.subscribe_finished();
    EXPECT_TRUE(e.idle(now));
}

TEST(retained_echoes, a_retained_copy_older_than_a_live_one_is_skipped) {
    retained_echoes e;
    e.subscribe_started();
    e.live_sent(copy_of(message("t/1", "new", now - 2)), now);
    EXPECT_FALSE(e.admit_retained(copy_of(message("t/1", "old", now - 9)), now, true))
        << "the client already has a newer value of t/1";
    EXPECT_TRUE(e.admit_retained(copy_of(message("t/2", "old", now - 9)), now, true));
    EXPECT_TRUE(e.admit_retained(copy_of(message("t/1", "newer", now - 1)), now, true));
}

TEST(retained_echoes, an_older_live_copy_after_the_retained_one_is_skipped_a_newer_one_passes) {
    retained_echoes e;
    e.subscribe_started();
    EXPECT_TRUE(e.admit_retained(copy_of(message("t/1", "two", now - 5)), now, true));
    e.subscribe_finished();
    EXPECT_TRUE(e.take_live_echo(copy_of(message("t/1", "one", now - 8)), now))
        << "replaced before the SUBSCRIBE read the retained set";
    EXPECT_FALSE(e.take_live_echo(copy_of(message("t/1", "three", now - 1)), now));
    // After a newer copy the topic is no longer watched: the retained copy's own live copy was
    // routed before the subscription.
    EXPECT_FALSE(e.take_live_echo(copy_of(message("t/1", "two", now - 5)), now));
    EXPECT_TRUE(e.idle(now));
}

TEST(retained_echoes, messages_of_one_millisecond_are_ordered_by_their_nodes_sequence) {
    const auto on_node = [](std::string payload, std::uint64_t sequence, std::string node) {
        auto m = message("t/1", std::move(payload), now - 5);
        m.node_id = std::move(node);
        m.sequence = sequence;
        return m;
    };
    retained_echoes e;
    e.subscribe_started();
    EXPECT_TRUE(e.admit_retained(copy_of(on_node("two", 8, "a")), now, true));
    e.subscribe_finished();
    EXPECT_TRUE(e.take_live_echo(copy_of(on_node("one", 7, "a")), now)) << "older, same node";
    EXPECT_FALSE(e.take_live_echo(copy_of(on_node("x", 3, "b")), now))
        << "another node's message of the same millisecond: no telling, it passes";
    EXPECT_TRUE(e.take_live_echo(copy_of(on_node("two", 8, "a")), now)) << "the echo";
    EXPECT_TRUE(e.idle(now));
}

TEST(retained_echoes, an_unwatched_retained_copy_leaves_live_copies_alone) {
    retained_echoes e;
    e.subscribe_started();
    EXPECT_TRUE(e.admit_retained(copy_of(message("t/1", "two", now - 5)), now, false));
    e.subscribe_finished();
    EXPECT_FALSE(e.take_live_echo(copy_of(message("t/1", "one", now - 8)), now));
    EXPECT_FALSE(e.take_live_echo(copy_of(message("t/1", "two", now - 5)), now));
}

TEST(retained_echoes, other_messages_pass) {
    retained_echoes e;
    e.subscribe_started();
    e.live_sent(copy_of(message("t/1", "a")), now);
    // Same topic and creation time, another payload or publisher: another message.
    EXPECT_TRUE(e.admit_retained(copy_of(message("t/1", "b")), now, true));
    auto other_publisher = message("t/1", "a");
    other_publisher.publisher_id = "other";
    EXPECT_TRUE(e.admit_retained(copy_of(other_publisher), now, true));
    e.subscribe_finished();
    EXPECT_FALSE(e.take_live_echo(copy_of(message("t/2", "a")), now));
}

TEST(retained_echoes, live_copies_are_collected_only_while_a_subscribe_is_pending) {
    retained_echoes e;
    const auto m = message("t/1", "a");
    e.live_sent(copy_of(m), now);  // no SUBSCRIBE pending: nothing to remember
    EXPECT_TRUE(e.idle(now));
    e.subscribe_started();
    e.subscribe_started();
    e.live_sent(copy_of(m), now);
    e.subscribe_finished();
    EXPECT_FALSE(e.admit_retained(copy_of(m), now, true)) << "the second SUBSCRIBE is pending";
    e.subscribe_finished();
    EXPECT_TRUE(e.idle(now));
}

TEST(retained_echoes, old_messages_are_not_remembered_and_remembered_ones_expire) {
    retained_echoes e;
    const auto old = message("t/1", "old", now - retained_echoes::window_ms);
    EXPECT_FALSE(retained_echoes::recent(old, now));
    EXPECT_TRUE(e.admit_retained(copy_of(old), now, true));
    EXPECT_TRUE(e.idle(now)) << "a message that old has been routed long ago";
    const auto m = message("t/1", "a");
    EXPECT_TRUE(e.admit_retained(copy_of(m), now, true));
    EXPECT_FALSE(e.idle(now));
    EXPECT_TRUE(e.idle(m.created_at_ms + retained_echoes::window_ms));
}

TEST(retained_echoes, what_it_remembers_is_bounded) {
    retained_echoes e;
    for (std::size_t i = 0; i < retained_echoes::limit + 10; ++i) {
        EXPECT_TRUE(e.admit_retained(copy_of(message("t/" + std::to_string(i), "x")), now, true));
    }
    std::size_t echoes = 0;
    for (std::size_t i = 0; i < retained_echoes::limit + 10; ++i) {
        echoes += e.take_live_echo(copy_of(message("t/" + std::to_string(i), "x")), now) ? 1 : 0;
    }
    EXPECT_EQ(echoes, retained_echoes::limit);
}

// Seeded schedules of the race itself. Messages on four topics are created at distinct moments;
// each is put into the retained store and routed live some time after its creation, a topic's
// messages routed in creation order (one log partition per topic), the store keeping the latest
// it was given. A new subscription enters the trie at t0 and reads the retained set at t1. What
// the client receives, per topic, must be: no message twice, in creation order, ending with the
// topic's latest message when that one could reach it at all, and every message created after
// t1.
TEST(retained_echoes, the_client_sees_each_topic_in_order_once_in_random_schedules) {
    for (std::uint32_t seed = 1; seed <= 500; ++seed) {
        std::mt19937 rng(seed);
        const auto pick = [&](int n) { return std::uniform_int_distribution<int>(0, n - 1)(rng); };
        const int t0 = 10 + pick(50);
        const int t1 = t0 + 1 + pick(20);
        struct plan {
            app_message msg;
            int created, stored, routed;
        };
        std::vector<plan> plans;
        std::vector<int> moments(100);
        for (int i = 0; i < 100; ++i) {
            moments[i] = i;
        }
        std::shuffle(moments.begin(), moments.end(), rng);
        const int count = 1 + pick(16);
        for (int i = 0; i < count; ++i) {
            const int created = moments[i];
            plans.push_back(
                {message("t/" + std::to_string(pick(4)), std::to_string(i), now - 1000 + created),
                 created, created + pick(12), created + pick(12)});
        }
        // One partition per topic: routed in creation order.
        std::sort(plans.begin(), plans.end(),
                  [](const plan& a, const plan& b) { return a.created < b.created; });
        std::map<std::string, int> last_routed;
        for (auto& p : plans) {
            auto [it, fresh] = last_routed.try_emplace(p.msg.topic, p.routed);
            p.routed = std::max(p.routed, it->second);
            it->second = p.routed;
        }

        retained_echoes e;
        std::map<std::string, std::vector<const plan*>> received;  // topic → in order
        std::map<const plan*, int> copies;
        const auto receive = [&](const plan* p) {
            received[p->msg.topic].push_back(p);
            ++copies[p];
        };
        std::map<std::string, const plan*> read;  // what the retained read found
        for (int t = 0; t < 130; ++t) {
            if (t == t0) {
                e.subscribe_started();
            }
            for (const auto& p : plans) {
                if (p.routed == t && t > t0 && !e.take_live_echo(copy_of(p.msg), now)) {
                    receive(&p);
                    e.live_sent(copy_of(p.msg), now);
                }
            }
            if (t == t1) {
                for (const auto& p : plans) {
                    auto& slot = read[p.msg.topic];
                    if (p.stored < t1 && (slot == nullptr || slot->created < p.created)) {
                        slot = &p;
                    }
                }
                for (const auto& [topic, p] : read) {
                    if (p != nullptr && e.admit_retained(copy_of(p->msg), now, true)) {
                        receive(p);
                    }
                }
                e.subscribe_finished();
            }
        }
        for (const auto& [p, n] : copies) {
            EXPECT_EQ(n, 1) << "seed " << seed << ": message " << p->msg.payload;
        }
        std::map<std::string, const plan*> latest;
        for (const auto& p : plans) {
            latest[p.msg.topic] = &p;  // plans are in creation order
            if (p.created > t1) {
                EXPECT_EQ(copies.count(&p), 1U)
                    << "seed " << seed << ": message " << p.msg.payload << " created after t1";
            }
        }
        for (const auto& [topic, got] : received) {
            for (std::size_t i = 1; i < got.size(); ++i) {
                EXPECT_LT(got[i - 1]->created, got[i]->created)
                    << "seed " << seed << ": " << topic << " out of order";
            }
        }
        for (const auto& [topic, p] : latest) {
            const bool reachable = p->routed > t0 || read[topic] == p;
            if (reachable) {
                ASSERT_FALSE(received[topic].empty()) << "seed " << seed << ": " << topic;
                EXPECT_EQ(received[topic].back(), p)
                    << "seed " << seed << ": " << topic << " ends on an older value";
            }
        }
    }
}

}  // namespace
}  // namespace starling::broker
