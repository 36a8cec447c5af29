// Persistent APPLICATION clients (issue 4 §4, §5): the client's own msg.app.<clientId> topic, its
// consumer, packet ids across reconnects and restarts, and inbound QoS 2 resumption. Driven
// without sockets over the real embedded adapters, as client_actor_test.cpp.

#include "adapters/embedded/device_inbox.h"
#include "adapters/embedded/message_log.h"
#include "adapters/embedded/sqlite_metadata_store.h"
#include "base/countdown.h"
#include "broker/application_delivery.h"
#include "broker/client_actor.h"
#include "broker/node.h"
#include "metrics/registry.h"
#include "mqtt/decoder.h"
#include "routing/subscription_trie.h"

#include "fake_channel.h"
#include "support/temp_dir.h"
#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
#include <deque>
#include <filesystem>
#include <fstream>
#include <future>
#include <mutex>
#include <set>

namespace starling::broker {
namespace {

using namespace std::chrono_literals;

using testing::fake_channel;

class broker_fixture : public ::testing::Test {
  protected:
    void SetUp() override { open(); }
    void TearDown() override { close(); }

    void open() {
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
        settings s;
        s.msg_all_partitions = 4;
        s.msg_all_consumers = 2;
        s.msg_persisted_partitions = 2;
        s.msg_persisted_consumers = 1;
        s.poll_interval = 20ms;
        s.named_actor_grace = named_actor_grace_;
        s.max_in_flight = max_in_flight_;
        s.outbound_queue_limit = outbound_queue_limit_;
        s.app_consumer_threads = app_consumer_threads_;
        node_ = std::make_unique<node>(s, *log_, *inbox_, *metadata_, metrics_, 2);
        node_->start();
    }

    void close() {
        if (node_) {
            node_->stop(2s);
            node_.reset();
        }
        if (log_) {
            log_->stop();
        }
        if (inbox_) {
            inbox_->stop();
        }
        if (metadata_) {
            metadata_->stop();
        }
        log_.reset();
        inbox_.reset();
        metadata_.reset();
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
                                                            .type = next_type_,
                                                            .rules = next_rules_}));
        next_rules_.reset();
        auto ack = channel->expect<mqtt::connack>();
        EXPECT_EQ(ack.reason_code, mqtt::reason_code::success);
        EXPECT_EQ(ack.session_present, expect_present);
        return channel;
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
    std::unique_ptr<adapters::embedded::embedded_message_log> log_;
    std::unique_ptr<adapters::embedded::embedded_device_inbox> inbox_;
    std::unique_ptr<adapters::embedded::sqlite_metadata_store> metadata_;
    std::unique_ptr<node> node_;
    std::uint64_t next_channel_id_ = 0;
    std::chrono::seconds named_actor_grace_{60};
    std::uint16_t max_in_flight_ = 1000;
    std::size_t outbound_queue_limit_ = 10000;
    std::size_t app_consumer_threads_ = 4;
    // Topic rules the next connect() hands to the actor (what authentication decided).
    std::shared_ptr<const auth::topic_rules> next_rules_;
    client_type next_type_ = client_type::application;

