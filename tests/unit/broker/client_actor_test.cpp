// The MQTT behaviour of client actors, driven without sockets: a fake channel records what the
// actor writes, and the node runs on the real embedded adapters in a temporary directory.

#include "broker/client_actor.h"

#include "adapters/embedded/device_inbox.h"
#include "adapters/embedded/message_log.h"
#include "adapters/embedded/shared_counters.h"
#include "adapters/embedded/sqlite_metadata_store.h"
#include "broker/group_inbox.h"
#include "broker/node.h"
#include "metrics/drop_log.h"
#include "metrics/registry.h"
#include "mqtt/decoder.h"
#include "routing/subscription_trie.h"

#include "broker_fixture.h"
#include "fake_channel.h"
#include "support/temp_dir.h"
#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
#include <deque>
#include <future>
#include <mutex>
#include <set>
#include <thread>

namespace starling::broker {
namespace {

using namespace std::chrono_literals;

using testing::fake_channel;

TEST_F(broker_fixture, qos1_publish_is_acknowledged_and_delivered) {
    auto sub = connect("sub", true);
    subscribe("sub", *sub, "a/+", mqtt::qos::at_least_once);
    auto pub = connect("pub", true);
    send("pub", *pub,
         mqtt::publish{.topic = "a/b",
                       .payload = "hello",
                       .qos = mqtt::qos::at_least_once,
                       .packet_id = 7,
                       .properties = {}});
    auto ack = pub->expect<mqtt::puback>();
    EXPECT_EQ(ack.packet_id, 7);
    auto msg = sub->expect<mqtt::publish>();
    EXPECT_EQ(msg.topic, "a/b");
    EXPECT_EQ(msg.payload, "hello");
    EXPECT_EQ(msg.qos, mqtt::qos::at_least_once);
    EXPECT_FALSE(msg.dup);
    send("sub", *sub, mqtt::puback{msg.packet_id, mqtt::reason_code::success, {}});
}

// MQTT 4.6: PUBACKs (and PUBRECs) leave in the order the PUBLISHes came, whatever order the log
// acknowledges the writes in. The log's acknowledgements are held and released shuffled (and
// reversed), so a broker that answered in log order would fail here.
TEST_F(broker_fixture, acknowledgements_leave_in_packet_order) {
    constexpr std::uint16_t count = 50;
    for (std::uint32_t seed : {0U, 1U, 2U}) {
        SCOPED_TRACE("seed " + std::to_string(seed));
        auto pub = connect("pub", true);
        embedded_.log_acks().hold(node_->core().topics().msg_all());
        for (std::uint16_t id = 1; id <= count; ++id) {
            send("pub", *pub,
                 mqtt::publish{
                     .topic = "t/" + std::to_string(id % 7),
                     .payload = "x",
                     .qos = id % 3 == 0 ? mqtt::qos::exactly_once : mqtt::qos::at_least_once,
                     .packet_id = id,
                     .properties = {}});
        }
        ASSERT_TRUE(embedded_.log_acks().wait_held(count, 10s));
        if (seed == 0) {
            embedded_.log_acks().release_reversed();
        } else {
            embedded_.log_acks().release_shuffled(seed);
        }
        for (std::uint16_t id = 1; id <= count; ++id) {
            if (id % 3 == 0) {
                EXPECT_EQ(pub->expect<mqtt::pubrec>().packet_id, id);
            } else {
                EXPECT_EQ(pub->expect<mqtt::puback>().packet_id, id);
            }
        }
        send("pub", *pub, mqtt::disconnect{});
        ASSERT_TRUE(pub->wait_closed());
    }
}

// MQTT-4.3.3-10: a QoS 2 PUBLISH sent again while the first is still being written (a 3.1.1
// client resending on a timeout) gets its PUBREC again and is never published twice. The log's
// acknowledgements are held so the resend certainly arrives before the first write is done.
TEST_F(broker_fixture, a_qos2_publish_resent_while_it_is_written_is_published_once) {
    auto sub = connect("sub", true);
    subscribe("sub", *sub, "q", mqtt::qos::exactly_once);
    auto pub = connect("pub", true, mqtt::protocol_version::v3_1_1);
    embedded_.log_acks().hold(node_->core().topics().msg_all());
    mqtt::publish first{.topic = "q",
                        .payload = "once",
                        .qos = mqtt::qos::exactly_once,
                        .packet_id = 3,
                        .properties = {}};
    send("pub", *pub, first);
    first.dup = true;
    send("pub", *pub, first);
    // Handled after the resend (one actor, packets in order): its write is the second held
    // one, and it tells the subscriber's next copy apart from a second "once".
    send("pub", *pub,
         mqtt::publish{.topic = "q",
                       .payload = "marker",
                       .qos = mqtt::qos::at_least_once,
                       .packet_id = 4,
                       .properties = {}});
    ASSERT_TRUE(embedded_.log_acks().wait_held(2, 10s));
    embedded_.log_acks().release_reversed();
    EXPECT_EQ(pub->expect<mqtt::pubrec>().packet_id, 3);
    EXPECT_EQ(pub->expect<mqtt::pubrec>().packet_id, 3) << "the resend is answered too";
    EXPECT_EQ(pub->expect<mqtt::puback>().packet_id, 4);
    send("pub", *pub, mqtt::pubrel{3, mqtt::reason_code::success, {}});
    EXPECT_EQ(pub->expect<mqtt::pubcomp>().packet_id, 3);

    EXPECT_EQ(sub->expect<mqtt::publish>().payload, "once");
    EXPECT_EQ(sub->expect<mqtt::publish>().payload, "marker") << "published twice";
}

// A persistent session's QoS 2 id is stored before its PUBREC leaves and removed before its
// PUBCOMP leaves: a node restarted in between must neither publish the client's resend again nor
// take a new message reusing the id for a resend. The store's writes are held; a PINGREQ sent
// meanwhile is answered first (the actor handled it, the answers still wait), and the PUBACK of
// a QoS 1 PUBLISH behind the PUBREC waits with it, so the answers keep their order.
TEST_F(broker_fixture, qos2_answers_of_a_persistent_session_wait_for_the_stored_ids) {
    auto stored_ids = [this] {
        std::promise<std::vector<std::uint16_t>> ids;
        node_->core().metadata().load_session_context(
            "dev", [&ids](result<std::optional<session_context>> r) {
                ids.set_value(r && r.value() ? r.value()->qos2_packet_ids
                                             : std::vector<std::uint16_t>{});
            });
        return ids.get_future().get();
    };
    auto dev = connect("dev", false, mqtt::protocol_version::v5, 3600);
    auto& store = embedded_.metadata_holds();
    store.hold_session_contexts();
    send("dev", *dev,
         mqtt::publish{.topic = "q",
                       .payload = "two",
                       .qos = mqtt::qos::exactly_once,
                       .packet_id = 5,
                       .properties = {}});
    send("dev", *dev,
         mqtt::publish{.topic = "q",
                       .payload = "one",
                       .qos = mqtt::qos::at_least_once,
                       .packet_id = 6,
                       .properties = {}});
    ASSERT_TRUE(store.wait_held(1, 10s));
    send("dev", *dev, mqtt::pingreq{});
    dev->expect<mqtt::pingresp>();  // not the PUBREC: its id is not stored yet
    EXPECT_TRUE(stored_ids().empty());
    store.release();
    EXPECT_EQ(dev->expect<mqtt::pubrec>().packet_id, 5);
    EXPECT_EQ(dev->expect<mqtt::puback>().packet_id, 6);
    EXPECT_EQ(stored_ids(), std::vector<std::uint16_t>{5});

    store.hold_session_contexts();
    send("dev", *dev, mqtt::pubrel{5, mqtt::reason_code::success, {}});
    ASSERT_TRUE(store.wait_held(1, 10s));
    send("dev", *dev, mqtt::pingreq{});
    dev->expect<mqtt::pingresp>();  // not the PUBCOMP: the id is still stored
    store.release();
    const auto comp = dev->expect<mqtt::pubcomp>();
    EXPECT_EQ(comp.packet_id, 5);
    EXPECT_EQ(comp.reason_code, mqtt::reason_code::success);
    EXPECT_TRUE(stored_ids().empty());
}

TEST_F(broker_fixture, persistent_session_queues_while_offline_and_redelivers_in_order) {
    auto sub = connect("dev", false, mqtt::protocol_version::v5, 3600);
    subscribe("dev", *sub, "d/#", mqtt::qos::at_least_once);
    send("dev", *sub, mqtt::disconnect{});
    ASSERT_TRUE(sub->wait_closed());

    auto pub = connect("pub", true);
    for (std::uint16_t id = 1; id <= 20; ++id) {
        send("pub", *pub,
             mqtt::publish{.topic = "d/x",
                           .payload = std::to_string(id),
                           .qos = mqtt::qos::at_least_once,
                           .packet_id = id,
                           .properties = {}});
    }
    for (std::uint16_t id = 1; id <= 20; ++id) {
        EXPECT_EQ(pub->expect<mqtt::puback>().packet_id, id);
    }
    auto again = connect("dev", false, mqtt::protocol_version::v5, 3600, true);
    for (int i = 1; i <= 20; ++i) {
        auto msg = again->expect<mqtt::publish>();
        EXPECT_EQ(msg.payload, std::to_string(i));
        EXPECT_FALSE(msg.dup);  // never sent before
        send("dev", *again, mqtt::puback{msg.packet_id, mqtt::reason_code::success, {}});
    }
}

TEST_F(broker_fixture, unacknowledged_messages_are_resent_with_dup_after_reconnect) {
    auto sub = connect("dev", false, mqtt::protocol_version::v5, 3600);
    subscribe("dev", *sub, "d", mqtt::qos::at_least_once);
    auto pub = connect("pub", true);
    send("pub", *pub,
         mqtt::publish{.topic = "d",
                       .payload = "m1",
                       .qos = mqtt::qos::at_least_once,
                       .packet_id = 1,
                       .properties = {}});
    auto first = sub->expect<mqtt::publish>();
    EXPECT_FALSE(first.dup);
    // Connection drops without PUBACK.
    ASSERT_TRUE(node_->core().actor_for("dev")->tell_control(client_msg::closed{
        .channel_id = sub->id(), .reason = "test", .protocol_error = std::nullopt}));
    auto again = connect("dev", false, mqtt::protocol_version::v5, 3600, true);
    auto second = again->expect<mqtt::publish>();
    EXPECT_EQ(second.payload, "m1");
    EXPECT_EQ(second.packet_id, first.packet_id);
    EXPECT_TRUE(second.dup);
}

TEST_F(broker_fixture, persistent_session_survives_restart) {
    auto sub = connect("dev", false, mqtt::protocol_version::v3_1_1);
    subscribe("dev", *sub, "r/#", mqtt::qos::exactly_once);
    send("dev", *sub, mqtt::disconnect{});
    ASSERT_TRUE(sub->wait_closed());
    auto pub = connect("pub", true);
    send("pub", *pub,
         mqtt::publish{.topic = "r/1",
                       .payload = "kept",
                       .qos = mqtt::qos::at_least_once,
                       .packet_id = 1,
                       .properties = {}});
    EXPECT_EQ(pub->expect<mqtt::puback>().packet_id, 1);
    // No waiting for the inbox: what the PUBACK promised is in msg.all, and a restarted node
    // re-routes every record its consumers had not committed.
    close();
    open();
    auto again = connect("dev", false, mqtt::protocol_version::v3_1_1, 0, true);
    auto msg = again->expect<mqtt::publish>();
    EXPECT_EQ(msg.payload, "kept");
    EXPECT_EQ(msg.qos, mqtt::qos::at_least_once);
}

// The consumers must not route before restored sessions are subscribed again: a message
// published before the restart and not yet routed would otherwise match nobody and be committed.
TEST_F(broker_fixture, restored_subscriptions_are_in_the_trie_when_start_returns) {
    // Enough sessions that the restores are still queued at the actors if start() did not wait.
    constexpr int sessions = 200;
    for (int i = 0; i < sessions; ++i) {
        const auto id = "dev-" + std::to_string(i);
        auto sub = connect(id, false, mqtt::protocol_version::v3_1_1);
        subscribe(id, *sub, "restored/#", mqtt::qos::at_least_once);
        send(id, *sub, mqtt::disconnect{});
        ASSERT_TRUE(sub->wait_closed());
    }
    close();
    open();
    routing::rcu_reader_registration reader;
    std::size_t matched = 0;
    node_->core().trie().match("restored/x",
                               [&](std::string_view, const routing::subscription&) { ++matched; });
    EXPECT_EQ(matched, sessions);
}

mqtt::publish retained_publish(std::string topic, std::string payload, std::uint16_t id) {
    return mqtt::publish{.topic = std::move(topic),
                         .payload = std::move(payload),
                         .qos = mqtt::qos::at_least_once,
                         .retain = true,
                         .packet_id = id,
                         .properties = {}};
}

// The packets a channel got until `last_payload` (a sentinel published last on the same
// topic, so routed after everything before it), as "SUBACK", "live:<payload>",
// "retained:<payload>".
std::vector<std::string> packets_until(fake_channel& ch, const std::string& last_payload) {
    std::vector<std::string> seen;
    while (seen.empty() || seen.back() != "live:" + last_payload) {
        auto p = ch.next();
        if (!p) {
            ADD_FAILURE() << "no packet within timeout";
            break;
        }
        if (std::holds_alternative<mqtt::suback>(*p)) {
            seen.emplace_back("SUBACK");
        } else if (auto* pub = std::get_if<mqtt::publish>(&*p)) {
            seen.push_back((pub->retain ? "retained:" : "live:") + pub->payload);
        } else {
            seen.emplace_back(mqtt::to_string(mqtt::type_of(*p)));
        }
    }
    return seen;
}

// A retained message published while a SUBSCRIBE is being stored reaches the subscriber live
// (the trie has the subscription) and is then found by the SUBSCRIBE's retained read: it must
// not go out twice (retained_echoes.h).
TEST_F(broker_fixture, a_retained_message_that_went_live_during_the_subscribe_is_not_resent) {
    auto pub = connect("pub", true);
    auto sub = connect("sub", true);
    embedded_.log_acks().hold(node_->core().topics().client_subscriptions());
    mqtt::subscribe s;
    s.packet_id = 1;
    s.subscriptions.push_back({"r/#", {.qos = mqtt::qos::at_most_once}});
    send("sub", *sub, s);
    ASSERT_TRUE(embedded_.log_acks().wait_held(1, 10s));  // the SUBSCRIBE is pending
    send("pub", *pub, retained_publish("r/1", "during", 1));
    EXPECT_EQ(pub->expect<mqtt::puback>().reason_code, mqtt::reason_code::success);
    // Before its SUBACK, as MQTT allows.
    auto live = sub->expect<mqtt::publish>();
    EXPECT_EQ(live.payload, "during");
    EXPECT_FALSE(live.retain);
    embedded_.log_acks().release_reversed();
    // The SUBACK; the retained copies follow in the same turn of the actor, before any live
    // copy it handles next.
    EXPECT_EQ(sub->expect<mqtt::suback>().reason_codes.size(), 1U);
    // The sentinel is not retained: it can only arrive live, after whatever the read sent.
    auto sentinel = retained_publish("r/1", "after", 2);
    sentinel.retain = false;
    send("pub", *pub, sentinel);
    EXPECT_EQ(pub->expect<mqtt::puback>().reason_code, mqtt::reason_code::success);
    EXPECT_EQ(packets_until(*sub, "after"), (std::vector<std::string>{"live:after"}));
}

// Retained messages stored (acknowledged) before a SUBSCRIBE but routed after it: the
// subscriber gets the topic's latest value as retained, and neither that message's live copy
// nor the older one it replaced after it — the client's last value stays the latest.
TEST_F(broker_fixture, live_copies_routed_after_the_retained_read_neither_repeat_nor_go_back) {
    auto pub = connect("pub", true);
    auto sub = connect("sub", true);
    auto& log = embedded_.log_acks();
    log.hold_records(node_->core().topics().msg_all());
    send("pub", *pub, retained_publish("r/1", "one", 1));
    send("pub", *pub, retained_publish("r/1", "two", 2));
    ASSERT_TRUE(log.wait_records_held(2, 10s));
    // The retained store has "two" once msg.retained acknowledged it (the PUBACKs wait for
    // msg.all as well).
    const auto stored = [&] {
        std::string payload;
        node_->core().retained().match("r/1", node_->core().now_ms(),
                                       [&](const message_ptr& m) { payload = m->payload; });
        return payload;
    };
    const auto deadline = std::chrono::steady_clock::now() + 10s;
    while (stored() != "two" && std::chrono::steady_clock::now() < deadline) {
        std::this_thread::sleep_for(1ms);  // polling the store, bounded by the deadline
    }
    ASSERT_EQ(stored(), "two");

    mqtt::subscribe s;
    s.packet_id = 1;
    s.subscriptions.push_back({"r/#", {.qos = mqtt::qos::at_most_once}});
    send("sub", *sub, s);
    EXPECT_EQ(sub->expect<mqtt::suback>().reason_codes.size(), 1U);
    auto retained = sub->expect<mqtt::publish>();
    EXPECT_EQ(retained.payload, "two");
    EXPECT_TRUE(retained.retain);

    log.release_records();  // "one" and "two" are routed now, live
    EXPECT_EQ(pub->expect<mqtt::puback>().packet_id, 1);
    EXPECT_EQ(pub->expect<mqtt::puback>().packet_id, 2);
    send("pub", *pub, retained_publish("r/1", "three", 3));
    EXPECT_EQ(pub->expect<mqtt::puback>().reason_code, mqtt::reason_code::success);
    EXPECT_EQ(packets_until(*sub, "three"), (std::vector<std::string>{"live:three"}));
}

// client.subscriptions gets the change of each SUBSCRIBE / UNSUBSCRIBE, not the whole set again
// (issue: O(n²) bytes for a client subscribing one filter at a time), and the set those records
// describe is the one a restarted node restores — also after a second restart, once the restored
// session changed it again (its writes continue the restored generation).
TEST_F(broker_fixture, subscription_changes_are_written_as_changes_and_restored) {
    const auto topic = node_->core().topics().client_subscriptions();
    // Value bytes written to client.subscriptions so far (the whole topic, read back).
    auto bytes_in_log = [&] {
        auto& log = node_->core().log();
        auto consumer = log.create_consumer(consumer_spec{
            .group_id = "probe-" + std::to_string(next_channel_id_++), .assignment = {{topic, 0}}});
        EXPECT_TRUE(consumer);
        const auto end = consumer.value()->end_offset({topic, 0}).value();
        EXPECT_TRUE(consumer.value()->seek({topic, 0}, 0));
        std::size_t bytes = 0;
        std::int64_t next = 0;
        while (next < end) {
            auto polled = consumer.value()->poll(std::chrono::milliseconds(200));
            EXPECT_TRUE(polled);
            if (!polled) {
                break;
            }
            for (const auto& rec : polled.value()) {
                bytes += rec.value.size();
                next = rec.offset + 1;
            }
        }
        consumer.value()->close();
        return bytes;
    };
    auto trie_matches = [&](const std::string& t) {
        routing::rcu_reader_registration reader;
        bool found = false;
        node_->core().trie().match(t, [&](std::string_view, const routing::subscription& s) {
            found = found || s.client_id == "dev";
        });
        return found;
    };

    auto dev = connect("dev", false, mqtt::protocol_version::v5, 3600);
    constexpr int filters = 60;
    const auto start = bytes_in_log();
    for (int i = 0; i < filters; ++i) {
        subscribe("dev", *dev, "f/" + std::to_string(i), mqtt::qos::at_least_once,
                  static_cast<std::uint16_t>(i + 1));
    }
    // One topic_subscription is ~10 bytes here: as changes ~60 × 10; as whole sets it was
    // 1 + 2 + … + 60 entries, ~18,000 bytes.
    const auto written = bytes_in_log() - start;
    EXPECT_LT(written, 60U * 20U) << written << " bytes for " << filters << " SUBSCRIBEs";
    for (int i = 0; i < 20; ++i) {
        send("dev", *dev,
             mqtt::unsubscribe{.packet_id = static_cast<std::uint16_t>(100 + i),
                               .filters = {"f/" + std::to_string(i)}});
        EXPECT_EQ(dev->expect<mqtt::unsuback>().packet_id, 100 + i);
    }
    send("dev", *dev, mqtt::disconnect{});
    ASSERT_TRUE(dev->wait_closed());

    close();
    open();
    for (int i = 0; i < filters; ++i) {
        EXPECT_EQ(trie_matches("f/" + std::to_string(i)), i >= 20) << "f/" << i;
    }
    // The restored session changes its set; a second restart restores that.
    auto again = connect("dev", false, mqtt::protocol_version::v5, 3600, true);
    send("dev", *again, mqtt::unsubscribe{.packet_id = 7, .filters = {"f/20"}});
    EXPECT_EQ(again->expect<mqtt::unsuback>().packet_id, 7);
    subscribe("dev", *again, "g/new", mqtt::qos::at_least_once, 8);
    send("dev", *again, mqtt::disconnect{});
    ASSERT_TRUE(again->wait_closed());
    close();
    open();
    EXPECT_FALSE(trie_matches("f/20"));
    EXPECT_TRUE(trie_matches("f/21"));
    EXPECT_TRUE(trie_matches("g/new"));
    // A clean start ends the set; a restart finds none.
    auto clean = connect("dev", true, mqtt::protocol_version::v5, 3600);
    send("dev", *clean, mqtt::disconnect{});
    ASSERT_TRUE(clean->wait_closed());
    close();
    open();
    EXPECT_FALSE(trie_matches("f/21"));
    EXPECT_FALSE(trie_matches("g/new"));
}

// The client sent DISCONNECT (session expiry 0 ends the session) and reconnected at once: the
// CONNECT (control lane) must not overtake that DISCONNECT (normal lane).
TEST_F(broker_fixture, connect_after_disconnect_sees_the_disconnect_first) {
    auto first = connect("dev", false, mqtt::protocol_version::v5, 300);
    subscribe("dev", *first, "d/#", mqtt::qos::at_least_once);
    mqtt::disconnect d;
    d.properties.session_expiry_interval = 0;
    send("dev", *first, d);
    first->end_input();  // what mqtt_connection marks after forwarding a DISCONNECT
    auto second = std::make_shared<fake_channel>(++next_channel_id_, mqtt::protocol_version::v5);
    mqtt::connect c;
    c.protocol_version = mqtt::protocol_version::v5;
    c.client_id = "dev";
    c.clean_start = false;
    c.keep_alive = 60;
    c.properties.session_expiry_interval = 300;
    ASSERT_TRUE(node_->core().actor_for("dev")->tell_control(
        client_msg::connect{second, std::move(c), false}));
    auto ack = second->expect<mqtt::connack>();
    EXPECT_EQ(ack.reason_code, mqtt::reason_code::success);
    EXPECT_FALSE(ack.session_present);  // the DISCONNECT ended the session first
}

TEST_F(broker_fixture, takeover_sends_session_taken_over_to_the_old_connection) {
    auto first = connect("same", true);
    auto second = connect("same", true);
    auto d = first->expect<mqtt::disconnect>();
    EXPECT_EQ(d.reason_code, mqtt::reason_code::session_taken_over);
    EXPECT_TRUE(first->wait_closed());
}

TEST_F(broker_fixture, receive_maximum_violation_disconnects_with_0x93) {
    auto pub = connect("flood", true);
    // More unacknowledged QoS 2 publishes than the server's Receive Maximum (1000).
    for (std::uint16_t id = 1; id <= 1001; ++id) {
        send("flood", *pub,
             mqtt::publish{.topic = "f",
                           .payload = "x",
                           .qos = mqtt::qos::exactly_once,
                           .packet_id = id,
                           .properties = {}});
    }
    bool saw = false;
    while (auto p = pub->next(5s)) {
        if (auto* d = std::get_if<mqtt::disconnect>(&*p)) {
            EXPECT_EQ(d->reason_code, mqtt::reason_code::receive_maximum_exceeded);
            saw = true;
            break;
        }
    }
    EXPECT_TRUE(saw);
}

TEST_F(broker_fixture, actor_outlives_an_ended_session_for_the_grace_period) {
    auto ch = connect("brief", true);
    auto actor = node_->core().actor_for("brief");
    send("brief", *ch, mqtt::disconnect{});
    ASSERT_TRUE(ch->wait_closed());
    sync_with(actor);
    EXPECT_EQ(node_->core().sessions().find_actor("brief"), actor);
    // A reconnect within the grace period is served by the same actor.
    auto again = connect("brief", true);
    EXPECT_EQ(node_->core().actor_for("brief"), actor);
}

class broker_fixture_no_grace : public broker_fixture {
  protected:
    void SetUp() override {
        named_actor_grace_ = 0s;
        broker_fixture::SetUp();
    }
};

TEST_F(broker_fixture_no_grace, actor_leaves_the_registry_when_its_session_ends) {
    auto ch = connect("brief", true);
    auto actor = node_->core().actor_for("brief");
    send("brief", *ch, mqtt::disconnect{});
    ASSERT_TRUE(ch->wait_closed());
    sync_with(actor);
    EXPECT_EQ(node_->core().sessions().find_actor("brief"), nullptr);
}

class broker_fixture_small_window : public broker_fixture {
  protected:
    void SetUp() override {
        max_in_flight_ = 5;
        outbound_queue_limit_ = 10;
        broker_fixture::SetUp();
    }
};

TEST_F(broker_fixture_small_window, every_retained_message_is_delivered_past_the_queue_limit) {
    auto pub = connect("pub", true);
    constexpr int count = 60;  // far more than window (5) + outbound queue limit (10)
    for (int i = 0; i < count; ++i) {
        send("pub", *pub,
             mqtt::publish{.topic = "r/" + std::to_string(i),
                           .payload = std::to_string(i),
                           .qos = mqtt::qos::at_least_once,
                           .retain = true,
                           .packet_id = static_cast<std::uint16_t>(i + 1),
                           .properties = {}});
        pub->expect<mqtt::puback>();  // one at a time: the server's Receive Maximum is 5
    }
    auto sub = connect("sub", true);
    mqtt::subscribe s;
    s.packet_id = 1;
    s.subscriptions.push_back({"r/#", {.qos = mqtt::qos::at_least_once}});
    send("sub", *sub, s);
    // The last publishes may still be on their way through the log when the subscription
    // lands: such a message comes live too, possibly before the SUBACK (MQTT 5.0 3.8.4 allows
    // it) and without the retain flag. Every retained message must arrive, flagged.
    std::set<std::string> seen;
    bool subacked = false;
    while (!subacked || seen.size() < static_cast<std::size_t>(count)) {
        auto p = sub->next();
        ASSERT_TRUE(p.has_value()) << seen.size() << " retained messages seen";
        if (std::holds_alternative<mqtt::suback>(*p)) {
            subacked = true;
            continue;
        }
        ASSERT_TRUE(std::holds_alternative<mqtt::publish>(*p));
        const auto& msg = std::get<mqtt::publish>(*p);
        if (msg.retain) {
            seen.insert(msg.payload);
        }
        send("sub", *sub, mqtt::puback{msg.packet_id, mqtt::reason_code::success, {}});
    }
    EXPECT_EQ(seen.size(), static_cast<std::size_t>(count));
}

}  // namespace
}  // namespace starling::broker

