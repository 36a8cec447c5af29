#pragma once

// persisted_consumer: reads msg.persisted (one copy per persistent DEVICE subscriber, key =
// client id) and writes each polled batch into the subscribers' device inboxes **first**, then
// signals their actors to deliver (docs/architecture.md §3, TBMQ's DeviceMsgQueueConsumer).
//
// A batch is committed only after every inbox append succeeded; on a failure (store
// unreachable) the consumer seeks back to the batch start and retries with backoff, so a
// restarted inbox store loses nothing (appends are at least once).
//
// Cluster mode, for a client whose session lives on another node (session_registry mirror):
//   - shared inbox (Redis; settings::shared_inbox): the copy is appended here like any other,
//     then an empty record with the header starling-inbox-signal goes to
//     msg.downlink.persisted.<owner>, whose consumer only signals the actor. A dead owner loses
//     nothing: the copy is in the inbox the client reads wherever it reconnects. The owner is
//     looked up after the append, and a signal reaching a node the session has left is passed
//     on to its owner once; with the catch-up signal the left node sends when it learns of the
//     move (session_coordinator), a drain on the new node never waits for a signal that went
//     to the old one.
//   - node-local inboxes: the copy itself is forwarded there instead, and that node's instance
//     of this class (on its downlink topic, `forward` off) appends it to its own inbox.
// The batch commits once the forwards were acknowledged too.
//
// rate-limits.device-persisted-messages: the msg.persisted consumers (not the downlink ones,
// which receive copies already charged) take one token per copy of a polled batch from the
// cluster-wide bucket before anything is appended or forwarded; copies beyond the tokens
// granted are dropped (droppedMsgs reason device_persisted_limit), the batch's last ones
// first. Store unreachable: every copy passes (shared_limit fails open), counted in
// rateLimitStoreErrors_total. A batch re-read after an inbox failure is charged again.
//
// Threads: its own consumer threads (queue.device-persisted-msg.consumers-count).

#include "base/result.h"
#include "ratelimit/shared_limit.h"
#include "starling/message_log.h"

#include <atomic>
#include <memory>
#include <stop_token>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace starling::broker {

class broker_core;

class persisted_consumer {
  public:
    struct options {
        std::string topic;     // msg.persisted or msg.downlink.persisted.<node>
        std::string group_id;  // consumer group
        std::int32_t consumers = 1;
        std::string instance_name = "persisted";  // static member ids "<node>-<name>-<i>"
        bool forward = false;       // forward copies of sessions on other nodes (cluster mode)
        bool device_limit = false;  // charge rate-limits.device-persisted-messages
    };
    // The msg.persisted consumers (group device-persisted-msg-consumer-group, forwarding in
    // cluster mode).
    explicit persisted_consumer(broker_core& core);
    persisted_consumer(broker_core& core, options opts);
    ~persisted_consumer();

    status start();
    void stop();

    // Records handled (stored or dropped, and committed) since start. Any thread.
    std::uint64_t records_handled() const {
        return records_handled_.load(std::memory_order_acquire);
    }

  private:
    void run(std::size_t index, log_consumer* consumer);
    bool write_batch(std::vector<log_record>& records);
    // Charges the batch's copies to the device-persisted-messages limit; returns the first copy
    // over it (every later copy is over it too), null when all passed or the limit is off.
    const log_record* over_device_limit(const std::vector<log_record>& records);
    // Produces each record (or, signal_only, an empty record with the inbox-signal header) to
    // its owner node's downlink topic; true when all were acknowledged.
    bool forward(const std::vector<std::pair<log_record*, std::string>>& records);
    // After copies were appended to (or a signal arrived for) `client_id`'s inbox: tells its
    // actor here when connected here, else — with may_pass_on and the session living on another
    // node by this node's view — queues a signal to that node in `to_signal`.
    void notify_owner(const std::string& client_id, bool may_pass_on,
                      std::vector<std::pair<std::string, std::string>>& to_signal);
    // Produces one signal-only record per (client id, owner node) and waits for the acks.
    bool signal_owners(const std::vector<std::pair<std::string, std::string>>& client_owner);

    broker_core& core_;
    options opts_;
    std::unique_ptr<ratelimit::shared_limit> device_limit_;  // null: limit off
    std::atomic<bool> store_failure_logged_{false};
    std::atomic<bool> running_{false};
    std::stop_source stop_;  // ends the threads' retry waits at stop()
    std::atomic<std::uint64_t> records_handled_{0};
    std::vector<std::unique_ptr<log_consumer>> consumers_;
    std::vector<std::thread> threads_;
};

}  // namespace starling::broker
