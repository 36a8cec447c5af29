#pragma once

// broker_fixture: a GoogleTest fixture with one embedded node (testing::embedded_node) and fake
// channels for clients, for tests of the MQTT behaviour without sockets. Subclasses set the
// settings members before SetUp(); open()/close() restart the node over the same data.

#include "adapters/embedded/shared_counters.h"
#include "broker/client_actor.h"
#include "broker/node.h"
#include "metrics/registry.h"

#include "embedded_node.h"
#include "fake_channel.h"
#include "support/temp_dir.h"
#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace starling::broker {

using namespace std::chrono_literals;
using testing::fake_channel;

class broker_fixture : public ::testing::Test {
  protected:
    void SetUp() override { open(); }
    void TearDown() override { close(); }

    void open() {
        settings s;
        s.msg_all_partitions = 4;
        s.msg_all_consumers = 2;
        s.msg_persisted_partitions = 2;
        s.msg_persisted_consumers = 1;
        s.poll_interval = 20ms;
        s.named_actor_grace = named_actor_grace_;
        s.max_in_flight = max_in_flight_;
        s.outbound_queue_limit = outbound_queue_limit_;
        s.max_session_expiry = max_session_expiry_;
        s.max_subscriptions_per_client = max_subscriptions_per_client_;
        s.max_retained_messages = max_retained_messages_;
        s.max_retained_bytes = max_retained_bytes_;
        s.max_topic_segments = max_topic_segments_;
        s.max_keep_alive = max_keep_alive_;
        s.max_qos = max_qos_;
        s.retain_available = retain_available_;
        s.incoming_publish_limit = incoming_limit_;
        s.outgoing_publish_limit = outgoing_limit_;
        s.device_persisted_limit = device_persisted_limit_;
        s.writable_resume_backoff = resume_backoff_;
        s.writable_resume_jitter = 0ms;
        s.sessions_limit = sessions_limit_;
        s.application_clients_limit = application_clients_limit_;
        embedded_.open(s, admission_services{.quota = quota_.get()});
        node_ = &embedded_.get();
    }

    void close() {
        embedded_.close();
        node_ = nullptr;
    }

    std::shared_ptr<fake_channel> connect(const std::string& client_id, bool clean_start,
                                          mqtt::protocol_version v = mqtt::protocol_version::v5,
                                          std::uint32_t session_expiry = 0,
                                          bool expect_present = false) {
        auto channel = std::make_shared<fake_channel>(++next_channel_id_, v);
        mqtt::connect c;
        c.protocol_version = v;
        c.client_id = client_id;
        c.clean_start = clean_start;
        c.keep_alive = 60;
        if (v == mqtt::protocol_version::v5 && session_expiry != 0) {
            c.properties.session_expiry_interval = session_expiry;
        }
        auto actor = node_->core().actor_for(client_id);
        EXPECT_TRUE(actor->tell_control(client_msg::connect{.channel = channel,
                                                            .packet = std::move(c),
                                                            .id_assigned = false,
                                                            .rules = next_rules_}));
        next_rules_.reset();
        auto ack = channel->expect<mqtt::connack>();
        EXPECT_EQ(ack.reason_code, mqtt::reason_code::success);
        EXPECT_EQ(ack.session_present, expect_present);
        return channel;
    }

    // Sends a CONNECT as given and returns the channel and its CONNACK (no expectations).
    std::pair<std::shared_ptr<fake_channel>, mqtt::connack> connect_raw(mqtt::connect c) {
        auto channel = std::make_shared<fake_channel>(++next_channel_id_, c.protocol_version);
        auto actor = node_->core().actor_for(c.client_id);
        EXPECT_TRUE(actor->tell_control(client_msg::connect{.channel = channel,
                                                            .packet = std::move(c),
                                                            .id_assigned = false,
                                                            .rules = next_rules_}));
        next_rules_.reset();
        auto ack = channel->expect<mqtt::connack>();
        return {channel, ack};
    }