namespace starling::broker {
namespace {

TEST_F(broker_fixture, v5_publish_to_a_denied_topic_gets_0x87_and_is_dropped) {
    auto sub = connect("watch", true);
    subscribe("watch", *sub, "acl/#", mqtt::qos::at_least_once);
    next_rules_ = rules("acl/ok/.*", ".*");
    auto pub = connect("limited", true);
    send("limited", *pub,
         mqtt::publish{.topic = "acl/denied",
                       .payload = "no",
                       .qos = mqtt::qos::at_least_once,
                       .packet_id = 1,
                       .properties = {}});
    auto ack = pub->expect<mqtt::puback>();
    EXPECT_EQ(ack.packet_id, 1);
    EXPECT_EQ(ack.reason_code, mqtt::reason_code::not_authorized);
    send("limited", *pub,
         mqtt::publish{.topic = "acl/denied",
                       .payload = "no",
                       .qos = mqtt::qos::exactly_once,
                       .packet_id = 2,
                       .properties = {}});
    EXPECT_EQ(pub->expect<mqtt::pubrec>().reason_code, mqtt::reason_code::not_authorized);
    send("limited", *pub,
         mqtt::publish{.topic = "acl/ok/1",
                       .payload = "yes",
                       .qos = mqtt::qos::at_least_once,
                       .packet_id = 3,
                       .properties = {}});
    EXPECT_EQ(pub->expect<mqtt::puback>().reason_code, mqtt::reason_code::success);
    // The first message the watcher sees is the allowed one: the denied ones never reached
    // the log.
    auto msg = sub->expect<mqtt::publish>();
    EXPECT_EQ(msg.topic, "acl/ok/1");
    EXPECT_EQ(dropped_not_authorized(), 2);
}

TEST_F(broker_fixture, v3_publish_to_a_denied_topic_is_acknowledged_and_dropped) {
    auto sub = connect("watch", true);
    subscribe("watch", *sub, "acl/#", mqtt::qos::at_least_once);
    next_rules_ = rules("acl/ok/.*", ".*");
    auto pub = connect("limited3", true, mqtt::protocol_version::v3_1_1);
    send("limited3", *pub,
         mqtt::publish{.topic = "acl/denied",
                       .payload = "no",
                       .qos = mqtt::qos::at_least_once,
                       .packet_id = 1,
                       .properties = {}});
    EXPECT_EQ(pub->expect<mqtt::puback>().packet_id, 1);
    send("limited3", *pub,
         mqtt::publish{.topic = "acl/denied",
                       .payload = "no",
                       .qos = mqtt::qos::exactly_once,
                       .packet_id = 2,
                       .properties = {}});
    EXPECT_EQ(pub->expect<mqtt::pubrec>().packet_id, 2);
    send("limited3", *pub, mqtt::pubrel{2, mqtt::reason_code::success, {}});
    auto comp = pub->expect<mqtt::pubcomp>();
    EXPECT_EQ(comp.packet_id, 2);
    EXPECT_EQ(comp.reason_code, mqtt::reason_code::success);  // the QoS 2 flow completes
    send("limited3", *pub,
         mqtt::publish{.topic = "acl/ok/2",
                       .payload = "yes",
                       .qos = mqtt::qos::at_least_once,
                       .packet_id = 3,
                       .properties = {}});
    EXPECT_EQ(pub->expect<mqtt::puback>().packet_id, 3);
    EXPECT_EQ(sub->expect<mqtt::publish>().topic, "acl/ok/2");
    EXPECT_EQ(dropped_not_authorized(), 2);
}

TEST_F(broker_fixture, subscribe_to_a_denied_filter_gets_its_failure_code) {
    for (auto v : {mqtt::protocol_version::v5, mqtt::protocol_version::v3_1_1}) {
        const std::string id = v == mqtt::protocol_version::v5 ? "sub5" : "sub3";
        next_rules_ = rules(".*", "allowed/.*");
        auto ch = connect(id, true, v);
        mqtt::subscribe s;
        s.packet_id = 9;
        s.subscriptions.push_back({"denied/#", {.qos = mqtt::qos::at_least_once}});
        s.subscriptions.push_back({"allowed/x", {.qos = mqtt::qos::at_least_once}});
        send(id, *ch, s);
        auto ack = ch->expect<mqtt::suback>();
        ASSERT_EQ(ack.reason_codes.size(), 2U);
        EXPECT_EQ(ack.reason_codes[0], v == mqtt::protocol_version::v5
                                           ? mqtt::reason_code::not_authorized
                                           : mqtt::reason_code::unspecified_error);
        EXPECT_EQ(ack.reason_codes[1], mqtt::reason_code::granted_qos_1);
    }
}

}  // namespace
}  // namespace starling::broker

