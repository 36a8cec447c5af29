#pragma once

// downlink_consumer: cluster mode only. Reads this node's msg.downlink.basic.<node> topic, where
// the routers of other nodes put the non-persistent copies (and QoS 0 copies) for clients connected
// here (docs/architecture.md §3 step 5), and hands each copy to the client's actor exactly as a
// local router would: the QoS, retain flag and subscription identifiers were decided by the sending
// router and travel in the record (proto::persisted_msg, key = client id). A copy for a client that
// is no longer connected here, or whose channel or mailbox is full, is dropped and counted
// (droppedMsgs offline / non_writable / mailbox_full), as a local copy would be.
//
// Offsets are committed per batch after the hand-off (non-persistent delivery is at most once
// past the actor's mailbox, like the local path).
//
// Thread: its own (one per node). Manual assignment of every partition from its end offset at
// start(); commits under group "<node>-downlink".
// Lifecycle: built by broker::node; start() before the msg.all consumers, stop() wakes and joins
// the thread (idempotent). Borrows the core.

#include "base/result.h"
#include "starling/message_log.h"

#include <atomic>
#include <cstdint>
#include <memory>
#include <stop_token>
#include <thread>

namespace starling::broker {

class broker_core;

class downlink_consumer {
  public:
    explicit downlink_consumer(broker_core& core);
    ~downlink_consumer();
    downlink_consumer(const downlink_consumer&) = delete;
    downlink_consumer& operator=(const downlink_consumer&) = delete;

    status start();
    void stop();

    // Copies handed to a local actor, and copies dropped. For tests and logs.
    std::uint64_t delivered() const { return delivered_.load(std::memory_order_acquire); }
    std::uint64_t dropped() const { return dropped_.load(std::memory_order_acquire); }

  private:
    void run();
    void hand_over(const log_record& rec);

    broker_core& core_;
    std::atomic<bool> running_{false};
    std::stop_source stop_;  // ends the thread's retry wait at stop()
    std::unique_ptr<log_consumer> consumer_;
    std::thread thread_;
    std::atomic<std::uint64_t> delivered_{0};
    std::atomic<std::uint64_t> dropped_{0};
};

}  // namespace starling::broker
