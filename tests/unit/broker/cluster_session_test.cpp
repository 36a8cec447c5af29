// Cluster session coordination (docs/architecture.md §4): two or three broker::node instances in
// one process share one embedded message log (and one device inbox and metadata store, as
// cluster nodes share Redis and PostgreSQL). Clients are fake channels, as in
// client_actor_test.cpp. Every CONNECT goes through client.session.event.request, the handler
// of whichever node owns the client's partition, and the reply topic of the requester.

#include "adapters/embedded/device_inbox.h"
#include "adapters/embedded/message_log.h"
#include "adapters/embedded/sqlite_metadata_store.h"
#include "broker/client_actor.h"
#include "broker/node.h"
#include "broker/session_coordinator.h"
#include "broker/state_loader.h"
#include "metrics/registry.h"
#include "mqtt/decoder.h"
#include "routing/subscription_trie.h"

#include "fake_channel.h"
#include "proto/starling.pb.h"
#include "support/temp_dir.h"
#include <gtest/gtest.h>

#include <array>
#include <atomic>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <stop_token>
#include <thread>

namespace starling::broker {
namespace {

using namespace std::chrono_literals;

using testing::fake_channel;

// Polls `condition` until it holds or the deadline passes (state owned by other threads that
// offer no notification, such as an actor's connected flag).
template <class F>
bool eventually(F&& condition, std::chrono::milliseconds timeout = 10s) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (!condition()) {
        if (std::chrono::steady_clock::now() > deadline) {
            return false;
        }
        std::this_thread::sleep_for(5ms);  // polling interval, bounded by the deadline
    }
    return true;
}

class cluster_fixture : public ::testing::Test {
  protected:
    static constexpr std::size_t node_count = 2;

    void SetUp() override {
        adapters::embedded::embedded_log_config log_cfg;
        log_cfg.data_dir = dir_.path();
        log_ = std::move(adapters::embedded::embedded_message_log::open(log_cfg).value());
        adapters::embedded::embedded_device_inbox::options inbox_opts;
        inbox_opts.data_dir = dir_.path();
        inbox_ = std::move(
            adapters::embedded::embedded_device_inbox::open(inbox_opts, system_clock::instance())
                .value());
        adapters::embedded::sqlite_metadata_store::options meta_opts;
        meta_opts.data_dir = dir_.path();
        metadata_ = std::move(
            adapters::embedded::sqlite_metadata_store::open(meta_opts, system_clock::instance())
                .value());
        for (std::size_t i = 0; i < node_count; ++i) {
            settings s;
            s.node_id = std::string("node-") + static_cast<char>('a' + i);
            s.cluster = true;
            s.msg_all_partitions = 2;
            s.msg_all_consumers = 1;
            s.msg_persisted_partitions = 1;
            s.msg_persisted_consumers = 1;
            s.session_event_partitions = 4;
            s.session_request_timeout = request_timeout_;
            s.poll_interval = 10ms;
            nodes_[i] = std::make_unique<node>(s, *log_, *inbox_, *metadata_, metrics_[i], 2);
            nodes_[i]->start();
        }
    }

    void TearDown() override {
        held_actors_.clear();
        for (auto& n : nodes_) {
            if (n) {
                n->stop(2s);
                n.reset();
            }
        }
        log_->stop();
        inbox_->stop();
        metadata_->stop();
    }

    node& at(std::size_t i) { return *nodes_[i]; }

    // Sends a CONNECT to the client's actor on node `i`; the CONNACK is for the caller to read.
    std::shared_ptr<fake_channel> start_connect(std::size_t i, const std::string& client_id,
                                                bool clean_start, mqtt::protocol_version v,
                                                std::uint32_t session_expiry = 0) {
        auto channel = std::make_shared<fake_channel>(++next_channel_id_, v);
        mqtt::connect c;
        c.protocol_version = v;
        c.client_id = client_id;
        c.clean_start = clean_start;
        c.keep_alive = 60;
        if (v == mqtt::protocol_version::v5 && session_expiry != 0) {
            c.properties.session_expiry_interval = session_expiry;
        }
        auto actor = at(i).core().actor_for(client_id);
        EXPECT_TRUE(
            actor->tell_control(client_msg::connect{.channel = channel, .packet = std::move(c)}));
        // As a connection does: an actor that stops while the CONNECT waits in its mailbox
        // forwards it to its successor, but only while someone holds it.
        held_actors_.push_back(std::move(actor));
        return channel;
    }

    std::shared_ptr<fake_channel> connect(std::size_t i, const std::string& client_id,
                                          bool clean_start, bool expect_present,
                                          mqtt::protocol_version v = mqtt::protocol_version::v5,
                                          std::uint32_t session_expiry = 0) {
        auto channel = start_connect(i, client_id, clean_start, v, session_expiry);
        auto ack = channel->expect_opt<mqtt::connack>();
        EXPECT_TRUE(ack.has_value());
        if (ack) {
            EXPECT_EQ(ack->reason_code, mqtt::reason_code::success);
            EXPECT_EQ(ack->session_present, expect_present);
        }
        return channel;
    }

