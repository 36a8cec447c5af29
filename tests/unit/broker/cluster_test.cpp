// Cluster behaviour over one shared embedded log: state followed live between nodes and copies
// delivered across nodes (msg.downlink.basic.<node>). See cluster_harness.h.

#include "auth/blocked_clients.h"
#include "broker/blocked_clients_log.h"

#include "cluster_harness.h"
#include <gtest/gtest.h>

#include <future>

namespace starling::broker::cluster_test {
namespace {

class cluster_fixture : public ::testing::Test {
  protected:
    cluster_harness cluster_;
};

TEST_F(cluster_fixture, publish_on_one_node_reaches_subscriber_on_another_at_every_qos) {
    cluster_.start_node("a");
    cluster_.start_node("b");
    auto sub = cluster_.connect("b", "sub");
    cluster_.subscribe(sub, "t/#", mqtt::qos::exactly_once);
    ASSERT_TRUE(
        cluster_harness::eventually([&] { return cluster_.routes_to("a", "t/x", "sub", "b"); }));

    auto pub = cluster_.connect("a", "pub");
    const mqtt::qos levels[] = {mqtt::qos::at_most_once, mqtt::qos::at_least_once,
                                mqtt::qos::exactly_once};
    std::uint16_t id = 1;
    for (auto qos : levels) {
        const auto payload = "m" + std::to_string(static_cast<int>(qos));
        cluster_.publish(pub, "t/x", payload, qos, id++);
        auto got = cluster_.receive(sub);
        EXPECT_EQ(got.topic, "t/x");
        EXPECT_EQ(got.payload, payload);
        EXPECT_EQ(got.qos, qos);
        EXPECT_FALSE(got.retain);
    }
    // The consumer counts a copy after handing it to the actor, which may deliver it first.
    EXPECT_TRUE(cluster_harness::eventually(
        [&] { return cluster_.at("b").downlink()->delivered() == 3U; }));
    EXPECT_EQ(cluster_.at("b").downlink()->dropped(), 0U);
}

// A node writes to other nodes' topics (session-event replies, forced disconnects, downlink
// copies): it learns each one's metadata before the first write. Kafka's client otherwise holds
// the first record of a topic it does not know until its next one-second topic scan, and a
// CONNECT answered by another node's handler waited up to a second for its CONNACK.
TEST_F(cluster_fixture, other_nodes_topics_are_known_before_the_first_write_to_them) {
    cluster_.start_node("a");
    cluster_.start_node("b");
    const topic_names names{cluster_harness::default_settings().topic_prefix};
    // Whichever node's handler owns each id's partition, every reply to each requester...
    for (int i = 0; i < 8; ++i) {
        cluster_.connect(i % 2 == 0 ? "a" : "b", "c" + std::to_string(i));
    }
    // ...a takeover's disconnect to the node that held the session...
    cluster_.connect("a", "moving", false, 300);
    cluster_.connect("b", "moving", false, 300, true);
    // ...and a copy forwarded to a subscriber's node.
    auto sub = cluster_.connect("b", "sub");
    cluster_.subscribe(sub, "f/#", mqtt::qos::at_most_once);
    ASSERT_TRUE(
        cluster_harness::eventually([&] { return cluster_.routes_to("a", "f/x", "sub", "b"); }));
    auto pub = cluster_.connect("a", "pub");
    cluster_.publish(pub, "f/x", "hello", mqtt::qos::at_most_once, 0);
    EXPECT_EQ(cluster_.receive(sub).payload, "hello");

    auto& calls = cluster_.calls();
    for (const std::string& topic :
         {names.session_event_response("a"), names.session_event_response("b"),
          names.client_disconnect("a"), names.downlink_basic("b")}) {
        const auto written = calls.first("produce", topic);
        if (written < 0) {
            continue;  // not every topic is written in every run (assignment decides)
        }
        const auto learned = calls.first("metadata", topic);
        EXPECT_GE(learned, 0) << topic << " written without its metadata";
        EXPECT_LT(learned, written) << topic << " written before its metadata was loaded";
    }
    EXPECT_GE(calls.first("produce", names.client_disconnect("a")), 0);
    EXPECT_GE(calls.first("produce", names.downlink_basic("b")), 0);
}

TEST_F(cluster_fixture, retained_published_on_a_is_served_on_c) {
    cluster_.start_node("a");
    cluster_.start_node("c");
    auto pub = cluster_.connect("a", "pub");
    cluster_.publish(pub, "r/1", "kept", mqtt::qos::at_least_once, 1, true);
    ASSERT_TRUE(cluster_harness::eventually(
        [&] { return cluster_.at("c").core().retained().size() == 1; }));

    auto sub = cluster_.connect("c", "late");
    cluster_.subscribe(sub, "r/#", mqtt::qos::at_least_once);
    auto got = cluster_.receive(sub);
    EXPECT_EQ(got.topic, "r/1");
    EXPECT_EQ(got.payload, "kept");
    EXPECT_TRUE(got.retain);

    // An empty retained payload on a removes it on c too.
    cluster_.publish(pub, "r/1", "", mqtt::qos::at_least_once, 2, true);
    EXPECT_TRUE(cluster_harness::eventually(
        [&] { return cluster_.at("c").core().retained().size() == 0; }));
}

// The REST DELETE's path: a tombstone on msg.retained written by one node removes the message
// from every node's store (and from a late joiner's snapshot) without a PUBLISH to anyone.
TEST_F(cluster_fixture, erase_retained_on_c_removes_it_everywhere_and_tells_no_subscriber) {
    cluster_.start_node("a");
    cluster_.start_node("b");
    cluster_.start_node("c");
    auto sub = cluster_.connect("b", "watcher");
    cluster_.subscribe(sub, "r/#", mqtt::qos::at_least_once);
    auto pub = cluster_.connect("a", "pub");
    cluster_.publish(pub, "r/1", "kept", mqtt::qos::at_least_once, 1, true);
    EXPECT_EQ(cluster_.receive(sub).payload, "kept");
    ASSERT_TRUE(cluster_harness::eventually(
        [&] { return cluster_.at("c").core().retained().size() == 1; }));

    auto erase = [&](const char* node_id) {
        std::promise<result<bool>> erased;
        cluster_.at(node_id).core().erase_retained(
            "r/1", [&](result<bool> r) { erased.set_value(std::move(r)); });
        auto r = erased.get_future().get();
        EXPECT_TRUE(r) << r.error().message();
        return r && r.value();
    };
    EXPECT_TRUE(erase("c"));
    EXPECT_EQ(cluster_.at("c").core().retained().size(), 0U) << "gone locally once acknowledged";
    for (const auto* id : {"a", "b"}) {
        EXPECT_TRUE(cluster_harness::eventually([&] {
            return cluster_.at(id).core().retained().size() == 0;
        })) << id;
    }
    EXPECT_FALSE(erase("a")) << "nothing left to erase";

    // The next message the watcher gets is the one published after the erase.
    cluster_.publish(pub, "r/after", "marker", mqtt::qos::at_least_once, 2);
    EXPECT_EQ(cluster_.receive(sub).topic, "r/after");
    cluster_.start_node("d");
    EXPECT_EQ(cluster_.at("d").core().retained().size(), 0U) << "the snapshot holds the tombstone";
}

TEST_F(cluster_fixture, late_joiner_routes_to_existing_subscribers_and_serves_retained) {
    cluster_.start_node("a");
    cluster_.start_node("b");
    auto sub = cluster_.connect("b", "sub");
    cluster_.subscribe(sub, "t/#", mqtt::qos::at_least_once);
    auto pub_a = cluster_.connect("a", "pub-a");
    cluster_.publish(pub_a, "t/retained", "old", mqtt::qos::at_least_once, 1, true);
    EXPECT_EQ(cluster_.receive(sub).payload, "old");

    // c loads the snapshot: b's session and subscription, a's retained message.
    cluster_.start_node("c");
    EXPECT_TRUE(cluster_.routes_to("c", "t/x", "sub", "b"));
    EXPECT_EQ(cluster_.at("c").core().retained().size(), 1U);
    EXPECT_EQ(cluster_.at("c").follower()->mirrored_clients(), 1U);

    auto pub_c = cluster_.connect("c", "pub-c");
    cluster_.publish(pub_c, "t/x", "from-c", mqtt::qos::at_least_once, 1);
    auto got = cluster_.receive(sub);
    EXPECT_EQ(got.payload, "from-c");

    auto fresh = cluster_.connect("c", "fresh");
    cluster_.subscribe(fresh, "t/retained", mqtt::qos::at_most_once);
    auto retained = cluster_.receive(fresh);
    EXPECT_EQ(retained.payload, "old");
    EXPECT_TRUE(retained.retain);
}

TEST_F(cluster_fixture, persistent_device_on_b_gets_copies_through_its_own_inbox) {
    cluster_.start_node("a");
    // b reads no msg.persisted partition: every copy for its device is read on a and must be
    // forwarded through msg.downlink.persisted.b into b's inbox.
    cluster_.start_node("b", [](settings& s) { s.msg_persisted_consumers = 0; });
    auto dev = cluster_.connect("b", "dev", false, 3600);
    cluster_.subscribe(dev, "d/#", mqtt::qos::at_least_once);
    ASSERT_TRUE(
        cluster_harness::eventually([&] { return cluster_.routes_to("a", "d/1", "dev", "b"); }));
    auto pub = cluster_.connect("a", "pub");
    cluster_.publish(pub, "d/1", "live", mqtt::qos::at_least_once, 1);
    auto got = cluster_.receive(dev);
    EXPECT_EQ(got.payload, "live");
    EXPECT_EQ(got.qos, mqtt::qos::at_least_once);

    // Offline: the copy waits in b's inbox (whichever node's msg.persisted consumer read it).
    cluster_.send(dev, mqtt::disconnect{});
    ASSERT_TRUE(cluster_harness::eventually([&] {
        auto s = cluster_.at("a").core().sessions().find_session("dev");
        return s && !s->connected && s->node_id == "b";
    }));
    cluster_.publish(pub, "d/2", "queued", mqtt::qos::at_least_once, 2);
    auto again = cluster_.connect("b", "dev", false, 3600, true);
    auto queued = cluster_.receive(again);
    EXPECT_EQ(queued.payload, "queued");
}

TEST_F(cluster_fixture, shared_group_members_on_two_nodes_take_turns) {
    cluster_.start_node("a");
    cluster_.start_node("b");
    auto m1 = cluster_.connect("a", "m1");
    auto m2 = cluster_.connect("b", "m2");
    cluster_.subscribe(m1, "$share/g/s", mqtt::qos::at_least_once);
    cluster_.subscribe(m2, "$share/g/s", mqtt::qos::at_least_once);
    // Both routers see both members (the msg.all partition may be read on either node).
    ASSERT_TRUE(cluster_harness::eventually([&] {
        return cluster_.routes_to("a", "s", "m2", "b") && cluster_.routes_to("b", "s", "m1", "a");
    }));
    auto pub = cluster_.connect("a", "pub");
    cluster_.publish(pub, "s", "one", mqtt::qos::at_least_once, 1);
    cluster_.publish(pub, "s", "two", mqtt::qos::at_least_once, 2);
    // Round-robin over the members sorted by client id: m1 first, then m2 on the other node.
    EXPECT_EQ(cluster_.receive(m1).payload, "one");
    EXPECT_EQ(cluster_.receive(m2).payload, "two");
}

TEST_F(cluster_fixture, unsubscribe_on_b_stops_delivery_from_a) {
    cluster_.start_node("a");
    cluster_.start_node("b");
    auto sub = cluster_.connect("b", "sub");
    cluster_.subscribe(sub, "t", mqtt::qos::at_least_once, 1);
    cluster_.subscribe(sub, "u", mqtt::qos::at_least_once, 2);
    ASSERT_TRUE(cluster_harness::eventually([&] {
        return cluster_.routes_to("a", "t", "sub", "b") && cluster_.matches("a", "u", "sub");
    }));
    auto pub = cluster_.connect("a", "pub");
    cluster_.publish(pub, "t", "before", mqtt::qos::at_least_once, 1);
    EXPECT_EQ(cluster_.receive(sub).payload, "before");

    cluster_.unsubscribe(sub, "t", 3);
    ASSERT_TRUE(cluster_harness::eventually([&] { return !cluster_.matches("a", "t", "sub"); }));
    EXPECT_TRUE(cluster_.matches("a", "u", "sub"));
    // One msg.all partition and one downlink partition per client: "after" would arrive before
    // "marker" if it were still routed to the client.
    cluster_.publish(pub, "t", "after", mqtt::qos::at_least_once, 2);
    cluster_.publish(pub, "u", "marker", mqtt::qos::at_least_once, 3);
    EXPECT_EQ(cluster_.receive(sub).payload, "marker");
}

TEST_F(cluster_fixture, session_end_on_b_is_mirrored_and_copies_stop) {
    cluster_.start_node("a");
    cluster_.start_node("b");
    auto sub = cluster_.connect("b", "sub");
    cluster_.subscribe(sub, "t", mqtt::qos::at_least_once);
    ASSERT_TRUE(
        cluster_harness::eventually([&] { return cluster_.routes_to("a", "t", "sub", "b"); }));
    cluster_.send(sub, mqtt::disconnect{});
    // The non-persistent session ends: a forgets it and its subscriptions.
    EXPECT_TRUE(cluster_harness::eventually([&] {
        return !cluster_.at("a").core().sessions().find_session("sub") &&
               !cluster_.matches("a", "t", "sub");
    }));
    EXPECT_EQ(cluster_.at("a").follower()->mirrored_clients(), 0U);
}

TEST_F(cluster_fixture, local_actor_entries_survive_records_of_another_node) {
    cluster_.start_node("a");
    cluster_.start_node("b");
    // "dup" subscribes on a; then b writes records about the same client id (a client that
    // moved, as session coordination will do). a's trie entry for its own actor stays.
    auto local = cluster_.connect("a", "dup");
    cluster_.subscribe(local, "own/topic", mqtt::qos::at_least_once);
    auto& b_core = cluster_.at("b").core();
    const auto before = cluster_.at("a").follower()->applied();
    std::promise<void> written;
    b_core.write_subscription_records("dup", {{"dup", std::string()}},
                                      [&](status) { written.set_value(); });
    ASSERT_EQ(written.get_future().wait_for(5s), std::future_status::ready);
    std::promise<void> deleted;
    b_core.delete_session("dup", [&](status) { deleted.set_value(); });
    ASSERT_EQ(deleted.get_future().wait_for(5s), std::future_status::ready);
    // Wait until a applied both records, then check its own state is intact.
    ASSERT_TRUE(cluster_harness::eventually(
        [&] { return cluster_.at("a").follower()->applied() >= before + 2; }));
    EXPECT_TRUE(cluster_.matches("a", "own/topic", "dup"));
    auto session = cluster_.at("a").core().sessions().find_session("dup");
    ASSERT_TRUE(session.has_value());
    EXPECT_EQ(session->node_id, "a");

    auto pub = cluster_.connect("b", "pub");
    cluster_.publish(pub, "own/topic", "still-mine", mqtt::qos::at_least_once, 1);
    EXPECT_EQ(cluster_.receive(local).payload, "still-mine");
}

TEST_F(cluster_fixture, client_blocked_on_a_is_refused_on_b) {
    cluster_.start_node("a");
    cluster_.start_node("b");
    const auto topic = cluster_.at("a").core().topics().client_blocked();
    auth::blocked_clients list_a;
    auth::blocked_clients list_b;
    blocked_clients_log log_a(cluster_.log(), topic, list_a);
    blocked_clients_log log_b(cluster_.log(), topic, list_b);
    cluster_.at("b").follow_blocked(&log_b);

    std::promise<status> put;
    log_a.put(auth::blocked_entry{.type = auth::block_type::client_id, .value = "bad"},
              [&](status st) { put.set_value(st); });
    auto fut = put.get_future();
    ASSERT_EQ(fut.wait_for(5s), std::future_status::ready);
    ASSERT_TRUE(fut.get());
    const auto now = system_clock::instance().epoch_ms();
    EXPECT_TRUE(cluster_harness::eventually(
        [&] { return list_b.check("bad", std::nullopt, "10.0.0.1", now).has_value(); }));
    EXPECT_FALSE(list_b.check("good", std::nullopt, "10.0.0.1", now).has_value());

    std::promise<result<bool>> erased;
    log_a.erase(auth::block_type::client_id, "bad", [&](result<bool> r) { erased.set_value(r); });
    ASSERT_EQ(erased.get_future().wait_for(5s), std::future_status::ready);
    EXPECT_TRUE(cluster_harness::eventually(
        [&] { return !list_b.check("bad", std::nullopt, "10.0.0.1", now).has_value(); }));
    cluster_.at("b").follow_blocked(nullptr);
}

TEST_F(cluster_fixture, blocked_rules_written_before_attach_are_applied_on_attach) {
    cluster_.start_node("a");
    auth::blocked_clients list_a;
    auth::blocked_clients list_late;
    const auto topic = cluster_.at("a").core().topics().client_blocked();
    blocked_clients_log log_a(cluster_.log(), topic, list_a);
    std::promise<status> put;
    log_a.put(auth::blocked_entry{.type = auth::block_type::client_id, .value = "early"},
              [&](status st) { put.set_value(st); });
    ASSERT_EQ(put.get_future().wait_for(5s), std::future_status::ready);
    cluster_.start_node("b");
    ASSERT_TRUE(
        cluster_harness::eventually([&] { return cluster_.at("b").follower()->applied() >= 1; }));
    blocked_clients_log log_late(cluster_.log(), topic, list_late);
    cluster_.at("b").follow_blocked(&log_late);
    const auto now = system_clock::instance().epoch_ms();
    EXPECT_TRUE(list_late.check("early", std::nullopt, "10.0.0.1", now).has_value());
    cluster_.at("b").follow_blocked(nullptr);
}

}  // namespace
}  // namespace starling::broker::cluster_test