// Rate limits (mqtt.rate-limits.*). The long windows (a few tokens per hour) refill nothing
// while a test runs, so the counts below follow from the configured limits alone; refill
// timing is covered with an injected clock in tests/unit/ratelimit/.
namespace starling::broker {
namespace {

class broker_fixture_rate_limits : public broker_fixture {
  protected:
    void SetUp() override {
        incoming_limit_ = {{1000, 1}, {3, 3600}};  // the second window is the one that binds
        outgoing_limit_ = {{1000, 1}, {2, 3600}};
        device_persisted_limit_ = {{1000, 1}, {3, 3600}};
        broker_fixture::SetUp();
    }

    mqtt::publish message(const std::string& topic, int i, mqtt::qos qos) {
        return mqtt::publish{.topic = topic,
                             .payload = std::to_string(i),
                             .qos = qos,
                             .packet_id = static_cast<std::uint16_t>(i + 1),
                             .properties = {}};
    }

    // Polls the metric (it moves on consumer threads) until it reaches `want`, bounded.
    bool dropped_reaches(const std::string& reason, double want) {
        const auto deadline = std::chrono::steady_clock::now() + 5s;
        while (std::chrono::steady_clock::now() < deadline) {
            if (dropped(reason) >= want) {
                return dropped(reason) == want;
            }
            std::this_thread::sleep_for(10ms);  // polling a condition with a deadline
        }
        return false;
    }
};

TEST_F(broker_fixture_rate_limits, v5_publish_over_the_incoming_limit_gets_0x97_and_is_dropped) {
    auto sub = connect("watch", true);
    subscribe("watch", *sub, "in/#", mqtt::qos::at_least_once);
    auto pub = connect("flood", true);
    for (int i = 0; i < 5; ++i) {
        send("flood", *pub, message("in/t", i, mqtt::qos::at_least_once));
        const auto ack = pub->expect<mqtt::puback>();
        EXPECT_EQ(ack.packet_id, i + 1);
        EXPECT_EQ(ack.reason_code,
                  i < 3 ? mqtt::reason_code::success : mqtt::reason_code::quota_exceeded)
            << i;
    }
    send("flood", *pub, message("in/t", 5, mqtt::qos::exactly_once));
    EXPECT_EQ(pub->expect<mqtt::pubrec>().reason_code, mqtt::reason_code::quota_exceeded);
    send("flood", *pub, message("in/t", 6, mqtt::qos::at_most_once));  // silently dropped
    for (int i = 0; i < 3; ++i) {
        auto msg = sub->expect<mqtt::publish>();
        EXPECT_EQ(msg.payload, std::to_string(i));
        send("watch", *sub, mqtt::puback{msg.packet_id, mqtt::reason_code::success, {}});
    }
    EXPECT_FALSE(sub->next(300ms)) << "a dropped PUBLISH reached the log";
    EXPECT_EQ(dropped("incoming_rate"), 4);
    // The breakdown names the publisher and the topic (GET /api/drops).
    const auto& drops = metrics_.broker().drops();
    const auto by_client = drops.query({.by = metrics::drop_key_kind::client});
    ASSERT_EQ(by_client.rows.size(), 1U);
    EXPECT_EQ(by_client.rows[0].key, "flood");
    EXPECT_EQ(
        by_client.rows[0].counts[static_cast<std::size_t>(metrics::drop_reason::incoming_rate)],
        4U);
    const auto by_topic = drops.query({.by = metrics::drop_key_kind::topic});
    ASSERT_EQ(by_topic.rows.size(), 1U);
    EXPECT_EQ(by_topic.rows[0].key, "in/t");
    // The limit is per publisher: another client still has its own budget.
    auto other = connect("calm", true);
    send("calm", *other, message("in/t", 0, mqtt::qos::at_least_once));
    EXPECT_EQ(other->expect<mqtt::puback>().reason_code, mqtt::reason_code::success);
}

TEST_F(broker_fixture_rate_limits, v3_publisher_over_the_incoming_limit_is_disconnected) {
    auto pub = connect("flood3", true, mqtt::protocol_version::v3_1_1);
    for (int i = 0; i < 3; ++i) {
        send("flood3", *pub, message("in3/t", i, mqtt::qos::at_least_once));
        EXPECT_EQ(pub->expect<mqtt::puback>().packet_id, i + 1);
    }
    // v3 has no negative PUBACK: never acknowledge what was dropped, close instead.
    send("flood3", *pub, message("in3/t", 3, mqtt::qos::at_least_once));
    EXPECT_TRUE(pub->wait_closed());
    EXPECT_FALSE(pub->next(100ms)) << "no PUBACK for the dropped message";
    EXPECT_EQ(dropped("incoming_rate"), 1);
}

TEST_F(broker_fixture_rate_limits, outgoing_limit_drops_only_qos0_copies) {
    auto zero = connect("sub0", true);
    subscribe("sub0", *zero, "out/#", mqtt::qos::at_most_once);
    auto one = connect("sub1", true);
    subscribe("sub1", *one, "out/#", mqtt::qos::at_least_once);
    auto pub = connect("pub", true);
    // Three QoS 1 publishes (within the publisher's incoming limit of 3).
    for (int i = 0; i < 3; ++i) {
        send("pub", *pub, message("out/t", i, mqtt::qos::at_least_once));
        EXPECT_EQ(pub->expect<mqtt::puback>().reason_code, mqtt::reason_code::success);
    }
    // The QoS 1 subscriber is never limited.
    for (int i = 0; i < 3; ++i) {
        auto msg = one->expect<mqtt::publish>();
        EXPECT_EQ(msg.payload, std::to_string(i));
        send("sub1", *one, mqtt::puback{msg.packet_id, mqtt::reason_code::success, {}});
    }
    // sub0 < sub1: the router told sub0's actor each copy before sub1's; after syncing with it
    // every copy for sub0 was either sent or dropped.
    sync_with(node_->core().actor_for("sub0"));
    EXPECT_EQ(zero->expect<mqtt::publish>().payload, "0");
    EXPECT_EQ(zero->expect<mqtt::publish>().payload, "1");
    EXPECT_FALSE(zero->next(100ms)) << "a QoS 0 copy over the outgoing limit was sent";
    EXPECT_EQ(dropped("outgoing_rate"), 1);
}

TEST_F(broker_fixture_rate_limits, copies_over_the_device_persisted_limit_are_dropped) {
    auto dev = connect("device", false, mqtt::protocol_version::v5, 3600);
    subscribe("device", *dev, "dev/#", mqtt::qos::at_least_once);
    // Two publishers (the incoming limit is per publisher): six copies for the device inbox.
    for (const std::string id : {"p1", "p2"}) {
        auto pub = connect(id, true);
        for (int i = 0; i < 3; ++i) {
            send(id, *pub, message("dev/" + id, i, mqtt::qos::at_least_once));
            // Admission is not the device limit's business: every publish is accepted.
            EXPECT_EQ(pub->expect<mqtt::puback>().reason_code, mqtt::reason_code::success);
        }
    }
    ASSERT_TRUE(dropped_reaches("device_persisted_limit", 3));
    for (int i = 0; i < 3; ++i) {
        auto msg = dev->expect<mqtt::publish>();
        send("device", *dev, mqtt::puback{msg.packet_id, mqtt::reason_code::success, {}});
    }
    EXPECT_FALSE(dev->next(300ms)) << "a copy over the device-persisted limit was delivered";
}

// ------------------------------------------------------------------------- session limits

class session_limits_fixture : public broker_fixture {
  protected:
    void SetUp() override {
        sessions_limit_ = 2;
        application_clients_limit_ = 1;
        broker_fixture::SetUp();
    }