    bool connected_on(std::size_t i, const std::string& client_id) {
        auto actor = at(i).core().sessions().find_actor(client_id);
        return actor && actor->connected();
    }

    std::size_t live_sessions(const std::string& client_id) {
        std::size_t live = 0;
        for (std::size_t i = 0; i < node_count; ++i) {
            live += connected_on(i, client_id) ? 1 : 0;
        }
        return live;
    }

    // client.session as a node starting now would load it.
    std::optional<proto::client_session> session_record_of(const std::string& client_id) {
        auto state = load_compacted_topic(*log_, at(0).core().topics().client_session(),
                                          "test-reader-" + std::to_string(++readers_), 10s);
        EXPECT_TRUE(state.has_value());
        if (!state) {
            return std::nullopt;
        }
        auto it = state.value().find(client_id);
        if (it == state.value().end()) {
            return std::nullopt;
        }
        proto::client_session s;
        EXPECT_TRUE(s.ParseFromString(it->second));
        return s;
    }

    std::chrono::milliseconds request_timeout_ = 10s;
    testing::temp_dir dir_;
    std::array<metrics::registry, node_count> metrics_;
    std::unique_ptr<adapters::embedded::embedded_message_log> log_;
    std::unique_ptr<adapters::embedded::embedded_device_inbox> inbox_;
    std::unique_ptr<adapters::embedded::sqlite_metadata_store> metadata_;
    std::array<std::unique_ptr<node>, node_count> nodes_;
    std::atomic<std::uint64_t> next_channel_id_{0};
    int readers_ = 0;
    std::vector<std::shared_ptr<client_actor>> held_actors_;
};

TEST_F(cluster_fixture, connect_on_another_node_takes_the_session_over) {
    auto on_a = connect(0, "dev-1", false, false, mqtt::protocol_version::v5, 300);
    ASSERT_TRUE(eventually([&] { return connected_on(0, "dev-1"); }));

    // The persistent session existed and clean start is false: Session Present on node B.
    auto on_b = connect(1, "dev-1", false, true, mqtt::protocol_version::v5, 300);

    auto d = on_a->expect_opt<mqtt::disconnect>();
    ASSERT_TRUE(d.has_value());
    EXPECT_EQ(d->reason_code, mqtt::reason_code::session_taken_over);
    EXPECT_TRUE(on_a->wait_closed());
    EXPECT_FALSE(on_b->closed());
    // The actor marks itself connected right after writing CONNACK.
    ASSERT_TRUE(eventually([&] { return !connected_on(0, "dev-1") && connected_on(1, "dev-1"); }));
    EXPECT_EQ(live_sessions("dev-1"), 1U);

    auto record = session_record_of("dev-1");
    ASSERT_TRUE(record.has_value());
    EXPECT_EQ(record->node_id(), "node-b");
    EXPECT_TRUE(record->connected());
    EXPECT_TRUE(record->persistent());
}

TEST_F(cluster_fixture, clean_start_on_another_node_reports_no_session_present) {
    auto on_a = connect(0, "dev-2", false, false, mqtt::protocol_version::v5, 300);
    auto on_b = connect(1, "dev-2", true, false, mqtt::protocol_version::v5, 300);
    auto d = on_a->expect_opt<mqtt::disconnect>();
    ASSERT_TRUE(d.has_value());
    EXPECT_EQ(d->reason_code, mqtt::reason_code::session_taken_over);
    ASSERT_TRUE(eventually([&] { return !connected_on(0, "dev-2") && connected_on(1, "dev-2"); }));
    EXPECT_EQ(live_sessions("dev-2"), 1U);
}

TEST_F(cluster_fixture, v3_client_taken_over_on_another_node_is_closed) {
    auto on_a = connect(0, "dev-3", true, false, mqtt::protocol_version::v3_1_1);
    auto on_b = connect(1, "dev-3", true, false, mqtt::protocol_version::v3_1_1);
    EXPECT_TRUE(on_a->wait_closed());
    // v3 has no DISCONNECT from the server: the connection is just closed.
    EXPECT_FALSE(on_a->next(0ms).has_value());
    ASSERT_TRUE(eventually([&] { return !connected_on(0, "dev-3") && connected_on(1, "dev-3"); }));
}

TEST_F(cluster_fixture, offline_persistent_session_moves_with_its_client) {
    auto on_a = connect(0, "dev-4", false, false, mqtt::protocol_version::v5, 300);
    mqtt::subscribe s;
    s.packet_id = 1;
    s.subscriptions.push_back({"t/dev-4", {.qos = mqtt::qos::at_least_once}});
    auto actor_a = at(0).core().actor_for("dev-4");
    ASSERT_TRUE(actor_a->tell(client_msg::packet{on_a->id(), s}));
    ASSERT_TRUE(on_a->expect_opt<mqtt::suback>().has_value());
    EXPECT_EQ(at(0).core().trie().subscription_count(), 1U);
    ASSERT_TRUE(actor_a->tell(client_msg::packet{on_a->id(), mqtt::disconnect{}}));
    ASSERT_TRUE(on_a->wait_closed());
    // The handler marks the session offline (on node A) once the DISCONNECTED event is read.
    ASSERT_TRUE(eventually(
        [&] {
            auto r = session_record_of("dev-4");
            return r && !r->connected() && r->node_id() == "node-a";
        },
        10s));

    // Node A routes the topic throughout the move: its entry for dev-4 never disappears, even
    // for a moment (it used to be removed at the move and come back only with B's record —
    // messages A routed in between matched nobody and were lost).
    const auto entries_on_a = [&] {
        routing::rcu_reader_registration reader;
        std::size_t n = 0;
        at(0).core().trie().match("t/dev-4",
                                  [&](std::string_view, const routing::subscription&) { ++n; });
        return n;
    };
    std::atomic<bool> gap_seen{false};
    std::jthread watcher([&](std::stop_token stop) {
        while (!stop.stop_requested()) {
            if (entries_on_a() == 0) {
                gap_seen.store(true);
            }
        }
    });
    auto on_b = connect(1, "dev-4", false, true, mqtt::protocol_version::v5, 300);
    // Node A lets go of the session: its own entries leave A's trie, handed over to node-b's
    // mirror (then updated by the set B adopted and wrote back).
    ASSERT_TRUE(eventually([&] {
        routing::rcu_reader_registration reader;
        bool owned_by_a = false;
        at(0).core().trie().match("t/dev-4",
                                  [&](std::string_view, const routing::subscription& sub) {
                                      owned_by_a = owned_by_a || sub.owner_node.empty();
                                  });
        return !owned_by_a;
    }));
    ASSERT_TRUE(eventually([&] { return connected_on(1, "dev-4"); }));
    // Until B's own record reached A's mirror.
    ASSERT_TRUE(eventually([&] { return at(0).follower()->mirrored_clients() == 1U; }));
    watcher.request_stop();
    watcher.join();
    EXPECT_FALSE(gap_seen.load()) << "node A's trie lost dev-4's subscription during the move";
    EXPECT_EQ(entries_on_a(), 1U);
    EXPECT_EQ(live_sessions("dev-4"), 1U);
    auto record = session_record_of("dev-4");
    ASSERT_TRUE(record.has_value());
    EXPECT_EQ(record->node_id(), "node-b");
}

TEST_F(cluster_fixture, simultaneous_connects_on_two_nodes_leave_one_live_session) {
    for (int round = 0; round < 30; ++round) {
        const std::string id = "race-" + std::to_string(round);
        auto on_a = start_connect(0, id, true, mqtt::protocol_version::v5);
        auto on_b = start_connect(1, id, true, mqtt::protocol_version::v5);
        // Both are granted, in the handler's order; the one granted first is then taken over.
        auto ack_a = on_a->expect_opt<mqtt::connack>();
        auto ack_b = on_b->expect_opt<mqtt::connack>();
        ASSERT_TRUE(ack_a && ack_b) << "round " << round;
        EXPECT_EQ(ack_a->reason_code, mqtt::reason_code::success);
        EXPECT_EQ(ack_b->reason_code, mqtt::reason_code::success);
        ASSERT_TRUE(eventually([&] { return on_a->closed() != on_b->closed(); }))
            << "round " << round << ": exactly one connection must be closed";
        const std::size_t winner = on_a->closed() ? 1 : 0;
        auto& loser = winner == 0 ? on_b : on_a;
        auto d = loser->expect_opt<mqtt::disconnect>();
        ASSERT_TRUE(d.has_value()) << "round " << round;
        EXPECT_EQ(d->reason_code, mqtt::reason_code::session_taken_over);
        ASSERT_TRUE(eventually([&] { return connected_on(winner, id); })) << "round " << round;
        EXPECT_EQ(live_sessions(id), 1U) << "round " << round;
        auto record = session_record_of(id);
        ASSERT_TRUE(record.has_value());
        EXPECT_EQ(record->node_id(), winner == 0 ? "node-a" : "node-b") << "round " << round;
        EXPECT_TRUE(record->connected());
    }
}

TEST_F(cluster_fixture, a_stopping_node_records_its_sessions_as_disconnected) {
    auto keep = connect(0, "keep-1", false, false, mqtt::protocol_version::v5, 300);
    auto temp = connect(0, "temp-1", true, false, mqtt::protocol_version::v5);
    ASSERT_TRUE(session_record_of("keep-1").has_value());
    ASSERT_TRUE(session_record_of("temp-1").has_value());

    nodes_[0]->stop(2s);
    EXPECT_TRUE(keep->wait_closed());
    EXPECT_TRUE(temp->wait_closed());
    // The persistent session stays, offline, on node A; the other one is gone.
    EXPECT_TRUE(eventually([&] {
        auto r = session_record_of("keep-1");
        return r && !r->connected() && r->node_id() == "node-a";
    }));
    EXPECT_TRUE(eventually([&] { return !session_record_of("temp-1").has_value(); }));
}

TEST_F(cluster_fixture, sessions_ended_on_their_node_after_a_rebalance_leave_client_session) {
    // Clean sessions on node B, their CONNECTs decided by the handler of each client's partition
    // (some of them node A's). Node A leaves: B's handler takes every partition, without A's
    // decisions, and its registry no longer holds the records B's own actors removed when their
    // clients left. Those records must still leave client.session (they used to stay there,
    // "connected", for good).
    std::vector<std::string> ids;
    std::vector<std::shared_ptr<fake_channel>> channels;
    for (int i = 0; i < 8; ++i) {
        ids.push_back("leaver-" + std::to_string(i));
        channels.push_back(connect(1, ids.back(), true, false));
    }
    for (const auto& id : ids) {
        ASSERT_TRUE(eventually([&] { return session_record_of(id).has_value(); })) << id;
    }
    nodes_[0]->stop(2s);
    for (std::size_t i = 0; i < ids.size(); ++i) {
        auto actor = at(1).core().sessions().find_actor(ids[i]);
        ASSERT_TRUE(actor);
        ASSERT_TRUE(actor->tell(client_msg::packet{channels[i]->id(), mqtt::disconnect{}}));
        ASSERT_TRUE(channels[i]->wait_closed()) << ids[i];
    }
    for (const auto& id : ids) {
        EXPECT_TRUE(eventually([&] { return !session_record_of(id).has_value(); }, 15s))
            << id << " is still in client.session";
    }
}

class cluster_fixture_short_bound : public cluster_fixture {
  protected:
    cluster_fixture_short_bound() { request_timeout_ = 300ms; }
};

double timeouts_counted(metrics::registry& registry) {
    const std::string text = registry.serialize();
    const std::string key = "\nclusterSessionRequestTimeouts_total ";
    auto pos = text.find(key);
    return pos == std::string::npos ? -1.0 : std::stod(text.substr(pos + key.size()));
}

TEST_F(cluster_fixture_short_bound, no_handler_reply_refuses_the_connect_with_server_unavailable) {
    for (std::size_t i = 0; i < node_count; ++i) {
        at(i).core().coordinator()->pause_handler_for_test(true);
    }
    const auto start = std::chrono::steady_clock::now();
    auto v5 = start_connect(0, "lonely-5", true, mqtt::protocol_version::v5);
    auto v3 = start_connect(0, "lonely-3", true, mqtt::protocol_version::v3_1_1);
    auto ack5 = v5->expect_opt<mqtt::connack>(5s);
    auto ack3 = v3->expect_opt<mqtt::connack>(5s);
    const auto elapsed = std::chrono::steady_clock::now() - start;
    ASSERT_TRUE(ack5 && ack3);
    EXPECT_EQ(ack5->reason_code, mqtt::reason_code::server_unavailable);  // 0x88
    // v3 return code 3 (Server unavailable) decodes to the same reason code.
    EXPECT_EQ(ack3->reason_code, mqtt::reason_code::server_unavailable);
    EXPECT_GE(elapsed, 300ms);
    EXPECT_LT(elapsed, 5s);
    EXPECT_TRUE(v5->wait_closed());
    EXPECT_TRUE(v3->wait_closed());
    EXPECT_EQ(timeouts_counted(metrics_[0]), 2.0);
    EXPECT_EQ(at(0).core().coordinator()->pending_requests(), 0U);
    EXPECT_FALSE(connected_on(0, "lonely-5"));

    // With the handler back, a new CONNECT is served.
    for (std::size_t i = 0; i < node_count; ++i) {
        at(i).core().coordinator()->pause_handler_for_test(false);
    }
    auto again = connect(0, "lonely-5", true, false);
    EXPECT_TRUE(eventually([&] { return connected_on(0, "lonely-5"); }));
    // The late grant of the abandoned lonely-3 request does not leave a "connected" session.
    EXPECT_TRUE(eventually([&] { return !session_record_of("lonely-3").has_value(); }));
    auto record = session_record_of("lonely-5");
    ASSERT_TRUE(record.has_value());
    EXPECT_TRUE(record->connected());
}

}  // namespace
}  // namespace starling::broker
