// Persistent sessions, example by example (the model-based test in session_model_test.cpp covers
// random sequences): backlogs longer than the in-flight window, a v5 resume with Session Expiry
// 0, 3.1.1 publishers that pipeline past the Receive Maximum, the session-expiry maximum on
// every path, and a session resumed by a client whose topic rules differ.

#include "auth/provider.h"
#include "routing/subscription_trie.h"

#include "broker_fixture.h"
#include <gtest/gtest.h>

namespace starling::broker {
namespace {

class persistent_session_test : public broker_fixture {
  protected:
    void SetUp() override {
        max_in_flight_ = 5;
        broker_fixture::SetUp();
    }

    void publish_qos1(const std::string& topic, int first, int count) {
        auto pub = connect("pub-" + std::to_string(++publishers_), true);
        for (int i = first; i < first + count; ++i) {
            send("pub-" + std::to_string(publishers_), *pub,
                 mqtt::publish{.topic = topic,
                               .payload = std::to_string(i),
                               .qos = mqtt::qos::at_least_once,
                               .packet_id = 1});
            ASSERT_EQ(pub->expect<mqtt::puback>().packet_id, 1);  // one at a time
        }
    }

    // Receives `count` PUBLISHes with payloads first.. in order, acknowledging each.
    void drain(const std::string& id, fake_channel& ch, int first, int count) {
        for (int i = first; i < first + count; ++i) {
            auto msg = ch.expect_opt<mqtt::publish>();
            ASSERT_TRUE(msg) << "message " << i << " never came";
            ASSERT_EQ(msg->payload, std::to_string(i));
            send(id, ch, mqtt::puback{msg->packet_id, mqtt::reason_code::success, {}});
        }
    }