    // CONNECTs without expecting success; returns the channel and the CONNACK.
    std::pair<std::shared_ptr<fake_channel>, mqtt::connack> try_connect(
        const std::string& client_id, mqtt::protocol_version v = mqtt::protocol_version::v5,
        client_type type = client_type::device, std::uint32_t expiry = 0) {
        auto channel = std::make_shared<fake_channel>(++next_channel_id_, v);
        mqtt::connect c;
        c.protocol_version = v;
        c.client_id = client_id;
        c.clean_start = expiry == 0;
        c.keep_alive = 60;
        if (expiry != 0) {
            c.properties.session_expiry_interval = expiry;
        }
        auto actor = node_->core().actor_for(client_id);
        EXPECT_TRUE(actor->tell_control(client_msg::connect{
            .channel = channel, .packet = std::move(c), .id_assigned = false, .type = type}));
        auto ack = channel->expect<mqtt::connack>();
        return {channel, ack};
    }

    std::int64_t counter(const char* key) {
        std::int64_t value = -1;
        counters_.get(key, [&](result<std::int64_t> r) { value = r.value(); });  // synchronous
        return value;
    }
    std::int64_t sessions() { return counter(session_limits::sessions_key); }
    std::int64_t applications() { return counter(session_limits::application_key); }

    void disconnect(const std::string& client_id, fake_channel& ch) {
        send(client_id, ch, mqtt::disconnect{});
        ASSERT_TRUE(ch.wait_closed());
        sync_with(node_->core().actor_for(client_id));
    }
};

TEST_F(session_limits_fixture, a_new_session_over_the_limit_is_refused_a_reconnect_never) {
    auto [a, a_ack] = try_connect("a");
    ASSERT_EQ(a_ack.reason_code, mqtt::reason_code::success);
    auto [b, b_ack] = try_connect("b", mqtt::protocol_version::v5, client_type::device, 3600);
    ASSERT_EQ(b_ack.reason_code, mqtt::reason_code::success);
    EXPECT_EQ(sessions(), 2);

    auto [c, c_ack] = try_connect("c");
    EXPECT_EQ(c_ack.reason_code, mqtt::reason_code::quota_exceeded);
    EXPECT_TRUE(c_ack.properties.reason_string.has_value());
    EXPECT_TRUE(c->wait_closed());
    auto [c3, c3_ack] = try_connect("c3", mqtt::protocol_version::v3_1_1);
    EXPECT_EQ(mqtt::to_connect_return_code(c3_ack.reason_code),
              mqtt::connect_return_code::server_unavailable);
    EXPECT_EQ(sessions(), 2) << "a refused CONNECT must give its reservation back";

    // Takeover of a live session and resumption of a persistent one: never refused.
    disconnect("b", *b);
    auto [a2, a2_ack] = try_connect("a");
    EXPECT_EQ(a2_ack.reason_code, mqtt::reason_code::success);
    auto [b2, b2_ack] = try_connect("b", mqtt::protocol_version::v5, client_type::device, 3600);
    EXPECT_EQ(b2_ack.reason_code, mqtt::reason_code::success);
    EXPECT_TRUE(b2_ack.session_present);
    EXPECT_EQ(sessions(), 2);

    // A non-persistent session that ends frees its unit.
    disconnect("a", *a2);
    EXPECT_EQ(sessions(), 1);
    auto [d, d_ack] = try_connect("d");
    EXPECT_EQ(d_ack.reason_code, mqtt::reason_code::success);
    EXPECT_EQ(sessions(), 2);
}

TEST_F(session_limits_fixture, application_limit_and_type_changes) {
    auto [app, app_ack] =
        try_connect("app", mqtt::protocol_version::v5, client_type::application, 3600);
    ASSERT_EQ(app_ack.reason_code, mqtt::reason_code::success);
    EXPECT_EQ(applications(), 1);
    auto [other, other_ack] =
        try_connect("other", mqtt::protocol_version::v5, client_type::application, 3600);
    EXPECT_EQ(other_ack.reason_code, mqtt::reason_code::quota_exceeded);
    EXPECT_EQ(applications(), 1);
    EXPECT_EQ(sessions(), 1) << "the refused APPLICATION CONNECT gives its session unit back";

    // The same client comes back as a DEVICE (credentials changed): not refused, and the
    // APPLICATION count follows the type.
    disconnect("app", *app);
    auto [dev, dev_ack] = try_connect("app", mqtt::protocol_version::v5, client_type::device, 3600);
    EXPECT_EQ(dev_ack.reason_code, mqtt::reason_code::success);
    EXPECT_EQ(applications(), 0);
    EXPECT_EQ(sessions(), 1);
    auto [now_ok, now_ok_ack] =
        try_connect("other", mqtt::protocol_version::v5, client_type::application, 3600);
    EXPECT_EQ(now_ok_ack.reason_code, mqtt::reason_code::success);
    EXPECT_EQ(applications(), 1);
    EXPECT_EQ(sessions(), 2);
}

TEST_F(session_limits_fixture, counters_are_rebuilt_from_the_restored_sessions) {
    auto [p, p_ack] = try_connect("p", mqtt::protocol_version::v5, client_type::device, 3600);
    ASSERT_EQ(p_ack.reason_code, mqtt::reason_code::success);
    auto [q, q_ack] = try_connect("q");
    ASSERT_EQ(q_ack.reason_code, mqtt::reason_code::success);
    disconnect("p", *p);
    // Drift, as a crash between a reservation and its session would leave.
    counters_.add(session_limits::sessions_key, 5, [](result<std::int64_t>) {});
    close();
    open();
    // Only the persistent session survives the restart; the counter says so again.
    EXPECT_EQ(sessions(), 1);
    auto [n, n_ack] = try_connect("n");
    EXPECT_EQ(n_ack.reason_code, mqtt::reason_code::success);
    EXPECT_EQ(sessions(), 2);
}

}  // namespace
}  // namespace starling::broker

