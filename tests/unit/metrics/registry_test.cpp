#include "metrics/registry.h"

#include "base/assert.h"

#include "exposition.h"
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <optional>
#include <sstream>
#include <thread>

namespace starling::metrics {
namespace {

using namespace std::chrono_literals;
using ::testing::HasSubstr;

using testing::sample;

TEST(metrics_registry, every_metric_is_exposed_with_help_and_type) {
    registry metrics;
    const auto text = metrics.serialize();
    const std::pair<const char*, const char*> expected[] = {
        {"connectedSessions", "gauge"},
        {"allClientSessions", "gauge"},
        {"clientSubscriptions", "gauge"},
        {"retainedMessages", "gauge"},
        {"lastWillClients", "gauge"},
        {"nonWritableClients", "gauge"},
        {"incomingPublishMsgs_total", "counter"},
        {"outgoingPublishMsgs_total", "counter"},
        {"droppedMsgs_total", "counter"},
        {"clientDisconnects_total", "counter"},
        {"clusterSessionRequestTimeouts_total", "counter"},
        {"messageLog_produceAckLatency_seconds", "histogram"},
        {"messageLog_produceFailed_total", "counter"},
        {"subscriptionLookup_seconds", "histogram"},
        {"subscriptionTrieNodes", "gauge"},
        {"routedMsgs_total", "counter"},
        {"actorMailboxDepth", "gauge"},
        {"actorMailboxRejected_total", "counter"},
        {"runningActors", "gauge"},
        {"bugsReported_total", "counter"},
    };
    for (const auto& [name, type] : expected) {
        EXPECT_THAT(text, HasSubstr(std::string("# HELP ") + name + " "));
        EXPECT_THAT(text, HasSubstr(std::string("# TYPE ") + name + " " + type + "\n"));
    }
}

TEST(metrics_registry, every_drop_reason_and_qos_starts_at_zero) {
    registry metrics;
    const auto text = metrics.serialize();
    for (std::size_t i = 0; i < drop_reason_count; ++i) {
        const auto reason = std::string(to_string(static_cast<drop_reason>(i)));
        EXPECT_EQ(sample(text, "droppedMsgs_total{reason=\"" + reason + "\"}"), 0.0) << reason;
    }
    for (const char* qos : {"0", "1", "2"}) {
        EXPECT_EQ(sample(text, std::string("incomingPublishMsgs_total{qos=\"") + qos + "\"}"), 0.0);
        EXPECT_EQ(sample(text, std::string("outgoingPublishMsgs_total{qos=\"") + qos + "\"}"), 0.0);
    }
}

TEST(metrics_registry, drop_reason_names) {
    EXPECT_EQ(to_string(drop_reason::non_writable), "non_writable");
    EXPECT_EQ(to_string(drop_reason::no_usable_shared_member), "no_usable_shared_member");
    EXPECT_EQ(to_string(drop_reason::not_authorized), "not_authorized");
}

TEST(metrics_registry, broker_probe_counts_and_sets) {
    registry metrics;
    auto& broker = metrics.broker();
    broker.client_connected();
    broker.client_connected();
    broker.client_connected();
    broker.client_disconnected();
    broker.sessions(42);
    broker.subscriptions(7);
    broker.retained(5);
    broker.last_will_clients(2);
    broker.publish_received(1);
    broker.publish_received(1);
    broker.publish_received(2);
    broker.publish_sent(0);
    broker.message_dropped(drop_reason::non_writable);
    broker.message_dropped(drop_reason::queue_trim, 10);
    broker.non_writable_clients(+3);
    broker.non_writable_clients(-1);

    const auto text = metrics.serialize();
    EXPECT_EQ(sample(text, "connectedSessions"), 2.0);
    EXPECT_EQ(sample(text, "allClientSessions"), 42.0);
    EXPECT_EQ(sample(text, "clientSubscriptions"), 7.0);
    EXPECT_EQ(sample(text, "retainedMessages"), 5.0);
    EXPECT_EQ(sample(text, "lastWillClients"), 2.0);
    EXPECT_EQ(sample(text, "incomingPublishMsgs_total{qos=\"1\"}"), 2.0);
    EXPECT_EQ(sample(text, "incomingPublishMsgs_total{qos=\"2\"}"), 1.0);
    EXPECT_EQ(sample(text, "outgoingPublishMsgs_total{qos=\"0\"}"), 1.0);
    EXPECT_EQ(sample(text, "droppedMsgs_total{reason=\"non_writable\"}"), 1.0);
    EXPECT_EQ(sample(text, "droppedMsgs_total{reason=\"queue_trim\"}"), 10.0);
    EXPECT_EQ(sample(text, "droppedMsgs_total{reason=\"offline\"}"), 0.0);
    EXPECT_EQ(sample(text, "nonWritableClients"), 2.0);
}

TEST(metrics_registry, out_of_range_qos_is_a_bug_not_a_crash) {
    registry metrics;
    const auto bugs_before = base::bugs_reported();
    metrics.broker().publish_received(3);
    EXPECT_EQ(base::bugs_reported(), bugs_before + 1);
    const auto text = metrics.serialize();
    EXPECT_EQ(sample(text, "incomingPublishMsgs_total{qos=\"2\"}"), 0.0);
    EXPECT_GE(sample(text, "bugsReported_total").value_or(0), 1.0);
}

TEST(metrics_registry, log_and_routing_probes) {
    registry metrics;
    metrics.log().produce_acked(75us);
    metrics.log().produce_acked(3ms);
    metrics.log().produce_failed();
    metrics.routing().trie_lookup(800ns);
    metrics.routing().trie_nodes(123);
    metrics.routing().messages_routed(4);
    metrics.routing().messages_routed(1);

    const auto text = metrics.serialize();
    EXPECT_EQ(sample(text, "messageLog_produceAckLatency_seconds_count"), 2.0);
    EXPECT_EQ(sample(text, "messageLog_produceAckLatency_seconds_bucket{le=\"5e-05\"}"), 0.0);
    EXPECT_EQ(sample(text, "messageLog_produceAckLatency_seconds_bucket{le=\"0.0001\"}"), 1.0);
    EXPECT_EQ(sample(text, "messageLog_produceAckLatency_seconds_bucket{le=\"0.005\"}"), 2.0);
    EXPECT_EQ(sample(text, "messageLog_produceAckLatency_seconds_bucket{le=\"5\"}"), 2.0);
    EXPECT_EQ(sample(text, "messageLog_produceAckLatency_seconds_bucket{le=\"+Inf\"}"), 2.0);
    EXPECT_NEAR(sample(text, "messageLog_produceAckLatency_seconds_sum").value_or(-1), 0.003075,
                1e-12);
    EXPECT_EQ(sample(text, "messageLog_produceFailed_total"), 1.0);
    EXPECT_EQ(sample(text, "subscriptionLookup_seconds_bucket{le=\"1e-06\"}"), 1.0);
    EXPECT_EQ(sample(text, "subscriptionLookup_seconds_bucket{le=\"5e-07\"}"), 0.0);
    EXPECT_EQ(sample(text, "subscriptionTrieNodes"), 123.0);
    EXPECT_EQ(sample(text, "routedMsgs_total"), 5.0);
}

TEST(metrics_registry, refreshers_run_before_each_scrape) {
    registry metrics;
    std::int64_t depth = 17;
    int runs = 0;
    auto handle = metrics.add_refresher([&] {
        ++runs;
        metrics.actor().set_mailbox_depth(depth);
        metrics.actor().set_running_actors(depth * 2);
    });
    EXPECT_TRUE(handle.active());
    EXPECT_EQ(sample(metrics.serialize(), "actorMailboxDepth"), 17.0);
    depth = 3;
    const auto text = metrics.serialize();
    EXPECT_EQ(sample(text, "actorMailboxDepth"), 3.0);
    EXPECT_EQ(sample(text, "runningActors"), 6.0);
    EXPECT_EQ(runs, 2);

    handle.reset();
    EXPECT_FALSE(handle.active());
    depth = 99;
    EXPECT_EQ(sample(metrics.serialize(), "actorMailboxDepth"), 3.0);
    EXPECT_EQ(runs, 2);
}

TEST(metrics_registry, refresher_handle_moves_and_unregisters_on_destruction) {
    registry metrics;
    int runs = 0;
    {
        refresher_handle outer;
        {
            auto inner = metrics.add_refresher([&] { ++runs; });
            outer = std::move(inner);
            EXPECT_FALSE(inner.active());  // NOLINT(bugprone-use-after-move): moved-from state
        }
        metrics.serialize();
        EXPECT_EQ(runs, 1);
        refresher_handle moved(std::move(outer));
        metrics.serialize();
        EXPECT_EQ(runs, 2);
    }
    metrics.serialize();
    EXPECT_EQ(runs, 2);
}

TEST(metrics_registry, mailbox_rejections_count) {
    registry metrics;
    metrics.actor().mailbox_rejected();
    metrics.actor().mailbox_rejected(4);
    EXPECT_EQ(sample(metrics.serialize(), "actorMailboxRejected_total"), 5.0);
}

// Probes are hit from many threads while scrapes run: nothing may be lost.
TEST(metrics_registry, concurrent_updates_and_scrapes_lose_nothing) {
    registry metrics;
    constexpr int threads = 4;
    constexpr int per_thread = 20000;
    std::atomic<bool> done{false};
    auto refresher = metrics.add_refresher([&] { metrics.actor().set_running_actors(1); });
    std::thread scraper([&] {
        while (!done.load()) {
            EXPECT_THAT(metrics.serialize(), HasSubstr("connectedSessions"));
        }
    });
    std::vector<std::thread> workers;
    for (int t = 0; t < threads; ++t) {
        workers.emplace_back([&] {
            for (int i = 0; i < per_thread; ++i) {
                metrics.broker().publish_received(1);
                metrics.broker().message_dropped(drop_reason::offline);
                metrics.routing().trie_lookup(std::chrono::nanoseconds(i));
            }
        });
    }
    for (auto& worker : workers) {
        worker.join();
    }
    done = true;
    scraper.join();
    const auto text = metrics.serialize();
    EXPECT_EQ(sample(text, "incomingPublishMsgs_total{qos=\"1\"}"), threads * per_thread);
    EXPECT_EQ(sample(text, "droppedMsgs_total{reason=\"offline\"}"), threads * per_thread);
    EXPECT_EQ(sample(text, "subscriptionLookup_seconds_count"), threads * per_thread);
}

}  // namespace
}  // namespace starling::metrics
