// node_directory on the embedded log: nodes see each other's heartbeats, a clean stop leaves the
// list, a node whose heartbeats stop is reported unreachable after three of its intervals (a
// clock the test moves), and a restarted node does not list its own old heartbeat as another.

#include "broker/node_directory.h"

#include "adapters/embedded/message_log.h"

#include "proto/starling.pb.h"
#include "support/temp_dir.h"
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace starling::broker {
namespace {

using namespace std::chrono_literals;

constexpr auto interval = 50ms;

class node_directory_test : public ::testing::Test {
  protected:
    void SetUp() override {
        adapters::embedded::embedded_log_config cfg;
        cfg.data_dir = dir_.path();
        log_ = std::move(adapters::embedded::embedded_message_log::open(cfg).value());
    }

    std::unique_ptr<node_directory> directory(const std::string& id, std::int64_t sessions) {
        return std::make_unique<node_directory>(
            *log_, "starling.sys.nodes", "starling." + id + "-nodes",
            [id, sessions] {
                return node_status{.node_id = id,
                                   .version = "9.9",
                                   .started_at_ms = 1000,
                                   .connected_sessions = sessions,
                                   .health = "UP"};
            },
            interval, [this] { return now_ms_.load(); });
    }

    // Polls `d` until `pred` holds for its node list (bounded).
    template <class Pred>
    bool eventually(const node_directory& d, Pred pred) {
        const auto deadline = std::chrono::steady_clock::now() + 10s;
        while (std::chrono::steady_clock::now() < deadline) {
            if (pred(d.nodes())) {
                return true;
            }
            std::this_thread::sleep_for(5ms);  // polling what another thread reads
        }
        return false;
    }

    static const node_status* find(const std::vector<node_status>& nodes, const std::string& id) {
        for (const auto& n : nodes) {
            if (n.node_id == id) {
                return &n;
            }
        }
        return nullptr;
    }

    testing::temp_dir dir_;
    std::unique_ptr<message_log> log_;
    std::atomic<std::int64_t> now_ms_{1'700'000'000'000};
};

TEST_F(node_directory_test, without_start_the_node_is_alone) {
    auto a = directory("a", 3);
    auto nodes = a->nodes();
    ASSERT_EQ(nodes.size(), 1U);
    EXPECT_TRUE(nodes[0].self);
    EXPECT_EQ(nodes[0].connected_sessions, 3);
    EXPECT_EQ(nodes[0].heartbeat_at_ms, now_ms_.load());
}

TEST_F(node_directory_test, nodes_see_each_other_and_a_clean_stop_leaves) {
    auto a = directory("a", 1);
    auto b = directory("b", 2);
    ASSERT_TRUE(a->start());
    ASSERT_TRUE(b->start());
    ASSERT_TRUE(eventually(*a, [](const auto& nodes) {
        const auto* other = find(nodes, "b");
        return nodes.size() == 2 && other != nullptr && other->connected_sessions == 2 &&
               !other->self && other->reachable && other->version == "9.9";
    }));
    EXPECT_TRUE(a->nodes()[0].self) << "the node asked comes first";
    ASSERT_TRUE(eventually(*b, [](const auto& nodes) { return find(nodes, "a") != nullptr; }));
    b->stop();
    EXPECT_TRUE(eventually(*a, [](const auto& nodes) { return nodes.size() == 1; }));
    a->stop();
}

TEST_F(node_directory_test, a_silent_node_is_unreachable_after_three_intervals) {
    auto a = directory("a", 0);
    ASSERT_TRUE(a->start());
    // b's one heartbeat, and then nothing (a killed process writes no tombstone).
    proto::node_info b;
    b.set_node_id("b");
    b.set_heartbeat_at_ms(now_ms_.load());
    b.set_heartbeat_interval_ms(1000);
    b.set_health("UP");
    std::promise<bool> written;
    log_->produce("starling.sys.nodes", "b", b.SerializeAsString(), {},
                  [&](result<produce_ack> r) { written.set_value(r.has_value()); });
    ASSERT_TRUE(written.get_future().get());
    ASSERT_TRUE(eventually(*a, [](const auto& nodes) { return find(nodes, "b") != nullptr; }));
    now_ms_ += 3000;
    EXPECT_TRUE(find(a->nodes(), "b")->reachable) << "three of its intervals is still on time";
    now_ms_ += 1;
    EXPECT_FALSE(find(a->nodes(), "b")->reachable);
    a->stop();
}

TEST_F(node_directory_test, a_restarted_node_does_not_list_its_old_heartbeat) {
    // What a crashed "a" left behind.
    ASSERT_TRUE(log_->create_topic(
        topic_spec{.name = "starling.sys.nodes", .partitions = 1, .compacted = true}));
    proto::node_info old;
    old.set_node_id("a");
    old.set_heartbeat_at_ms(now_ms_.load() - 60'000);
    std::promise<bool> written;
    log_->produce("starling.sys.nodes", "a", old.SerializeAsString(), {},
                  [&](result<produce_ack> r) { written.set_value(r.has_value()); });
    ASSERT_TRUE(written.get_future().get());

    auto again = directory("a", 5);
    ASSERT_TRUE(again->start());
    auto b = directory("b", 0);
    ASSERT_TRUE(b->start());
    // b's heartbeat comes after the old one in the topic: once b is listed, the old one was read.
    ASSERT_TRUE(eventually(*again, [](const auto& nodes) { return find(nodes, "b") != nullptr; }));
    const auto nodes = again->nodes();
    ASSERT_EQ(nodes.size(), 2U);
    EXPECT_TRUE(nodes[0].self);
    EXPECT_EQ(nodes[0].connected_sessions, 5);
    EXPECT_TRUE(nodes[0].reachable);
}

}  // namespace
}  // namespace starling::broker