    static std::shared_ptr<const auth::topic_rules> rules(std::string publish,
                                                          std::string subscribe) {
        auto r = std::make_shared<auth::topic_rules>();
        r->publish.emplace_back(publish);
        r->subscribe.emplace_back(subscribe);
        return r;
    }
    double dropped_not_authorized() {
        const auto text = metrics_.serialize();
        const std::string key = "droppedMsgs_total{reason=\"not_authorized\"} ";
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

// Publishes `count` messages on `topic` through the broker (what a publisher's actor does) and
// waits until the log acknowledged every one.
void publish_many(broker_core& core, const std::string& topic, int first, int count,
                  mqtt::qos qos = mqtt::qos::at_least_once, std::int64_t expires_at_ms = 0) {
    auto pending = std::make_shared<countdown>();
    std::atomic<int> failed{0};
    for (int i = first; i < first + count; ++i) {
        app_message m;
        m.topic = topic;
        m.payload = std::to_string(i);
        m.qos = qos;
        m.created_at_ms = core.now_ms();
        m.expires_at_ms = expires_at_ms;
        m.publisher_id = "publisher";
        pending->add();
        core.publish(std::make_shared<const app_message>(std::move(m)),
                     [pending, &failed](status st) {
                         if (!st) {
                             ++failed;
                         }
                         pending->done();
                     });
    }
    ASSERT_TRUE(pending->wait_until(std::chrono::steady_clock::now() + 60s));
    ASSERT_EQ(failed.load(), 0);
}

class application_clients : public broker_fixture {
  protected:
    static constexpr std::uint32_t expiry = 3600;

    // A persistent APPLICATION session subscribed to app/# at `qos`, then disconnected.
    void offline_subscriber(const std::string& id, mqtt::qos qos = mqtt::qos::at_least_once) {
        auto ch = connect(id, true, mqtt::protocol_version::v5, expiry);
        subscribe(id, *ch, "app/#", qos);
        disconnect(id, *ch);
    }
    void disconnect(const std::string& id, fake_channel& ch) {
        send(id, ch, mqtt::disconnect{});
        ASSERT_TRUE(ch.wait_closed());
        sync_with(node_->core().actor_for(id));
    }
    std::shared_ptr<fake_channel> resume(const std::string& id) {
        return connect(id, false, mqtt::protocol_version::v5, expiry, true);
    }
    // Records in the client's own topic (where the router put its copies).
    std::int64_t app_topic_end(const std::string& id) {
        const auto topic = node_->core().topics().msg_app(id);
        auto consumer =
            log_->create_consumer(consumer_spec{.group_id = "probe", .assignment = {{topic, 0}}});
        if (!consumer) {
            return -1;
        }
        auto end = consumer.value()->end_offset({topic, 0});
        consumer.value()->close();
        return end ? end.value() : -1;
    }
    // Waits (bounded) until the router put `n` copies into the client's topic.
    void wait_routed(const std::string& id, std::int64_t n) {
        const auto deadline = std::chrono::steady_clock::now() + 10s;
        while (app_topic_end(id) < n && std::chrono::steady_clock::now() < deadline) {
            std::this_thread::yield();
        }
        ASSERT_EQ(app_topic_end(id), n);
    }
    void restart() {
        close();
        open();
    }
};

TEST(application_topics, client_ids_map_to_valid_kafka_topic_names) {
    topic_names t("starling");
    EXPECT_EQ(t.msg_app("app-1_X"), "starling.msg.app.app-1_X");
    EXPECT_EQ(t.msg_app_group("app-1_X"), "starling.app.app-1_X");
    // Anything outside [A-Za-z0-9_-] (Kafka also allows '.', but a literal id never has one,
    // so hashed names cannot collide with literal ones) is hashed, and stably so.
    const auto hashed = t.msg_app("sensor/1 ä");
    EXPECT_EQ(hashed.rfind("starling.msg.app.h.", 0), 0U);
    EXPECT_EQ(hashed.size(), std::string("starling.msg.app.h.").size() + 64);
    EXPECT_EQ(hashed, t.msg_app("sensor/1 ä"));
    EXPECT_NE(hashed, t.msg_app("sensor/2 ä"));
    EXPECT_EQ(t.msg_app("a.b").rfind("starling.msg.app.h.", 0), 0U);
    // Too long for Kafka's 249 characters: hashed.
    EXPECT_LE(t.msg_app(std::string(300, 'a')).size(), 249U);
}

TEST_F(application_clients, missed_messages_arrive_in_order_after_reconnect) {
    constexpr int n = 10000;
    offline_subscriber("app1");
    const auto started = std::chrono::steady_clock::now();
    publish_many(node_->core(), "app/x", 1, n);
    auto ch = resume("app1");
    for (int i = 1; i <= n; ++i) {
        auto msg = ch->expect<mqtt::publish>(10s);
        ASSERT_EQ(msg.payload, std::to_string(i));
        ASSERT_FALSE(msg.dup);
        send("app1", *ch, mqtt::puback{msg.packet_id, mqtt::reason_code::success, {}});
    }
    std::cout << n << " messages through msg.app in "
              << std::chrono::duration_cast<std::chrono::milliseconds>(
                     std::chrono::steady_clock::now() - started)
                     .count()
              << " ms\n";
    EXPECT_EQ(app_topic_end("app1"), n);  // the route: the client's topic, not the inbox
    // Everything was acknowledged: the next connection gets nothing again.
    disconnect("app1", *ch);
    auto again = resume("app1");
    publish_many(node_->core(), "app/x", n + 1, 1);
    EXPECT_EQ(again->expect<mqtt::publish>().payload, std::to_string(n + 1));
}

// Threads of this process, and those of them named `prefix`-<n> (consumer_pool names its own).
struct thread_census {
    std::size_t total = 0;
    std::size_t named = 0;
};
thread_census count_threads(const std::string& prefix) {
    thread_census c;
    for (const auto& entry : std::filesystem::directory_iterator("/proc/self/task")) {
        ++c.total;
        std::ifstream comm(entry.path() / "comm");
        std::string name;
        std::getline(comm, name);
        if (name.rfind(prefix + "-", 0) == 0) {
            ++c.named;
        }
    }
    return c;
}

// 40 connected APPLICATION clients, each reading its own topic: the consumers share the pool's
// threads (2 here) instead of running a thread each, and every client still gets every message.
class application_pool : public application_clients {
  protected:
    application_pool() { app_consumer_threads_ = 2; }
};

TEST_F(application_pool, connected_application_clients_share_the_pool_threads) {
    constexpr int clients = 40;
    const auto before = count_threads("app-consumer");
    std::vector<std::shared_ptr<fake_channel>> channels;
    for (int i = 0; i < clients; ++i) {
        const std::string id = "pooled-" + std::to_string(i);
        channels.push_back(connect(id, true, mqtt::protocol_version::v5, expiry));
        subscribe(id, *channels.back(), "pool/#", mqtt::qos::at_least_once);
    }
    publish_many(node_->core(), "pool/t", 1, 5);
    for (int i = 0; i < clients; ++i) {
        const std::string id = "pooled-" + std::to_string(i);
        for (int m = 1; m <= 5; ++m) {
            auto msg = channels[i]->expect<mqtt::publish>(10s);
            ASSERT_EQ(msg.payload, std::to_string(m)) << id;
            send(id, *channels[i], mqtt::puback{msg.packet_id, mqtt::reason_code::success, {}});
        }
    }
    const auto after = count_threads("app-consumer");
    EXPECT_EQ(before.named, 0U);
    EXPECT_EQ(after.named, 2U);
    // Not a thread per consumer under another name either.
    EXPECT_LT(after.total - before.total, 10U)
        << before.total << " threads before the clients, " << after.total << " after";
}

TEST_F(application_clients, unacknowledged_messages_keep_their_packet_ids_with_dup) {
    offline_subscriber("app2");
    publish_many(node_->core(), "app/x", 1, 5);
    auto ch = resume("app2");
    std::map<std::string, std::uint16_t> ids;
    for (int i = 1; i <= 5; ++i) {
        auto msg = ch->expect<mqtt::publish>();
        EXPECT_EQ(msg.payload, std::to_string(i));
        ids[msg.payload] = msg.packet_id;
    }
    // Out of order, within the window: 2 and 4 only.
    send("app2", *ch, mqtt::puback{ids["2"], mqtt::reason_code::success, {}});
    send("app2", *ch, mqtt::puback{ids["4"], mqtt::reason_code::success, {}});
    disconnect("app2", *ch);

    auto again = resume("app2");
    for (const char* p : {"1", "3", "5"}) {
        auto msg = again->expect<mqtt::publish>();
        EXPECT_EQ(msg.payload, p);
        EXPECT_EQ(msg.packet_id, ids[p]);
        EXPECT_TRUE(msg.dup);
    }
    publish_many(node_->core(), "app/x", 6, 1);
    auto fresh = again->expect<mqtt::publish>();
    EXPECT_EQ(fresh.payload, "6");
    EXPECT_FALSE(fresh.dup);
    for (const auto& [payload, id] : ids) {
        EXPECT_NE(fresh.packet_id, id) << "id of an unacknowledged message reused";
    }
}

TEST_F(application_clients, packet_ids_survive_a_restart_through_the_metadata_store) {
    offline_subscriber("app3");
    publish_many(node_->core(), "app/x", 1, 3);
    auto ch = resume("app3");
    std::map<std::string, std::uint16_t> ids;
    for (int i = 1; i <= 3; ++i) {
        auto msg = ch->expect<mqtt::publish>();
        ids[msg.payload] = msg.packet_id;
    }
    send("app3", *ch, mqtt::puback{ids["2"], mqtt::reason_code::success, {}});
    disconnect("app3", *ch);
    restart();

    auto again = resume("app3");
    for (const char* p : {"1", "3"}) {
        auto msg = again->expect<mqtt::publish>();
        EXPECT_EQ(msg.payload, p);
        EXPECT_EQ(msg.packet_id, ids[p]);
        EXPECT_TRUE(msg.dup);
    }
    // "2" was acknowledged before the restart: not delivered again.
    publish_many(node_->core(), "app/x", 4, 1);
    EXPECT_EQ(again->expect<mqtt::publish>().payload, "4");
}

TEST_F(application_clients, qos2_resumes_at_pubrel_after_reconnect) {
    offline_subscriber("app4", mqtt::qos::exactly_once);
    publish_many(node_->core(), "app/x", 1, 2, mqtt::qos::exactly_once);
    auto ch = resume("app4");
    auto first = ch->expect<mqtt::publish>();
    EXPECT_EQ(first.payload, "1");
    EXPECT_EQ(first.qos, mqtt::qos::exactly_once);
    auto second = ch->expect<mqtt::publish>();
    send("app4", *ch, mqtt::pubrec{first.packet_id, mqtt::reason_code::success, {}});
    EXPECT_EQ(ch->expect<mqtt::pubrel>().packet_id, first.packet_id);
    disconnect("app4", *ch);
    restart();

    auto again = resume("app4");
    // The PUBREL comes again (not the PUBLISH), then the unacknowledged second message.
    EXPECT_EQ(again->expect<mqtt::pubrel>().packet_id, first.packet_id);
    auto resent = again->expect<mqtt::publish>();
    EXPECT_EQ(resent.payload, "2");
    EXPECT_EQ(resent.packet_id, second.packet_id);
    EXPECT_TRUE(resent.dup);
    send("app4", *again, mqtt::pubcomp{first.packet_id, mqtt::reason_code::success, {}});
    send("app4", *again, mqtt::pubrec{resent.packet_id, mqtt::reason_code::success, {}});
    EXPECT_EQ(again->expect<mqtt::pubrel>().packet_id, resent.packet_id);
    send("app4", *again, mqtt::pubcomp{resent.packet_id, mqtt::reason_code::success, {}});
    disconnect("app4", *again);

    // Both exchanges completed: nothing comes back.
    auto last = resume("app4");
    publish_many(node_->core(), "app/x", 3, 1, mqtt::qos::exactly_once);
    EXPECT_EQ(last->expect<mqtt::publish>().payload, "3");
}

TEST_F(application_clients, expired_message_is_skipped_at_read_time) {
    offline_subscriber("app5");
    publish_many(node_->core(), "app/x", 1, 1, mqtt::qos::at_least_once,
                 node_->core().now_ms() - 1);  // already expired when read
    publish_many(node_->core(), "app/x", 2, 1);
    auto ch = resume("app5");
    auto msg = ch->expect<mqtt::publish>();
    EXPECT_EQ(msg.payload, "2");
    send("app5", *ch, mqtt::puback{msg.packet_id, mqtt::reason_code::success, {}});
    disconnect("app5", *ch);
    // Its offset was committed past along with the acknowledged one.
    auto again = resume("app5");
    publish_many(node_->core(), "app/x", 3, 1);
    EXPECT_EQ(again->expect<mqtt::publish>().payload, "3");
}

TEST_F(application_clients, clean_start_discards_the_backlog) {
    offline_subscriber("app6");
    publish_many(node_->core(), "app/x", 1, 3);
    wait_routed("app6", 3);  // in the old session's topic before the clean start
    auto ch = connect("app6", true, mqtt::protocol_version::v5, expiry, false);
    subscribe("app6", *ch, "app/#", mqtt::qos::at_least_once);
    publish_many(node_->core(), "app/x", 4, 1);
    auto msg = ch->expect<mqtt::publish>();
    EXPECT_EQ(msg.payload, "4");  // 1..3 were dropped with the old session
}

TEST_F(application_clients, type_change_to_device_removes_the_topic_through_sys_app_removed) {
    offline_subscriber("app7");
    publish_many(node_->core(), "app/x", 1, 2);
    wait_routed("app7", 2);
    next_type_ = client_type::device;  // the credentials changed
    auto ch = resume("app7");
    EXPECT_FALSE(log_->partition_count(node_->core().topics().msg_app("app7")));
    // The record every node consumes to drop what it holds for the client.
    const auto removed = node_->core().topics().sys_app_removed();
    auto consumer = log_->create_consumer(
        consumer_spec{.group_id = "probe-removed", .assignment = {{removed, 0}}});
    ASSERT_TRUE(consumer);
    std::vector<log_record> records;
    const auto deadline = std::chrono::steady_clock::now() + 5s;
    while (records.empty() && std::chrono::steady_clock::now() < deadline) {
        auto polled = consumer.value()->poll(50ms);
        ASSERT_TRUE(polled);
        records = std::move(polled.value());
    }
    ASSERT_EQ(records.size(), 1U);
    EXPECT_EQ(records[0].key, "app7");
    EXPECT_EQ(records[0].value, node_->core().topics().msg_app("app7"));
    consumer.value()->close();
    // From now on its copies take the DEVICE route.
    publish_many(node_->core(), "app/x", 3, 1);
    EXPECT_EQ(ch->expect<mqtt::publish>().payload, "3");
}

TEST_F(application_clients, device_copies_still_go_through_the_inbox) {
    next_type_ = client_type::device;
    auto ch = connect("dev1", true, mqtt::protocol_version::v5, expiry);
    subscribe("dev1", *ch, "app/#", mqtt::qos::at_least_once);
    disconnect("dev1", *ch);
    publish_many(node_->core(), "app/x", 1, 2);
    next_type_ = client_type::device;
    auto again = resume("dev1");
    EXPECT_EQ(again->expect<mqtt::publish>().payload, "1");
    EXPECT_EQ(again->expect<mqtt::publish>().payload, "2");
    // No topic was created for a DEVICE client.
    EXPECT_FALSE(log_->partition_count(node_->core().topics().msg_app("dev1")));
}

TEST_F(application_clients, inbound_qos2_resumes_after_restart) {
    auto sub = connect("watcher", true);  // non-persistent, sees every copy live
    subscribe("watcher", *sub, "in/#", mqtt::qos::at_most_once);
    for (client_type type : {client_type::application, client_type::device}) {
        const std::string id = type == client_type::application ? "pub-app" : "pub-dev";
        next_type_ = type;
        auto ch = connect(id, true, mqtt::protocol_version::v5, expiry);
        mqtt::publish p{.topic = "in/" + id,
                        .payload = "once",
                        .qos = mqtt::qos::exactly_once,
                        .packet_id = 9,
                        .properties = {}};
        send(id, *ch, p);
        EXPECT_EQ(ch->expect<mqtt::pubrec>().packet_id, 9);
        EXPECT_EQ(sub->expect<mqtt::publish>().payload, "once");
        sync_with(node_->core().actor_for(id));
        ch->end_input();
        node_->core().actor_for(id)->tell_control(client_msg::closed{ch->id(), "test", {}});
        sync_with(node_->core().actor_for(id));
    }
    close();
    open();
    sub = connect("watcher", true);
    subscribe("watcher", *sub, "in/#", mqtt::qos::at_most_once);
    for (client_type type : {client_type::application, client_type::device}) {
        const std::string id = type == client_type::application ? "pub-app" : "pub-dev";
        next_type_ = type;
        auto ch = connect(id, false, mqtt::protocol_version::v5, expiry, true);
        mqtt::publish p{.topic = "in/" + id,
                        .payload = "once",
                        .qos = mqtt::qos::exactly_once,
                        .dup = true,
                        .packet_id = 9,
                        .properties = {}};
        send(id, *ch, p);
        EXPECT_EQ(ch->expect<mqtt::pubrec>().packet_id, 9);
        send(id, *ch, mqtt::pubrel{9, mqtt::reason_code::success, {}});
        auto comp = ch->expect<mqtt::pubcomp>();
        EXPECT_EQ(comp.packet_id, 9);
        EXPECT_EQ(comp.reason_code, mqtt::reason_code::success);
    }
    // A marker on each topic, published after both resumptions, is the next copy the watcher
    // sees: a second copy of "once" (same topic, same msg.all partition) would come before it.
    publish_many(node_->core(), "in/pub-app", 1, 1, mqtt::qos::at_most_once);
    publish_many(node_->core(), "in/pub-dev", 2, 1, mqtt::qos::at_most_once);
    std::set<std::string> markers;
    markers.insert(sub->expect<mqtt::publish>().payload);
    markers.insert(sub->expect<mqtt::publish>().payload);
    EXPECT_EQ(markers, (std::set<std::string>{"1", "2"}));
}

// ---------------------------------------------------------------------------------------------
// Shared APPLICATION subscriptions: msg.app.shared.<filter>, one consumer group per share.

TEST(application_topics, shared_filters_map_like_tbmq_or_are_hashed) {
    topic_names t("starling");
    EXPECT_EQ(t.msg_app_shared("sensors/+/temp"), "starling.msg.app.shared.sensors_slp_temp");
    EXPECT_EQ(t.msg_app_shared("a/#"), "starling.msg.app.shared.a_mlw");
    EXPECT_EQ(t.app_shared_group("g1", "a/#"), "starling.app-shared-g1-a_mlw");
    // A literal level that reads like a mapped wildcard would collide with it: hashed.
    EXPECT_NE(t.msg_app_shared("a/slp"), t.msg_app_shared("a/+"));
    EXPECT_EQ(t.msg_app_shared("a/slp").rfind("starling.msg.app.shared.h.", 0), 0U);
    // Outside [A-Za-z0-9/+#] ('_' included, so "a_b" cannot collide with "a/b"): hashed.
    EXPECT_EQ(t.msg_app_shared("a_b").rfind("starling.msg.app.shared.h.", 0), 0U);
    EXPECT_EQ(t.msg_app_shared("caf\xc3\xa9/x").rfind("starling.msg.app.shared.h.", 0), 0U);
    EXPECT_LE(t.msg_app_shared(std::string(300, 'a')).size(), 249U);
}

class application_shared : public application_clients {
  protected:
    // A connected persistent APPLICATION client subscribed to `filter` ($share/...).
    std::shared_ptr<fake_channel> member(const std::string& id, const std::string& filter,
                                         mqtt::qos qos = mqtt::qos::at_least_once) {
        next_type_ = client_type::application;
        auto ch = connect(id, true, mqtt::protocol_version::v5, expiry);
        subscribe(id, *ch, filter, qos);
        return ch;
    }
    std::size_t owned(const std::string& id) {
        std::promise<std::size_t> n;
        auto actor = node_->core().actor_for(id);
        EXPECT_TRUE(actor->tell(client_msg::call{
            [&](client_actor& a) { n.set_value(a.app_shared_partitions_for_test()); }}));
        auto f = n.get_future();
        return f.wait_for(5s) == std::future_status::ready ? f.get() : 0;
    }
    // Waits (bounded) until the group gave each client the partitions expected.
    void wait_owned(const std::map<std::string, std::size_t>& expected) {
        const auto deadline = std::chrono::steady_clock::now() + 10s;
        auto all = [&] {
            for (const auto& [id, n] : expected) {
                if (owned(id) != n) {
                    return false;
                }
            }
            return true;
        };
        while (!all() && std::chrono::steady_clock::now() < deadline) {
            std::this_thread::yield();
        }
        for (const auto& [id, n] : expected) {
            ASSERT_EQ(owned(id), n) << id;
        }
    }
    void save_entity(const std::string& filter, std::int32_t partitions) {
        std::promise<status> done;
        metadata_->save_application_shared_subscription(
            {.id = "e-" + filter, .topic_filter = filter, .partitions = partitions},
            [&](status st) { done.set_value(st); });
        ASSERT_TRUE(done.get_future().get());
    }
    // Records the router wrote to the filter's shared topic (every partition).
    std::int64_t shared_end(const std::string& filter) {
        const auto topic = node_->core().topics().msg_app_shared(filter);
        auto partitions = log_->partition_count(topic);
        if (!partitions) {
            return -1;
        }
        std::int64_t total = 0;
        for (std::int32_t p = 0; p < partitions.value(); ++p) {
            auto c = log_->create_consumer(
                consumer_spec{.group_id = "probe", .assignment = {{topic, p}}});
            total += c.value()->end_offset({topic, p}).value();
            c.value()->close();
        }
        return total;
    }
    // Ten topics whose keys land on both partitions of a 2-partition topic; topic k carries the
    // payloads k*per .. k*per+per-1 in order.
    std::vector<std::string> spread_topics(const std::string& root) {
        std::vector<std::string> topics;
        std::set<std::int32_t> partitions;
        for (int k = 0; k < 10; ++k) {
            topics.push_back(root + "/" + std::to_string(k));
            partitions.insert(partition_for_key(topics.back(), 2));
        }
        EXPECT_EQ(partitions.size(), 2U) << "pick topics that spread over both partitions";
        return topics;
    }
    void publish_spread(const std::vector<std::string>& topics, int base, int per) {
        for (std::size_t k = 0; k < topics.size(); ++k) {
            publish_many(node_->core(), topics[k], base + static_cast<int>(k) * per, per);
        }
    }

    struct received {
        std::vector<mqtt::publish> messages;
        std::multiset<std::string> payloads;
    };
    // Reads every member's channel until `total` PUBLISHes arrived (bounded); acknowledges those
    // of the clients in `ack`.
    std::map<std::string, received> collect(
        const std::map<std::string, std::shared_ptr<fake_channel>>& members, std::size_t total,
        const std::set<std::string>& ack) {
        std::map<std::string, received> out;
        std::size_t got = 0;
        const auto deadline = std::chrono::steady_clock::now() + 20s;
        while (got < total && std::chrono::steady_clock::now() < deadline) {
            for (const auto& [id, ch] : members) {
                auto p = ch->next(10ms);
                if (!p) {
                    continue;
                }
                auto* pub = std::get_if<mqtt::publish>(&*p);
                if (pub == nullptr) {
                    ADD_FAILURE() << id << ": unexpected " << mqtt::to_string(mqtt::type_of(*p));
                    continue;
                }
                if (ack.contains(id)) {
                    send(id, *ch, mqtt::puback{pub->packet_id, mqtt::reason_code::success, {}});
                }
                out[id].payloads.insert(std::string(pub->payload));
                out[id].messages.push_back(std::move(*pub));
                ++got;
            }
        }
        EXPECT_EQ(got, total);
        return out;
    }
    // Within each client, the messages of one topic came in publish order.
    static void expect_per_topic_order(const received& r) {
        std::map<std::string, int> last;
        for (const auto& m : r.messages) {
            const int v = std::stoi(std::string(m.payload));
            auto [it, fresh] = last.emplace(std::string(m.topic), v);
            if (!fresh) {
                EXPECT_GT(v, it->second) << m.topic;
                it->second = v;
            }
        }
    }
};

TEST_F(application_shared, two_members_split_the_stream_without_loss_or_duplicates) {
    save_entity("s/#", 2);  // the operator's entity: 2 partitions
    auto a = member("sa", "$share/g/s/#");
    auto b = member("sb", "$share/g/s/#");
    wait_owned({{"sa", 1}, {"sb", 1}});
    const auto topics = spread_topics("s");
    publish_spread(topics, 0, 20);  // 200 messages

    auto got = collect({{"sa", a}, {"sb", b}}, 200, {"sa", "sb"});
    std::set<std::string> all;
    for (const auto& [id, r] : got) {
        EXPECT_FALSE(r.payloads.empty()) << id << " got no partition's messages";
        for (const auto& p : r.payloads) {
            EXPECT_TRUE(all.insert(p).second) << "payload " << p << " delivered twice";
        }
        expect_per_topic_order(r);
        for (const auto& m : r.messages) {
            EXPECT_FALSE(m.dup);
        }
    }
    EXPECT_EQ(all.size(), 200U);
    // One copy per message in the shared topic, none in the members' own topics.
    EXPECT_EQ(shared_end("s/#"), 200);
    EXPECT_EQ(app_topic_end("sa"), 0);
    EXPECT_FALSE(a->next(200ms)) << "nothing beyond the 200";
    EXPECT_FALSE(b->next(10ms));
}

TEST_F(application_shared, a_member_leaving_hands_its_partitions_to_the_other) {
    save_entity("l/#", 2);
    auto a = member("la", "$share/g/l/#");
    auto b = member("lb", "$share/g/l/#");
    wait_owned({{"la", 1}, {"lb", 1}});
    const auto topics = spread_topics("l");
    publish_spread(topics, 0, 10);  // 100 messages
    // "la" acknowledges nothing, then leaves: its partition goes to "lb" from the committed
    // offset, so what "la" held unacknowledged comes again, to "lb".
    auto first = collect({{"la", a}, {"lb", b}}, 100, {"lb"});
    const std::size_t held_by_a = first["la"].payloads.size();
    ASSERT_GT(held_by_a, 0U);
    disconnect("la", *a);
    wait_owned({{"lb", 2}});
    publish_spread(topics, 100, 10);  // 100 more

    auto second = collect({{"lb", b}}, held_by_a + 100, {"lb"});
    std::multiset<std::string> at_b = first["lb"].payloads;
    at_b.insert(second["lb"].payloads.begin(), second["lb"].payloads.end());
    std::set<std::string> distinct(at_b.begin(), at_b.end());
    EXPECT_EQ(distinct.size(), 200U) << "every message reached the remaining member";
    EXPECT_EQ(at_b.size(), 200U) << "and none twice";
    for (const auto& p : first["la"].payloads) {
        EXPECT_TRUE(second["lb"].payloads.contains(p)) << p << " held by la was not redelivered";
    }
    expect_per_topic_order(second["lb"]);
    EXPECT_FALSE(b->next(200ms));
}

TEST_F(application_shared, delivery_qos_is_the_lower_of_message_and_subscription) {
    auto one = member("q1", "$share/g1/q/#", mqtt::qos::at_least_once);
    auto zero = member("q0", "$share/g0/q/#", mqtt::qos::at_most_once);
    wait_owned({{"q1", 1}, {"q0", 1}});
    publish_many(node_->core(), "q/x", 1, 1, mqtt::qos::exactly_once);

    auto m1 = one->expect<mqtt::publish>();
    EXPECT_EQ(m1.payload, "1");
    EXPECT_EQ(m1.qos, mqtt::qos::at_least_once);
    EXPECT_NE(m1.packet_id, 0);
    send("q1", *one, mqtt::puback{m1.packet_id, mqtt::reason_code::success, {}});
    auto m0 = zero->expect<mqtt::publish>();
    EXPECT_EQ(m0.payload, "1");
    EXPECT_EQ(m0.qos, mqtt::qos::at_most_once);
    // Two share names on one filter read one topic, each in full: one copy was written.
    EXPECT_EQ(shared_end("q/#"), 1);
}

TEST_F(application_shared, device_members_of_the_same_share_are_unaffected) {
    auto app = member("ma", "$share/g/d/#");
    next_type_ = client_type::device;
    auto dev = connect("md", true, mqtt::protocol_version::v5, expiry);
    subscribe("md", *dev, "$share/g/d/#", mqtt::qos::at_least_once);
    wait_owned({{"ma", 1}});
    publish_many(node_->core(), "d/x", 1, 10);
    // The DEVICE member is the group's only in-memory member: it gets every message, as it
    // did without APPLICATION members; the APPLICATION member reads all of them from the topic.
    auto got = collect({{"ma", app}, {"md", dev}}, 20, {"ma", "md"});
    std::multiset<std::string> expected;
    for (int i = 1; i <= 10; ++i) {
        expected.insert(std::to_string(i));
    }
    EXPECT_EQ(got["md"].payloads, expected);
    EXPECT_EQ(got["ma"].payloads, expected);
    EXPECT_FALSE(log_->partition_count(node_->core().topics().msg_app("md")));
}

TEST_F(application_shared, unsubscribe_leaves_the_group) {
    auto a = member("ua", "$share/g/u/#");
    wait_owned({{"ua", 1}});
    mqtt::unsubscribe u;
    u.packet_id = 2;
    u.filters.push_back("$share/g/u/#");
    send("ua", *a, u);
    a->expect<mqtt::unsuback>();
    wait_owned({{"ua", 0}});
}

TEST_F(application_shared, sys_app_removed_deletes_the_topic_unless_the_client_is_an_application) {
    const auto& t = node_->core().topics();
    ASSERT_TRUE(log_->create_topic({t.msg_app("ghost"), 1, -1, -1, false}));
    offline_subscriber("keeper");  // still a persistent APPLICATION session
    for (const char* id : {"ghost", "keeper"}) {
        std::promise<bool> written;
        log_->produce(t.sys_app_removed(), id, t.msg_app(id), {},
                      [&](result<produce_ack> r) { written.set_value(static_cast<bool>(r)); });
        ASSERT_TRUE(written.get_future().get());
    }
    const auto& consumer = node_->app_removed_for_test();
    const auto deadline = std::chrono::steady_clock::now() + 10s;
    while ((consumer.removed() < 1 || consumer.skipped() < 1) &&
           std::chrono::steady_clock::now() < deadline) {
        std::this_thread::yield();
    }
    EXPECT_EQ(consumer.removed(), 1U);
    EXPECT_EQ(consumer.skipped(), 1U);
    EXPECT_FALSE(log_->partition_count(t.msg_app("ghost")));
    EXPECT_TRUE(log_->partition_count(t.msg_app("keeper")));
}

}  // namespace
}  // namespace starling::broker