namespace starling::broker {
namespace {

// Persistent DEVICE backpressure (docs/backpressure.md): a channel that becomes writable again
// with messages in flight gets no new ones from the inbox until they are acknowledged or the
// backoff schedule runs out.
class broker_fixture_resume : public broker_fixture {
  protected:
    // Publishes `count` QoS 1 messages "<first>".."<first+count-1>" on `topic` and waits for
    // the PUBACKs (the copies are then in the log).
    void publish_numbered(fake_channel& pub, int first, int count, const char* topic = "d/x") {
        for (int i = first; i < first + count; ++i) {
            send("pub", pub,
                 mqtt::publish{.topic = topic,
                               .payload = std::to_string(i),
                               .qos = mqtt::qos::at_least_once,
                               .packet_id = static_cast<std::uint16_t>(i),
                               .properties = {}});
        }
        for (int i = first; i < first + count; ++i) {
            EXPECT_EQ(pub.expect<mqtt::puback>().packet_id, i);
        }
    }
    void set_writable(const fake_channel& ch, bool writable) {
        auto actor = node_->core().actor_for("dev");
        ASSERT_TRUE(actor->tell_control(
            client_msg::writability{.channel_id = ch.id(), .writable = writable}));
        sync_with(actor);
    }
};

TEST_F(broker_fixture_resume, writable_again_with_messages_in_flight_waits_for_their_acks) {
    resume_backoff_ = {30s};  // far longer than the test: only acknowledgements resume it
    close();
    open();
    auto sub = connect("dev", false, mqtt::protocol_version::v5, 3600);
    subscribe("dev", *sub, "d/#", mqtt::qos::at_least_once);
    auto pub = connect("pub", true);
    publish_numbered(*pub, 1, 3);
    std::vector<mqtt::publish> in_flight;
    for (int i = 1; i <= 3; ++i) {
        in_flight.push_back(sub->expect<mqtt::publish>());
        EXPECT_EQ(in_flight.back().payload, std::to_string(i));
    }
    set_writable(*sub, false);
    publish_numbered(*pub, 4, 2);  // lands in the inbox while the channel is congested
    EXPECT_FALSE(sub->next(300ms)) << "delivered to a non-writable channel";

    set_writable(*sub, true);
    EXPECT_FALSE(sub->next(300ms)) << "delivered while 3 messages were still in flight";
    send("dev", *sub, mqtt::puback{in_flight[0].packet_id, mqtt::reason_code::success, {}});
    send("dev", *sub, mqtt::puback{in_flight[1].packet_id, mqtt::reason_code::success, {}});
    EXPECT_FALSE(sub->next(300ms)) << "delivered while 1 message was still in flight";
    send("dev", *sub, mqtt::puback{in_flight[2].packet_id, mqtt::reason_code::success, {}});
    // The last acknowledgement ends the wait at once, long before the 30 s step.
    for (int i = 4; i <= 5; ++i) {
        auto msg = sub->expect<mqtt::publish>(5s);
        EXPECT_EQ(msg.payload, std::to_string(i));
        EXPECT_FALSE(msg.dup);
    }
}

TEST_F(broker_fixture_resume, delivery_resumes_when_the_backoff_runs_out_without_acks) {
    resume_backoff_ = {100ms, 200ms};
    close();
    open();
    auto sub = connect("dev", false, mqtt::protocol_version::v5, 3600);
    subscribe("dev", *sub, "d/#", mqtt::qos::at_least_once);
    auto pub = connect("pub", true);
    publish_numbered(*pub, 1, 2);
    for (int i = 1; i <= 2; ++i) {
        EXPECT_EQ(sub->expect<mqtt::publish>().payload, std::to_string(i));
    }
    set_writable(*sub, false);
    publish_numbered(*pub, 3, 2);
    const auto writable_at = std::chrono::steady_clock::now();
    set_writable(*sub, true);
    // No acknowledgement ever comes: after 100 + 200 ms the inbox is read again and the rest
    // is delivered, in order.
    for (int i = 3; i <= 4; ++i) {
        auto msg = sub->expect<mqtt::publish>(5s);
        EXPECT_EQ(msg.payload, std::to_string(i));
    }
    EXPECT_GE(std::chrono::steady_clock::now() - writable_at, 300ms);
}

TEST_F(broker_fixture_resume, writable_again_with_nothing_in_flight_resumes_at_once) {
    resume_backoff_ = {30s};
    close();
    open();
    auto sub = connect("dev", false, mqtt::protocol_version::v5, 3600);
    subscribe("dev", *sub, "d/#", mqtt::qos::at_least_once);
    set_writable(*sub, false);
    auto pub = connect("pub", true);
    publish_numbered(*pub, 1, 2);
    EXPECT_FALSE(sub->next(300ms)) << "delivered to a non-writable channel";
    set_writable(*sub, true);
    for (int i = 1; i <= 2; ++i) {
        EXPECT_EQ(sub->expect<mqtt::publish>(5s).payload, std::to_string(i));
    }
}

}  // namespace
}  // namespace starling::broker

