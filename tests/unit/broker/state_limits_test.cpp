// The limits that keep one client from growing a node's state without bound (docs/security.md,
// Limits): subscriptions per client, retained messages (count and bytes), topic levels, and a
// will checked like any PUBLISH (QoS, retain, levels at CONNECT; rate limits when it fires).

#include "broker_fixture.h"
#include <gtest/gtest.h>

#include <string>
#include <variant>

namespace starling::broker {
namespace {

class state_limits_test : public broker_fixture {
  protected:
    void SetUp() override {
        max_subscriptions_per_client_ = 3;
        max_retained_messages_ = 2;
        max_topic_segments_ = 4;
        broker_fixture::SetUp();
    }

    std::vector<mqtt::reason_code> subscribe_codes(const std::string& id, fake_channel& ch,
                                                   std::vector<std::string> filters,
                                                   std::uint16_t packet_id) {
        mqtt::subscribe s;
        s.packet_id = packet_id;
        for (auto& f : filters) {
            s.subscriptions.push_back({std::move(f), {.qos = mqtt::qos::at_least_once}});
        }
        send(id, ch, s);
        return ch.expect<mqtt::suback>().reason_codes;
    }

    mqtt::reason_code publish_retained(const std::string& id, fake_channel& ch,
                                       const std::string& topic, const std::string& payload,
                                       std::uint16_t packet_id) {
        send(id, ch,
             mqtt::publish{.topic = topic,
                           .payload = payload,
                           .qos = mqtt::qos::at_least_once,
                           .retain = true,
                           .packet_id = packet_id});
        return ch.expect<mqtt::puback>().reason_code;
    }