    // Waits (bounded) until the node routed `published` msg.all records since it started and
    // stored every copy it wrote to msg.persisted: what was acknowledged is then in the inboxes.
    void wait_routed(std::uint64_t published) {
        const auto deadline = std::chrono::steady_clock::now() + 5s;
        for (;;) {
            const auto p = node_->pipeline_for_test();
            if (p.msg_all_handled >= published && p.persisted_handled == p.persisted_produced) {
                return;
            }
            if (std::chrono::steady_clock::now() >= deadline) {
                ADD_FAILURE() << "routed " << p.msg_all_handled << " of " << published;
                return;
            }
            std::this_thread::sleep_for(1ms);  // polling counters, not standing in for them
        }
    }

    void send(const std::string& client_id, const fake_channel& ch, mqtt::packet p) {
        auto actor = node_->core().actor_for(client_id);
        ASSERT_TRUE(actor->tell(client_msg::packet{ch.id(), std::move(p)}));
    }

    void subscribe(const std::string& client_id, fake_channel& ch, const std::string& filter,
                   mqtt::qos qos, std::uint16_t packet_id = 1) {
        mqtt::subscribe s;
        s.packet_id = packet_id;
        s.subscriptions.push_back({filter, {.qos = qos}});
        send(client_id, ch, s);
        auto ack = ch.expect<mqtt::suback>();
        ASSERT_EQ(ack.reason_codes.size(), 1U);
        EXPECT_EQ(ack.reason_codes[0], static_cast<mqtt::reason_code>(qos));
    }

    testing::temp_dir dir_;
    metrics::registry metrics_;
    testing::embedded_node embedded_{dir_.path(), metrics_};
    node* node_ = nullptr;  // the node embedded_ runs while open
    std::uint64_t next_channel_id_ = 0;
    std::chrono::seconds named_actor_grace_{60};
    std::uint16_t max_in_flight_ = 1000;
    std::uint32_t max_session_expiry_ = 604800;
    std::uint32_t max_subscriptions_per_client_ = 1000;
    std::uint64_t max_retained_messages_ = 1000000;
    std::uint64_t max_retained_bytes_ = 1073741824;
    std::uint32_t max_topic_segments_ = 128;
    std::uint16_t max_keep_alive_ = 600;
    std::uint8_t max_qos_ = 2;
    bool retain_available_ = true;
    std::size_t outbound_queue_limit_ = 10000;
    // Rate limits (settings::*_limit); empty = off.
    std::vector<bandwidth> incoming_limit_;
    std::vector<bandwidth> outgoing_limit_;
    std::vector<bandwidth> device_persisted_limit_;
    // settings::writable_resume_backoff, without jitter so the tests know the schedule.
    std::vector<std::chrono::milliseconds> resume_backoff_{1s, 2s, 3s, 5s, 9s, 10s};
    // Session limits (settings::sessions_limit / application_clients_limit); 0 = off.
    std::int64_t sessions_limit_ = 0;
    std::int64_t application_clients_limit_ = 0;
    // The embedded shared counters (session limits); they outlive restarts, as Redis would.
    adapters::embedded::embedded_shared_counters& counters_ = embedded_.counters();
    // The throughput quota (admission_services::quota); null = off.
    std::shared_ptr<ratelimit::quota_lease> quota_;
    // Topic rules the next connect() hands to the actor (what authentication decided).
    std::shared_ptr<const auth::topic_rules> next_rules_;

    static std::shared_ptr<const auth::topic_rules> rules(std::string publish,
                                                          std::string subscribe) {
        auto r = std::make_shared<auth::topic_rules>();
        r->publish.emplace_back(publish);
        r->subscribe.emplace_back(subscribe);
        return r;
    }
    double dropped_not_authorized() { return dropped("not_authorized"); }
    double dropped(const std::string& reason) {
        const auto text = metrics_.serialize();
        const std::string key = "droppedMsgs_total{reason=\"" + reason + "\"} ";
        const auto at = text.find(key);
        return at == std::string::npos ? -1 : std::stod(text.substr(at + key.size()));
    }

    // Runs a no-op through the client's mailbox and waits for it: everything told before it
    // (on either lane) has been handled when this returns.
    void sync_with(const std::shared_ptr<client_actor>& actor) {
        std::promise<void> done;
        ASSERT_TRUE(actor->tell(client_msg::call{[&](client_actor&) { done.set_value(); }}));
        ASSERT_EQ(done.get_future().wait_for(5s), std::future_status::ready);
    }
};

}  // namespace starling::broker