namespace starling::broker {
namespace {

// Shared groups with persistent DEVICE members (group_inbox.h): a copy no member can take now
// waits in the group's inbox for whichever member is available first.
class broker_fixture_group_inbox : public broker_fixture_resume {
  protected:
    std::shared_ptr<fake_channel> member(const std::string& id, bool present = false) {
        auto ch = connect(id, false, mqtt::protocol_version::v5, 3600, present);
        if (!present) {
            subscribe(id, *ch, "$share/g/s/#", mqtt::qos::at_least_once);
        }
        return ch;
    }
    void leave(const std::string& id, fake_channel& ch) {
        send(id, ch, mqtt::disconnect{});
        ASSERT_TRUE(ch.wait_closed());
    }
    std::size_t group_inbox_size() {
        std::promise<std::size_t> size;
        node_->core().inbox().read_pending(group_inbox_key("g", "s/#"), 1000,
                                           [&](result<std::vector<inbox_message>> r) {
                                               size.set_value(r ? r.value().size() : 0);
                                           });
        return size.get_future().get();
    }
    // A PUBACK means the message is in the log, not that it was routed: poll (bounded) until
    // the router has put `count` copies in the group's inbox.
    void wait_group_inbox(std::size_t count) {
        for (int i = 0; i < 250 && group_inbox_size() < count; ++i) {
            std::this_thread::sleep_for(20ms);
        }
        ASSERT_EQ(group_inbox_size(), count);
    }
    void publish_to_group(fake_channel& pub, int first, int count) {
        publish_numbered(pub, first, count, "s/x");
    }
};

TEST_F(broker_fixture_group_inbox, copies_wait_for_whichever_member_comes_back_first) {
    auto a = member("a");
    leave("a", *a);
    auto b = member("b");
    leave("b", *b);
    auto pub = connect("pub", true);
    publish_to_group(*pub, 1, 10);
    wait_group_inbox(10);

    // b is back first and gets every copy, in order — not the half round-robin gave it.
    auto b_again = member("b", true);
    for (int i = 1; i <= 10; ++i) {
        auto msg = b_again->expect<mqtt::publish>();
        EXPECT_EQ(msg.payload, std::to_string(i));
        send("b", *b_again, mqtt::puback{msg.packet_id, mqtt::reason_code::success, {}});
    }
    auto a_again = member("a", true);
    EXPECT_FALSE(a_again->next(300ms)) << "a copy delivered to both members";
    EXPECT_EQ(dropped("no_usable_shared_member"), 0);
}

TEST_F(broker_fixture_group_inbox, a_congested_member_takes_the_copies_once_it_drains) {
    auto a = member("a");
    auto b = member("b");
    leave("b", *b);
    ASSERT_TRUE(node_->core().actor_for("a")->tell_control(
        client_msg::writability{.channel_id = a->id(), .writable = false}));
    sync_with(node_->core().actor_for("a"));
    auto pub = connect("pub", true);
    publish_to_group(*pub, 1, 5);
    wait_group_inbox(5);
    EXPECT_FALSE(a->next(300ms)) << "delivered to a non-writable channel";

    ASSERT_TRUE(node_->core().actor_for("a")->tell_control(
        client_msg::writability{.channel_id = a->id(), .writable = true}));
    for (int i = 1; i <= 5; ++i) {
        EXPECT_EQ(a->expect<mqtt::publish>(5s).payload, std::to_string(i));
    }
    auto b_again = member("b", true);
    EXPECT_FALSE(b_again->next(300ms)) << "a copy delivered to both members";
}

TEST_F(broker_fixture_group_inbox, without_a_persistent_member_the_copy_is_dropped_and_counted) {
    // A non-persistent member that is congested: nobody could keep the copy.
    auto a = connect("a", true);
    subscribe("a", *a, "$share/g/s/#", mqtt::qos::at_least_once);
    ASSERT_TRUE(node_->core().actor_for("a")->tell_control(
        client_msg::writability{.channel_id = a->id(), .writable = false}));
    sync_with(node_->core().actor_for("a"));
    auto pub = connect("pub", true);
    publish_to_group(*pub, 1, 3);
    for (int i = 0; i < 250 && dropped("no_usable_shared_member") < 3; ++i) {
        std::this_thread::sleep_for(20ms);
    }
    EXPECT_EQ(dropped("no_usable_shared_member"), 3);
    EXPECT_EQ(group_inbox_size(), 0U);
}

}  // namespace
}  // namespace starling::broker

