#pragma once

// A cluster of broker::node instances in one process, sharing ONE embedded message log (what
// Kafka is to a real cluster), each with its own node id, device inbox, metadata store and
// metrics. Clients are driven without sockets through fake channels, as in
// client_actor_test.cpp.
//
// Lifecycle: the log opens in the constructor; start_node() builds and starts a node (cluster
// mode); the destructor stops every node (latest first), then the log and stores.
// Concurrency: call from the test thread. Deliveries arrive on the fake channels from actor
// threads; fake_channel::next() waits for them (bounded).

#include "adapters/embedded/device_inbox.h"
#include "adapters/embedded/message_log.h"
#include "adapters/embedded/sqlite_metadata_store.h"
#include "broker/client_actor.h"
#include "broker/node.h"
#include "metrics/registry.h"
#include "mqtt/decoder.h"
#include "routing/subscription_trie.h"

#include "fake_channel.h"
#include "support/temp_dir.h"
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace starling::broker::cluster_test {

using namespace std::chrono_literals;

using testing::fake_channel;

// The nodes' view of the shared log: forwards every call and records which topics were asked
// for metadata (partition_count) and written to (produce), in call order.
class recording_log final : public message_log {
  public:
    explicit recording_log(message_log& inner) : inner_(inner) {}

    status create_topic(const topic_spec& spec) override { return inner_.create_topic(spec); }
    status delete_topic(std::string_view name) override { return inner_.delete_topic(name); }
    result<std::int32_t> partition_count(std::string_view topic) override {
        record("metadata", topic);
        return inner_.partition_count(topic);
    }
    void produce(std::string_view topic, std::string key, std::string value,
                 std::vector<log_header> headers, produce_callback done,
                 std::int32_t partition = -1) override {
        record("produce", topic);
        inner_.produce(topic, std::move(key), std::move(value), std::move(headers), std::move(done),
                       partition);
    }
    result<std::unique_ptr<log_consumer>> create_consumer(const consumer_spec& spec) override {
        return inner_.create_consumer(spec);
    }
    status flush(std::chrono::milliseconds timeout) override { return inner_.flush(timeout); }
    bool healthy() const override { return inner_.healthy(); }

    // The first call of `op` ("metadata" or "produce") for `topic`, as an index into the
    // recorded calls; -1 when there was none.
    std::ptrdiff_t first(std::string_view op, std::string_view topic) {
        std::lock_guard lock(mutex_);
        for (std::size_t i = 0; i < calls_.size(); ++i) {
            if (calls_[i].first == op && calls_[i].second == topic) {
                return static_cast<std::ptrdiff_t>(i);
            }
        }
        return -1;
    }

  private:
    void record(std::string_view op, std::string_view topic) {
        std::lock_guard lock(mutex_);
        calls_.emplace_back(std::string(op), std::string(topic));
    }

    message_log& inner_;
    std::mutex mutex_;
    std::vector<std::pair<std::string, std::string>> calls_;
};

// A connected test client: which node and actor it talks to, and its channel.
struct client {
    std::string node_id;
    std::string client_id;
    std::shared_ptr<fake_channel> channel;
};

class cluster_harness {
  public:
    // Settings every node starts from (node_id and cluster are set per node). One msg.all
    // partition and one router per node by default, so copies keep publish order across
    // topics (tests rely on it to prove that something did NOT arrive).
    static settings default_settings() {
        settings s;
        s.msg_all_partitions = 1;
        s.msg_all_consumers = 1;
        s.msg_persisted_partitions = 2;
        s.msg_persisted_consumers = 1;
        s.downlink_partitions = 2;
        s.poll_interval = 20ms;
        return s;
    }

    explicit cluster_harness(settings base = default_settings()) : base_(std::move(base)) {
        adapters::embedded::embedded_log_config log_cfg;
        log_cfg.data_dir = dir_.path() / "log";
        std::filesystem::create_directories(log_cfg.data_dir);
        log_ = std::move(adapters::embedded::embedded_message_log::open(log_cfg).value());
        recording_ = std::make_unique<recording_log>(*log_);
    }

    ~cluster_harness() {
        while (!order_.empty()) {
            stop_node(order_.back());
        }
        log_->stop();
        log_.reset();
    }

    cluster_harness(const cluster_harness&) = delete;
    cluster_harness& operator=(const cluster_harness&) = delete;

    // Builds and starts node `node_id` in cluster mode (state snapshot, follower, downlink
    // consumers, routers). Returns once it would open its listeners. `adjust` may change the
    // node's settings (node_id and cluster are set before it runs).
    node& start_node(const std::string& node_id,
                     const std::function<void(settings&)>& adjust = {}) {
        auto m = std::make_unique<member>();
        const auto dir = dir_.path() / node_id;
        std::filesystem::create_directories(dir);
        adapters::embedded::embedded_device_inbox::options inbox_opts;
        inbox_opts.data_dir = dir;
        m->inbox = std::move(
            adapters::embedded::embedded_device_inbox::open(inbox_opts, system_clock::instance())
                .value());
        adapters::embedded::sqlite_metadata_store::options meta_opts;
        meta_opts.data_dir = dir;
        m->metadata = std::move(
            adapters::embedded::sqlite_metadata_store::open(meta_opts, system_clock::instance())
                .value());
        settings s = base_;
        s.node_id = node_id;
        s.cluster = true;
        if (adjust) {
            adjust(s);
        }
        m->n = std::make_unique<node>(s, *recording_, *m->inbox, *m->metadata, m->metrics, 1);
        m->n->start();
        auto& result = *m->n;
        members_[node_id] = std::move(m);
        order_.push_back(node_id);
        return result;
    }

    // Stops the node gracefully (its actors write their sessions) and drops it.
    void stop_node(const std::string& node_id) {
        auto it = members_.find(node_id);
        if (it == members_.end()) {
            return;
        }
        it->second->n->stop(2s);
        it->second->n.reset();
        it->second->inbox->stop();
        it->second->metadata->stop();
        members_.erase(it);
        std::erase(order_, node_id);
    }

    node& at(const std::string& node_id) { return *members_.at(node_id)->n; }
    metrics::registry& metrics_of(const std::string& node_id) {
        return members_.at(node_id)->metrics;
    }
    adapters::embedded::embedded_message_log& log() { return *log_; }
    // What the nodes asked of the log (they all go through it).
    recording_log& calls() { return *recording_; }

    // CONNECT on `node_id`; expects CONNACK success with `expect_present`.
    client connect(const std::string& node_id, const std::string& client_id,
                   bool clean_start = true, std::uint32_t session_expiry = 0,
                   bool expect_present = false,
                   mqtt::protocol_version v = mqtt::protocol_version::v5) {
        auto channel = std::make_shared<fake_channel>(++next_channel_id_, v);
        mqtt::connect c;
        c.protocol_version = v;
        c.client_id = client_id;
        c.clean_start = clean_start;
        c.keep_alive = 60;
        if (v == mqtt::protocol_version::v5 && session_expiry != 0) {
            c.properties.session_expiry_interval = session_expiry;
        }
        auto actor = at(node_id).core().actor_for(client_id);
        EXPECT_TRUE(actor->tell_control(
            client_msg::connect{.channel = channel, .packet = std::move(c), .id_assigned = false}));
        auto ack = channel->expect<mqtt::connack>();
        EXPECT_EQ(ack.reason_code, mqtt::reason_code::success);
        EXPECT_EQ(ack.session_present, expect_present);
        return client{node_id, client_id, channel};
    }

    void send(const client& c, mqtt::packet p) {
        auto actor = at(c.node_id).core().sessions().find_actor(c.client_id);
        ASSERT_NE(actor, nullptr) << c.client_id << " has no actor on " << c.node_id;
        ASSERT_TRUE(actor->tell(client_msg::packet{c.channel->id(), std::move(p)}));
    }

    // SUBSCRIBE one filter; expects the SUBACK granting `qos`.
    void subscribe(const client& c, const std::string& filter, mqtt::qos qos,
                   std::uint16_t packet_id = 1) {
        mqtt::subscribe s;
        s.packet_id = packet_id;
        s.subscriptions.push_back({filter, {.qos = qos}});
        send(c, s);
        auto ack = c.channel->expect<mqtt::suback>();
        ASSERT_EQ(ack.reason_codes.size(), 1U);
        EXPECT_EQ(ack.reason_codes[0], static_cast<mqtt::reason_code>(qos));
    }

    void unsubscribe(const client& c, const std::string& filter, std::uint16_t packet_id = 2) {
        mqtt::unsubscribe u;
        u.packet_id = packet_id;
        u.filters.push_back(filter);
        send(c, u);
        (void)c.channel->expect<mqtt::unsuback>();
    }

    // PUBLISH and wait for the log's acknowledgement as the client sees it (PUBACK, PUBREC then
    // PUBREL/PUBCOMP; QoS 0 returns at once).
    void publish(const client& c, const std::string& topic, const std::string& payload,
                 mqtt::qos qos, std::uint16_t packet_id = 1, bool retain = false) {
        send(c, mqtt::publish{
                    .topic = topic,
                    .payload = payload,
                    .qos = qos,
                    .retain = retain,
                    .packet_id = qos == mqtt::qos::at_most_once ? std::uint16_t{0} : packet_id,
                    .properties = {}});
        if (qos == mqtt::qos::at_least_once) {
            EXPECT_EQ(c.channel->expect<mqtt::puback>().packet_id, packet_id);
        } else if (qos == mqtt::qos::exactly_once) {
            EXPECT_EQ(c.channel->expect<mqtt::pubrec>().packet_id, packet_id);
            send(c, mqtt::pubrel{packet_id, mqtt::reason_code::success, {}});
            EXPECT_EQ(c.channel->expect<mqtt::pubcomp>().packet_id, packet_id);
        }
    }

    // Receives the next PUBLISH on the client and acknowledges it as a client would.
    mqtt::publish receive(const client& c) {
        auto p = c.channel->expect<mqtt::publish>();
        if (p.qos == mqtt::qos::at_least_once) {
            send(c, mqtt::puback{p.packet_id, mqtt::reason_code::success, {}});
        } else if (p.qos == mqtt::qos::exactly_once) {
            send(c, mqtt::pubrec{p.packet_id, mqtt::reason_code::success, {}});
            (void)c.channel->expect<mqtt::pubrel>();
            send(c, mqtt::pubcomp{p.packet_id, mqtt::reason_code::success, {}});
        }
        return p;
    }

    // True when `observer`'s router would send a PUBLISH on `topic` to `client_id` on node
    // `owner`: the client's session is mirrored as connected there and a subscription of the
    // client matches in observer's trie.
    bool routes_to(const std::string& observer, const std::string& topic,
                   const std::string& client_id, const std::string& owner) {
        auto& core = at(observer).core();
        auto session = core.sessions().find_session(client_id);
        if (!session || !session->connected || session->node_id != owner) {
            return false;
        }
        return matches(observer, topic, client_id);
    }

    // Whether a subscription of `client_id` matches `topic` in `observer`'s trie.
    bool matches(const std::string& observer, const std::string& topic,
                 const std::string& client_id) {
        routing::rcu_reader_registration reader;
        bool found = false;
        at(observer).core().trie().match(topic, [&](const routing::subscription& s) {
            found = found || s.client_id == client_id;
        });
        return found;
    }

    // Waits (bounded) until `condition` holds: a node learns other nodes' state from the log
    // asynchronously, so tests wait for the state they need before acting on it.
    static bool eventually(const std::function<bool()>& condition,
                           std::chrono::milliseconds timeout = 10s) {
        const auto deadline = std::chrono::steady_clock::now() + timeout;
        while (!condition()) {
            if (std::chrono::steady_clock::now() > deadline) {
                return false;
            }
            std::this_thread::sleep_for(5ms);  // polling interval, not a synchronization
        }
        return true;
    }

  private:
    struct member {
        metrics::registry metrics;
        std::unique_ptr<adapters::embedded::embedded_device_inbox> inbox;
        std::unique_ptr<adapters::embedded::sqlite_metadata_store> metadata;
        std::unique_ptr<node> n;
    };

    settings base_;
    starling::testing::temp_dir dir_;
    std::unique_ptr<adapters::embedded::embedded_message_log> log_;
    std::unique_ptr<recording_log> recording_;
    std::map<std::string, std::unique_ptr<member>> members_;
    std::vector<std::string> order_;
    std::uint64_t next_channel_id_ = 0;
};

}  // namespace starling::broker::cluster_test