    int publishers_ = 0;
};

TEST_F(persistent_session_test, a_backlog_longer_than_the_window_drains_on_one_connection) {
    for (auto version : {mqtt::protocol_version::v3_1_1, mqtt::protocol_version::v5}) {
        const std::string id = version == mqtt::protocol_version::v5 ? "dev5" : "dev3";
        auto first = connect(id, false, version, 3600);
        subscribe(id, *first, "b/" + id, mqtt::qos::at_least_once);
        send(id, *first, mqtt::disconnect{});
        ASSERT_TRUE(first->wait_closed());

        constexpr int backlog = 40;  // eight windows
        publish_qos1("b/" + id, 0, backlog);
        auto again = connect(id, false, version, 3600, true);
        drain(id, *again, 0, backlog);
        // Live messages keep flowing on the same connection afterwards.
        publish_qos1("b/" + id, backlog, 3);
        drain(id, *again, backlog, 3);
    }
}

TEST_F(persistent_session_test, a_window_acknowledged_out_of_order_still_drains) {
    auto first = connect("dev", false, mqtt::protocol_version::v5, 3600);
    subscribe("dev", *first, "o", mqtt::qos::at_least_once);
    send("dev", *first, mqtt::disconnect{});
    ASSERT_TRUE(first->wait_closed());
    publish_qos1("o", 0, 20);
    auto again = connect("dev", false, mqtt::protocol_version::v5, 3600, true);
    std::vector<std::string> got;
    while (got.size() < 20) {
        std::vector<mqtt::publish> window;
        for (int i = 0; i < 5 && got.size() + window.size() < 20; ++i) {
            auto msg = again->expect_opt<mqtt::publish>();
            ASSERT_TRUE(msg) << "after " << got.size() << " messages";
            window.push_back(*msg);
        }
        for (auto it = window.rbegin(); it != window.rend(); ++it) {  // newest first
            send("dev", *again, mqtt::puback{it->packet_id, mqtt::reason_code::success, {}});
        }
        for (auto& m : window) {
            got.push_back(m.payload);
        }
    }
    for (int i = 0; i < 20; ++i) {
        EXPECT_EQ(got[static_cast<std::size_t>(i)], std::to_string(i));
    }
}

TEST_F(persistent_session_test, v5_resume_with_expiry_0_delivers_the_queue_then_ends_the_session) {
    auto first = connect("dev", false, mqtt::protocol_version::v5, 3600);
    subscribe("dev", *first, "e", mqtt::qos::at_least_once);
    send("dev", *first, mqtt::disconnect{});
    ASSERT_TRUE(first->wait_closed());
    publish_qos1("e", 0, 12);

    // Clean Start 0, no Session Expiry Interval: resumed (MQTT-3.1.2-4).
    auto again = connect("dev", false, mqtt::protocol_version::v5, 0, true);
    drain("dev", *again, 0, 12);
    send("dev", *again, mqtt::disconnect{});
    ASSERT_TRUE(again->wait_closed());
    // The interval of the last connection (0) ended the session with it.
    auto third = connect("dev", false, mqtt::protocol_version::v5, 3600, false);
}

class v311_window_test : public persistent_session_test {};

TEST_F(v311_window_test, a_311_publisher_past_the_window_is_held_not_disconnected) {
    auto sub = connect("sub", true, mqtt::protocol_version::v3_1_1);
    subscribe("sub", *sub, "p", mqtt::qos::at_least_once);
    auto pub = connect("pub", true, mqtt::protocol_version::v3_1_1);
    constexpr int count = 23;  // more than four windows of 5, sent without waiting
    for (int i = 0; i < count; ++i) {
        send("pub", *pub,
             mqtt::publish{.topic = "p",
                           .payload = std::to_string(i),
                           .qos = mqtt::qos::at_least_once,
                           .packet_id = static_cast<std::uint16_t>(i + 1)});
    }
    for (int i = 0; i < count; ++i) {
        auto ack = pub->expect_opt<mqtt::puback>();
        ASSERT_TRUE(ack) << "PUBACK " << i + 1;
        EXPECT_EQ(ack->packet_id, i + 1);
    }
    EXPECT_FALSE(pub->closed());
    EXPECT_FALSE(pub->reading_held()) << "reading resumes once the window has room";
    drain("sub", *sub, 0, count);
}

TEST_F(v311_window_test, the_held_packets_are_handled_before_the_connection_closes) {
    auto sub = connect("sub", true, mqtt::protocol_version::v3_1_1);
    subscribe("sub", *sub, "c", mqtt::qos::at_least_once);
    auto pub = connect("pub", true, mqtt::protocol_version::v3_1_1);
    constexpr int count = 12;
    auto actor = node_->core().actor_for("pub");
    for (int i = 0; i < count; ++i) {
        send("pub", *pub,
             mqtt::publish{.topic = "c",
                           .payload = std::to_string(i),
                           .qos = mqtt::qos::at_least_once,
                           .packet_id = static_cast<std::uint16_t>(i + 1)});
    }
    // The client hangs up right after sending: what it sent is still published, in order.
    ASSERT_TRUE(actor->tell(client_msg::closed{
        .channel_id = pub->id(), .reason = "test", .protocol_error = std::nullopt}));
    drain("sub", *sub, 0, count);
    EXPECT_TRUE(pub->wait_closed());
}

// At 5.0 the same is a protocol violation (0x93): client_actor_test.cpp,
// receive_maximum_violation_disconnects_with_0x93.

class expiry_cap_test : public broker_fixture {
  protected:
    void SetUp() override {
        max_session_expiry_ = 1;
        broker_fixture::SetUp();
    }
    // The session record is gone: the expiry timer ended the session (bounded wait).
    bool ends_within(const std::string& id, std::chrono::milliseconds limit) {
        const auto deadline = std::chrono::steady_clock::now() + limit;
        while (node_->core().sessions().find_session(id)) {
            if (std::chrono::steady_clock::now() >= deadline) {
                return false;
            }
            std::this_thread::sleep_for(20ms);  // polling the registry, not standing in for it
        }
        return true;
    }
};

TEST_F(expiry_cap_test, connack_tells_a_v5_client_the_interval_in_force) {
    auto ch = std::make_shared<fake_channel>(++next_channel_id_, mqtt::protocol_version::v5);
    mqtt::connect c;
    c.protocol_version = mqtt::protocol_version::v5;
    c.client_id = "forever";
    c.clean_start = false;
    c.properties.session_expiry_interval = 0xFFFFFFFF;
    ASSERT_TRUE(node_->core().actor_for("forever")->tell_control(
        client_msg::connect{.channel = ch, .packet = std::move(c)}));
    auto ack = ch->expect<mqtt::connack>();
    EXPECT_EQ(ack.properties.session_expiry_interval, 1U);
    send("forever", *ch, mqtt::disconnect{});
    ASSERT_TRUE(ch->wait_closed());
    EXPECT_TRUE(ends_within("forever", 5s)) << "0xFFFFFFFF must not outlive the maximum";
}

TEST_F(expiry_cap_test, a_311_persistent_session_gets_the_maximum) {
    auto ch = connect("old", false, mqtt::protocol_version::v3_1_1);
    subscribe("old", *ch, "x", mqtt::qos::at_least_once);
    send("old", *ch, mqtt::disconnect{});
    ASSERT_TRUE(ch->wait_closed());
    EXPECT_TRUE(ends_within("old", 5s)) << "3.1.1 clean session 0 must not outlive the maximum";
    connect("old", false, mqtt::protocol_version::v3_1_1, 0, /*expect_present=*/false);
}

// issue 13, item 5: credentials not bound to a client id resume another client's session.
TEST_F(persistent_session_test, a_session_resumed_under_other_rules_keeps_only_what_they_allow) {
    next_rules_ = rules("bob/.*", "bob/.*");
    auto bob = connect("bob", false, mqtt::protocol_version::v5, 3600);
    subscribe("bob", *bob, "bob/secret", mqtt::qos::at_least_once, 1);
    send("bob", *bob, mqtt::disconnect{});
    ASSERT_TRUE(bob->wait_closed());
    publish_qos1("bob/secret", 0, 3);  // queued for Bob
    wait_routed(3);                    // in Bob's inbox before anyone resumes the session

    next_rules_ = rules("alice/.*", "alice/.*");
    auto alice = connect("bob", false, mqtt::protocol_version::v5, 3600, true);
    // The queued copies are dropped and counted, never delivered.
    const auto deadline = std::chrono::steady_clock::now() + 5s;
    while (dropped_not_authorized() < 3 && std::chrono::steady_clock::now() < deadline) {
        std::this_thread::sleep_for(10ms);  // polling a counter
    }
    EXPECT_EQ(dropped_not_authorized(), 3);
    // Nor do live ones.
    publish_qos1("bob/secret", 3, 2);
    EXPECT_FALSE(alice->next(300ms).has_value());
    routing::rcu_reader_registration reader;
    std::size_t matched = 0;
    node_->core().trie().match("bob/secret",
                               [&](std::string_view, const routing::subscription&) { ++matched; });
    EXPECT_EQ(matched, 0U) << "the inherited subscription is gone";
}

}  // namespace
}  // namespace starling::broker