// The throughput quota's charge points (mqtt.rate-limits.total, docs/backpressure.md). The
// lease draws from a store the test answers by hand, so a charge that waits for the store can
// be held open while later packets arrive.
namespace starling::broker {
namespace {

class manual_counters final : public shared_counters {
  public:
    void add(std::string, std::int64_t, callback<std::int64_t> done) override { done(0); }
    void get(std::string, callback<std::int64_t> done) override { done(0); }
    void try_consume(std::string, std::vector<bandwidth>, std::int64_t tokens,
                     callback<std::int64_t> done) override {
        std::lock_guard lock(mutex_);
        calls_.push_back({tokens, std::move(done)});
        cv_.notify_all();
    }
    void refund(std::string, std::vector<bandwidth>, std::int64_t tokens,
                callback<std::int64_t> done) override {
        done(tokens);
    }
    bool healthy() const override { return true; }

    // Waits (bounded) for the next draw; returns the tokens it asks for and answers it with
    // min(asked, grant) (grant < 0: everything asked).
    std::int64_t answer_next(std::int64_t grant = -1) {
        std::unique_lock lock(mutex_);
        if (!cv_.wait_for(lock, 5s, [&] { return !calls_.empty(); })) {
            ADD_FAILURE() << "no draw within 5 s";
            return -1;
        }
        auto [tokens, done] = std::move(calls_.front());
        calls_.pop_front();
        lock.unlock();
        done(grant < 0 ? tokens : std::min(tokens, grant));
        return tokens;
    }