    double counter(const std::string& name) {
        const auto text = metrics_.serialize();
        const auto at = text.find("\n" + name + " ");
        return at == std::string::npos ? -1 : std::stod(text.substr(at + name.size() + 2));
    }
};

TEST_F(state_limits_test, subscriptions_beyond_the_per_client_maximum_are_refused) {
    auto v5 = connect("five", true);
    using rc = mqtt::reason_code;
    EXPECT_EQ(
        subscribe_codes("five", *v5, {"a", "b", "c", "d"}, 1),
        (std::vector{rc::granted_qos_1, rc::granted_qos_1, rc::granted_qos_1, rc::quota_exceeded}));
    // Replacing one it holds is always allowed; a new one still is not.
    EXPECT_EQ(subscribe_codes("five", *v5, {"a", "e"}, 2),
              (std::vector{rc::granted_qos_1, rc::quota_exceeded}));
    EXPECT_EQ(counter("subscriptionsRefused_total"), 2);

    auto v3 = connect("three", true, mqtt::protocol_version::v3_1_1);
    EXPECT_EQ(subscribe_codes("three", *v3, {"a", "b", "c", "d"}, 1).back(),
              rc::unspecified_error);  // 0x80 at 3.1.1
}

TEST_F(state_limits_test, retained_messages_beyond_the_maximum_are_not_stored) {
    auto v5 = connect("five", true);
    EXPECT_EQ(publish_retained("five", *v5, "r/1", "one", 1), mqtt::reason_code::success);
    EXPECT_EQ(publish_retained("five", *v5, "r/2", "two", 2), mqtt::reason_code::success);
    // A third topic is refused at v5; replacing a stored one is not.
    EXPECT_EQ(publish_retained("five", *v5, "r/3", "three", 3), mqtt::reason_code::quota_exceeded);
    EXPECT_EQ(publish_retained("five", *v5, "r/1", "one again", 4), mqtt::reason_code::success);
    EXPECT_EQ(dropped("retained_limit"), 1);

    // Routed before anyone subscribes: live copies routed after a SUBSCRIBE would be another
    // test (client_actor_test's retained-echo tests).
    wait_routed(3);

    // 3.1.1 cannot be told: the message is published, but not retained.
    auto live = connect("live", true);
    subscribe("live", *live, "r/#", mqtt::qos::at_least_once, 1);
    for (int i = 0; i < 2; ++i) {  // the two stored ones
        auto m = live->expect<mqtt::publish>();
        send("live", *live, mqtt::puback{m.packet_id, mqtt::reason_code::success, {}});
    }
    auto v3 = connect("three", true, mqtt::protocol_version::v3_1_1);
    EXPECT_EQ(publish_retained("three", *v3, "r/4", "four", 1), mqtt::reason_code::success);
    auto delivered = live->expect<mqtt::publish>();
    EXPECT_EQ(delivered.payload, "four");
    EXPECT_EQ(counter("retainedMsgsRefused_total"), 2);

    wait_routed(4);
    auto later = connect("later", true);
    subscribe("later", *later, "r/#", mqtt::qos::at_least_once, 1);
    std::set<std::string> got;
    for (int i = 0; i < 2; ++i) {
        got.insert(later->expect<mqtt::publish>().payload);
    }
    EXPECT_EQ(got, (std::set<std::string>{"one again", "two"}));
    auto extra = later->next(200ms);
    const auto* extra_publish = extra ? std::get_if<mqtt::publish>(&*extra) : nullptr;
    EXPECT_FALSE(extra.has_value())
        << "r/3 and r/4 were never retained; got "
        << (extra_publish ? extra_publish->topic + " '" + extra_publish->payload +
                                "' retain=" + std::to_string(extra_publish->retain)
                          : std::string("another packet"));
}

TEST_F(state_limits_test, a_topic_deeper_than_the_maximum_is_dropped_and_counted) {
    auto v5 = connect("five", true);
    send(
        "five", *v5,
        mqtt::publish{
            .topic = "a/b/c/d/e", .payload = "x", .qos = mqtt::qos::at_least_once, .packet_id = 1});
    EXPECT_EQ(v5->expect<mqtt::puback>().reason_code, mqtt::reason_code::topic_name_invalid);
    auto v3 = connect("three", true, mqtt::protocol_version::v3_1_1);
    send(
        "three", *v3,
        mqtt::publish{
            .topic = "a/b/c/d/e", .payload = "x", .qos = mqtt::qos::at_least_once, .packet_id = 1});
    EXPECT_EQ(v3->expect<mqtt::puback>().packet_id, 1);  // 3.1.1 has no negative PUBACK
    EXPECT_EQ(dropped("topic_levels"), 2);
}

TEST_F(state_limits_test, a_will_the_server_cannot_honour_refuses_the_connect) {
    auto existing = connect("dev", true);
    struct refusal {
        mqtt::will_message will;
        mqtt::reason_code code;
    };
    max_qos_ = 1;
    retain_available_ = false;
    close();
    open();
    existing = connect("dev", true);
    const std::vector<refusal> cases{
        {{.topic = "w", .payload = "x", .qos = mqtt::qos::exactly_once},
         mqtt::reason_code::qos_not_supported},
        {{.topic = "w", .payload = "x", .retain = true}, mqtt::reason_code::retain_not_supported},
        {{.topic = "a/b/c/d/e", .payload = "x"}, mqtt::reason_code::topic_name_invalid},
    };
    for (const auto& c : cases) {
        mqtt::connect p;
        p.client_id = "dev";
        p.clean_start = true;
        p.will = c.will;
        auto [ch, ack] = connect_raw(std::move(p));
        EXPECT_EQ(ack.reason_code, c.code);
        EXPECT_TRUE(ch->wait_closed());
    }
    // The connection that was there keeps working: a refused CONNECT takes nothing over.
    EXPECT_FALSE(existing->closed());
    send("dev", *existing, mqtt::pingreq{});
    EXPECT_TRUE(existing->expect_opt<mqtt::pingresp>().has_value());
}

// settings::mailbox_bytes: the connection adds what it queues at the actor, the actor takes it
// off as it handles it and lets a paused connection read again once below half.
TEST_F(state_limits_test, queued_packet_bytes_are_accounted_and_reading_resumes_below_half) {
    auto ch = connect("big", true);
    auto actor = node_->core().actor_for("big");
    const std::string payload(600 * 1024, 'x');  // past half of the 4 MiB bound together
    ch->pause_reading_for_test();
    std::int64_t queued = 0;
    for (int i = 0; i < 5; ++i) {
        mqtt::packet p = mqtt::publish{.topic = "b", .payload = payload};
        queued += client_actor::inbound_cost(p);
        actor->add_inbound_bytes(client_actor::inbound_cost(p));
        send("big", *ch, std::move(p));
    }
    EXPECT_GT(queued, 2 * 1024 * 1024);
    sync_with(actor);
    EXPECT_EQ(actor->inbound_bytes(), 0) << "every handled packet is taken off";
    EXPECT_FALSE(ch->reading_paused());
    EXPECT_GE(ch->resumed(), 1);
}

class will_rate_limit_test : public broker_fixture {
  protected:
    void SetUp() override {
        incoming_limit_ = {{1, 3600}};
        broker_fixture::SetUp();
    }
};

TEST_F(will_rate_limit_test, a_will_over_the_incoming_rate_limit_is_dropped_and_counted) {
    auto sub = connect("sub", true);
    subscribe("sub", *sub, "w/#", mqtt::qos::at_least_once);
    mqtt::connect p;
    p.client_id = "dev";
    p.clean_start = true;
    p.will = mqtt::will_message{.topic = "w/dev", .payload = "gone"};
    auto [ch, ack] = connect_raw(std::move(p));
    ASSERT_EQ(ack.reason_code, mqtt::reason_code::success);
    send("dev", *ch, mqtt::publish{.topic = "w/x", .payload = "spends the budget"});
    EXPECT_EQ(sub->expect<mqtt::publish>().payload, "spends the budget");
    ASSERT_TRUE(node_->core().actor_for("dev")->tell(client_msg::closed{
        .channel_id = ch->id(), .reason = "test", .protocol_error = std::nullopt}));
    ASSERT_TRUE(ch->wait_closed());
    sync_with(node_->core().actor_for("dev"));
    EXPECT_EQ(dropped("incoming_rate"), 1);
    EXPECT_FALSE(sub->next(200ms).has_value());
}

class keep_alive_test : public broker_fixture {
  protected:
    void SetUp() override {
        max_keep_alive_ = 1;
        broker_fixture::SetUp();
    }
};

TEST_F(keep_alive_test, a_311_client_without_keep_alive_is_held_to_the_maximum) {
    mqtt::connect p;
    p.protocol_version = mqtt::protocol_version::v3_1_1;
    p.client_id = "quiet";
    p.clean_start = true;
    p.keep_alive = 0;  // "never time me out"
    auto [ch, ack] = connect_raw(std::move(p));
    ASSERT_EQ(ack.reason_code, mqtt::reason_code::success);
    // The keep-alive deadline is what is under test: 1.5 x 1 s of silence closes it.
    EXPECT_TRUE(ch->wait_closed(5s));
}

}  // namespace
}  // namespace starling::broker
