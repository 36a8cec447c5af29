// Timed session behaviour on a manual clock (tests/support/manual_clock.h): session expiry, the
// will delay and the keep-alive deadline, each checked just before and just after its instant —
// without waiting on the wall clock, so the edges are exact and the test takes milliseconds.
//
// How "not yet" is known: after moving the clock the test pokes the node's timer thread and
// then waits for a marker timer due at the new instant. Timers fire in deadline order (equal
// deadlines in scheduling order), so once the marker fired every timer due by then has fired
// too; a control-lane call to the actor then runs after whatever those timers posted to it.

#include "mqtt/packet.h"

#include "broker_fixture.h"
#include "support/manual_clock.h"
#include <gtest/gtest.h>

#include <future>

namespace starling::broker {
namespace {

class timed_session_test : public broker_fixture {
  protected:
    void SetUp() override {
        embedded_.use_clock(clock_);
        broker_fixture::SetUp();
    }

    // Moves time on and returns once everything due by then ran at the timer thread.
    void advance(std::chrono::milliseconds by) {
        clock_.advance(by);
        auto& timers = node_->core().timers();
        timers.poke();
        std::promise<void> fired;
        timers.schedule_at(clock_.steady_now(), [&] { fired.set_value(); });
        ASSERT_EQ(fired.get_future().wait_for(5s), std::future_status::ready);
    }

    // Runs after every message already posted to the actor on its control lane (timers post
    // there).
    void settle(const std::string& client_id) {
        auto actor = node_->core().actor_for(client_id);
        std::promise<void> done;
        ASSERT_TRUE(
            actor->tell_control(client_msg::call{[&](client_actor&) { done.set_value(); }}));
        ASSERT_EQ(done.get_future().wait_for(5s), std::future_status::ready);
    }

    bool session_exists(const std::string& client_id) {
        return node_->core().sessions().find_session(client_id).has_value();
    }

    testing::manual_clock clock_;
};

TEST_F(timed_session_test, a_session_ends_when_its_expiry_interval_has_passed_and_not_before) {
    auto dev = connect("dev", false, mqtt::protocol_version::v5, 60);
    subscribe("dev", *dev, "t/#", mqtt::qos::at_least_once);
    send("dev", *dev, mqtt::disconnect{});
    ASSERT_TRUE(dev->wait_closed());
    settle("dev");

    advance(59'999ms);
    settle("dev");
    EXPECT_TRUE(session_exists("dev")) << "expired before its 60 s";

    advance(1ms);
    settle("dev");
    EXPECT_FALSE(session_exists("dev")) << "still there after its 60 s";
    // A client coming back finds no session.
    connect("dev", false, mqtt::protocol_version::v5, 60, /*expect_present=*/false);
}

TEST_F(timed_session_test, a_delayed_will_goes_at_its_delay_unless_the_client_returns) {
    // Keep-alive 0 (the server's maximum, 600 s, applies): the watcher stays through the
    // minutes this test moves the clock.
    mqtt::connect w;
    w.protocol_version = mqtt::protocol_version::v5;
    w.client_id = "watcher";
    w.clean_start = true;
    auto [watcher, watcher_ack] = connect_raw(std::move(w));
    ASSERT_EQ(watcher_ack.reason_code, mqtt::reason_code::success);
    subscribe("watcher", *watcher, "will/#", mqtt::qos::at_least_once);

    auto connect_with_will = [&](const std::string& id) {
        mqtt::connect c;
        c.protocol_version = mqtt::protocol_version::v5;
        c.client_id = id;
        c.clean_start = false;
        c.keep_alive = 0;
        c.properties.session_expiry_interval = 3600;
        mqtt::will_message will;
        will.topic = "will/" + id;
        will.payload = id + " is gone";
        will.qos = mqtt::qos::at_least_once;
        will.properties.will_delay_interval = 30;
        c.will = will;
        auto [channel, ack] = connect_raw(std::move(c));
        EXPECT_EQ(ack.reason_code, mqtt::reason_code::success);
        return channel;
    };
    auto drop = [&](const std::string& id, fake_channel& ch) {
        ASSERT_TRUE(node_->core().actor_for(id)->tell_control(
            client_msg::closed{.channel_id = ch.id(), .reason = "network"}));
        settle(id);
    };

    // Gone for good: the will goes 30 s after the connection dropped, not a millisecond before.
    auto gone = connect_with_will("gone");
    drop("gone", *gone);
    advance(29'999ms);
    settle("gone");
    EXPECT_FALSE(watcher->next(200ms)) << "the will went before its delay";
    advance(1ms);
    settle("gone");
    auto will = watcher->expect<mqtt::publish>();
    EXPECT_EQ(will.topic, "will/gone");
    EXPECT_EQ(will.payload, "gone is gone");

    // Back within the delay: no will at all, however long the clock runs afterwards.
    auto back = connect_with_will("back");
    drop("back", *back);
    advance(20s);
    auto again = connect_raw([] {
        mqtt::connect c;
        c.protocol_version = mqtt::protocol_version::v5;
        c.client_id = "back";
        c.clean_start = false;
        c.properties.session_expiry_interval = 3600;
        return c;
    }());
    EXPECT_EQ(again.second.reason_code, mqtt::reason_code::success);
    advance(60s);
    settle("back");
    EXPECT_FALSE(watcher->next(200ms)) << "the will went although the client came back";
}

TEST_F(timed_session_test,
       keep_alive_closes_at_one_and_a_half_times_the_interval_after_the_last_packet) {
    mqtt::connect c;
    c.protocol_version = mqtt::protocol_version::v5;
    c.client_id = "ka";
    c.clean_start = true;
    c.keep_alive = 10;  // → 15 s of silence allowed
    auto [ch, ack] = connect_raw(std::move(c));
    ASSERT_EQ(ack.reason_code, mqtt::reason_code::success);

    advance(14s);
    settle("ka");
    EXPECT_FALSE(ch->closed());
    send("ka", *ch, mqtt::pingreq{});
    ch->expect<mqtt::pingresp>();
    // The PINGREQ moved the deadline: 15 s from it, not from the CONNECT.
    advance(14'999ms);
    settle("ka");
    EXPECT_FALSE(ch->closed()) << "closed before 1.5 × keep-alive after the last packet";
    advance(2ms);
    settle("ka");
    auto dis = ch->expect<mqtt::disconnect>();
    EXPECT_EQ(dis.reason_code, mqtt::reason_code::keep_alive_timeout);
    EXPECT_TRUE(ch->wait_closed());
}

}  // namespace
}  // namespace starling::broker