  private:
    std::mutex mutex_;
    std::condition_variable cv_;
    std::deque<std::pair<std::int64_t, callback<std::int64_t>>> calls_;
};

class broker_fixture_quota : public broker_fixture {
  protected:
    static constexpr std::int64_t block = 1;

    void SetUp() override {
        ratelimit::quota_options o;
        o.limits = {{1000000, 1}};
        o.block_size = block;
        o.lease_return = 0ms;
        quota_ = ratelimit::quota_lease::create(store_, system_clock::instance(), o);
        broker_fixture::SetUp();
    }

    mqtt::publish message(const std::string& topic, std::uint16_t id, mqtt::qos qos) {
        return mqtt::publish{
            .topic = topic, .payload = std::to_string(id), .qos = qos, .packet_id = id};
    }
    double metric(const std::string& name) {
        const auto text = metrics_.serialize();
        const auto at = text.find("\n" + name + " ");
        return at == std::string::npos ? -1 : std::stod(text.substr(at + name.size() + 2));
    }

    manual_counters store_;
};

TEST_F(broker_fixture_quota, a_publish_costs_one_plus_persistent_subscribers_and_shared_groups) {
    // Two persistent QoS 1 subscribers (one of them subscribed twice), a persistent QoS 0 one,
    // a non-persistent one, and one shared group of two members: fan-out 2 + 1.
    for (const auto* id : {"dev1", "dev2"}) {
        auto ch = connect(id, false, mqtt::protocol_version::v5, 3600);
        subscribe(id, *ch, "f/#", mqtt::qos::at_least_once);
        subscribe(id, *ch, "f/+", mqtt::qos::at_least_once, 2);
    }
    auto zero = connect("dev0", false, mqtt::protocol_version::v5, 3600);
    subscribe("dev0", *zero, "f/x", mqtt::qos::at_most_once);
    auto plain = connect("plain", true);
    subscribe("plain", *plain, "f/x", mqtt::qos::at_least_once);
    for (const auto* id : {"m1", "m2"}) {
        auto ch = connect(id, true);
        subscribe(id, *ch, "$share/g/f/x", mqtt::qos::at_least_once);
    }
    auto pub = connect("pub", true);
    send("pub", *pub, message("f/x", 1, mqtt::qos::at_least_once));
    // Nothing drawn yet: the charge asks for its cost plus one block.
    EXPECT_EQ(store_.answer_next(), 1 + 3 + block);
    EXPECT_EQ(pub->expect<mqtt::puback>().reason_code, mqtt::reason_code::success);
}

TEST_F(broker_fixture_quota, a_qos0_publish_has_no_stored_copies_to_pay_for) {
    auto dev = connect("dev", false, mqtt::protocol_version::v5, 3600);
    subscribe("dev", *dev, "z/#", mqtt::qos::at_least_once);
    auto member = connect("m", true);
    subscribe("m", *member, "$share/g/z/#", mqtt::qos::at_least_once);
    auto pub = connect("pub", true);
    send("pub", *pub, message("z/x", 1, mqtt::qos::at_most_once));
    EXPECT_EQ(store_.answer_next(), 1 + 1 + block);  // the shared group only
}

TEST_F(broker_fixture_quota, packets_after_a_waiting_publish_wait_behind_it_in_order) {
    auto sub = connect("sub", true);
    subscribe("sub", *sub, "w/#", mqtt::qos::at_most_once);
    auto pub = connect("pub", true);
    send("pub", *pub, message("w/t", 1, mqtt::qos::at_least_once));
    send("pub", *pub, message("w/t", 2, mqtt::qos::at_most_once));
    send("pub", *pub, mqtt::pingreq{});
    send("pub", *pub, message("w/t", 3, mqtt::qos::at_least_once));
    sync_with(node_->core().actor_for("pub"));
    EXPECT_EQ(metric("throughputQuotaWaitingPackets"), 4);
    EXPECT_FALSE(pub->next(100ms)) << "a packet overtook the publish waiting for tokens";
    EXPECT_FALSE(sub->next(0ms));
    EXPECT_EQ(store_.answer_next(), 1 + block);  // the first publish's draw
    // The rest draw in turn (the balance is one block): answer until all three are through.
    std::vector<std::uint16_t> acks;
    bool pong = false;
    while (acks.size() < 2 || !pong) {
        auto p = pub->next(200ms);
        if (!p) {
            ASSERT_GT(store_.answer_next(), 0);
            continue;
        }
        if (auto* a = std::get_if<mqtt::puback>(&*p)) {
            EXPECT_EQ(a->reason_code, mqtt::reason_code::success);
            acks.push_back(a->packet_id);
        } else {
            ASSERT_TRUE(std::holds_alternative<mqtt::pingresp>(*p));
            pong = true;
        }
    }
    EXPECT_EQ(acks, (std::vector<std::uint16_t>{1, 3}));
    for (const auto* want : {"1", "2", "3"}) {
        EXPECT_EQ(sub->expect<mqtt::publish>().payload, want);  // published in the order sent
    }
    sync_with(node_->core().actor_for("pub"));
    EXPECT_EQ(metric("throughputQuotaWaitingPackets"), 0);
    EXPECT_GE(metric("throughputQuotaChargeWaits_total"), 1);
}

TEST_F(broker_fixture_quota, a_close_waits_for_the_publishes_before_it) {
    auto sub = connect("sub", true);
    subscribe("sub", *sub, "c/#", mqtt::qos::at_most_once);
    auto pub = connect("pub", true);
    send("pub", *pub, message("c/t", 1, mqtt::qos::at_most_once));
    auto actor = node_->core().actor_for("pub");
    ASSERT_TRUE(actor->tell(client_msg::closed{.channel_id = pub->id(), .reason = "eof"}));
    sync_with(actor);
    EXPECT_EQ(store_.answer_next(), 1 + block);
    // Admitted after the close arrived, and still published: the client sent it first.
    EXPECT_EQ(sub->expect<mqtt::publish>().payload, "1");
    EXPECT_TRUE(pub->wait_closed());
}

TEST_F(broker_fixture_quota, a_refused_v5_publish_gets_0x97_and_a_v3_publisher_is_closed) {
    auto pub = connect("pub", true);
    send("pub", *pub, message("r/t", 1, mqtt::qos::at_least_once));
    store_.answer_next(0);  // the bucket is empty
    const auto ack = pub->expect<mqtt::puback>();
    EXPECT_EQ(ack.reason_code, mqtt::reason_code::quota_exceeded);
    EXPECT_EQ(dropped("quota"), 1);
    EXPECT_EQ(metric("throughputQuotaRefused_total"), 1);
    EXPECT_TRUE(quota_->state().reached);

    auto v3 = connect("pub3", true, mqtt::protocol_version::v3_1_1);
    // Still inside the empty backoff: refused without asking the store.
    send("pub3", *v3, message("r/t", 1, mqtt::qos::at_least_once));
    EXPECT_TRUE(v3->wait_closed());
    EXPECT_FALSE(v3->next(100ms)) << "no PUBACK for the refused message";
    EXPECT_EQ(dropped("quota"), 2);
}

}  // namespace
}  // namespace starling::broker
