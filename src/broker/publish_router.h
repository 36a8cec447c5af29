#pragma once

// publish_router: the consume-and-route loop (docs/architecture.md §3 steps 4–5).
//
// A pool of consumer threads (queue.msg-all.consumers-count), all in the consumer group
// "msg-all-consumer-group", reads msg.all. For each record it matches the topic in the
// subscription trie (lock-free), merges overlapping subscriptions of one client (highest QoS,
// every subscription identifier), applies No Local and Retain As Published, picks one member
// per shared-subscription group (round-robin among connected members, on this node or, in
// cluster mode, connected on another node per the session mirror; persistent APPLICATION
// members instead get one copy per message in msg.app.shared.<filter>, which they read as one
// consumer group — application_delivery.h), and routes each copy:
//   - QoS 1/2 copy for a persistent DEVICE session → msg.persisted (key = client id); the
//     persisted_consumer appends it to the client's device inbox;
//   - QoS 1/2 copy for a persistent APPLICATION session → msg.app.<clientId> (partition 0),
//     read by that client's own consumer while it is connected (application_delivery.h);
//   - anything else → the live actor's mailbox, or dropped and counted (offline, not writable,
//     mailbox full); in cluster mode, a client whose session is connected on another node gets
//     the copy through msg.downlink.basic.<owner> (downlink_consumer.h on that node).
// Offsets are committed once every msg.persisted / msg.app write of the batch was
// acknowledged, so a crash re-routes what was not yet handed on (at least once).
//
// Threads: its own consumer threads, each registered as an RCU reader of the trie.
// Lifecycle: start() after the state snapshot is loaded; stop() wakes and joins the threads.

#include "broker/message.h"
#include "metrics/routing_probe.h"
#include "mqtt/qos.h"
#include "starling/message_log.h"

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <stop_token>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <vector>

namespace starling::broker {

class broker_core;

class publish_router {
  public:
    publish_router(broker_core& core, metrics::routing_probe& probe);
    ~publish_router();

    status start();
    void stop();

    // Routes one message (public for tests); returns the number of copies produced to
    // msg.persisted, whose completion calls `persisted_done`.
    struct batch;
    void route(const message_ptr& msg, batch& b);

    // msg.all records routed and committed since start, and the copies they produced to
    // msg.persisted (device and group inboxes). Tests compare them with what was published and
    // what the msg.persisted consumers stored to know the node is idle. Any thread.
    std::uint64_t records_routed() const { return records_routed_.load(std::memory_order_acquire); }
    std::uint64_t persisted_copies() const {
        return persisted_copies_.load(std::memory_order_acquire);
    }

  private:
    struct target;
    void run(std::size_t index, log_consumer* consumer);
    void deliver(const message_ptr& msg, const target& t, batch& b);
    // Cluster mode: produces the copy to msg.downlink.basic.<owner> when the client's session
    // is connected on another node; false when it is not (the copy is then offline here).
    bool forward_to_owner(const message_ptr& msg, const target& t, mqtt::qos qos, bool retain,
                          batch& b);
    // Cluster mode: the mirrored session of the client is connected on another node.
    bool connected_elsewhere(const std::string& client_id) const;
    // One copy of the message to msg.ie.<id> of every enabled integration whose topic filters
    // match it (integration/matcher.h).
    void produce_integration_copies(const message_ptr& msg, batch& b);
    std::size_t pick_shared_member(const std::string& group_key, std::size_t members);
    // Round-robin among `members` of one group: the first usable one (connected here with a
    // writable channel, or connected on another node) from the group's turn, else null;
    // `persistent_member` tells whether a persistent DEVICE member could keep the copy.
    target* pick_member(const app_message& msg, const std::string& group_key,
                        const std::vector<target*>& members, bool& persistent_member);
    // A QoS 1/2 copy no member can take now, to the group's inbox (group_inbox.h).
    void produce_group_inbox(const message_ptr& msg, std::string_view group_key, batch& b);
    // The group's copy for its persistent APPLICATION members, to msg.app.shared.<filter>.
    void produce_app_shared(const message_ptr& msg, std::string_view filter, batch& b);

    broker_core& core_;
    metrics::routing_probe& probe_;
    std::atomic<bool> running_{false};
    std::stop_source stop_;  // ends the threads' retry waits at stop()
    std::atomic<std::uint64_t> records_routed_{0};
    std::atomic<std::uint64_t> persisted_copies_{0};
    std::vector<std::unique_ptr<log_consumer>> consumers_;
    std::vector<std::thread> threads_;
    std::mutex shared_mutex_;
    std::unordered_map<std::string, std::size_t> shared_counters_;
};

}  // namespace starling::broker
