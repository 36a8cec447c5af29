#pragma once

// app_removed_consumer: reads sys.app.removed (docs/architecture.md §5) and removes what a client
// that stopped being an APPLICATION left behind: its msg.app.<clientId> topic (backlog and
// committed offsets) and its APPLICATION context in the metadata store.
//
// The record is written by application_session::remove(type_changed) on the node where the
// client connected with its new type (key = client id, value = the topic name); that node has
// already deleted both. This consumer is the safety net for a deletion that failed there or
// raced a stale consumer elsewhere re-creating the topic. Before deleting it checks the node's
// client.session mirror: a client that is a persistent APPLICATION again (it changed back
// before the record was read) keeps its topic.
//
// One consumer group for the whole cluster ("<prefix>.app-removed-consumer-group"): the topic and
// the context are cluster-wide resources, so one node deleting them is enough; every node doing
// it would only repeat the admin calls. Deletes are idempotent, so a record handled twice after a
// rebalance costs nothing.
//
// Thread: its own. Lifecycle: built and started by broker::node after the state snapshot (the
// mirror must be loaded for the check); stop() wakes and joins the thread (idempotent).

#include "base/result.h"
#include "starling/message_log.h"

#include <atomic>
#include <cstdint>
#include <memory>
#include <stop_token>
#include <thread>

namespace starling::broker {

class broker_core;

class app_removed_consumer {
  public:
    explicit app_removed_consumer(broker_core& core);
    ~app_removed_consumer();
    app_removed_consumer(const app_removed_consumer&) = delete;
    app_removed_consumer& operator=(const app_removed_consumer&) = delete;

    status start();
    void stop();

    // Records that led to a deletion, and records skipped because the client is an
    // APPLICATION again. For tests and logs.
    std::uint64_t removed() const { return removed_.load(std::memory_order_acquire); }
    std::uint64_t skipped() const { return skipped_.load(std::memory_order_acquire); }

  private:
    void run();
    void handle(const log_record& rec);

    broker_core& core_;
    std::atomic<bool> running_{false};
    std::stop_source stop_;  // ends the thread's retry wait at stop()
    std::unique_ptr<log_consumer> consumer_;
    std::thread thread_;
    std::atomic<std::uint64_t> removed_{0};
    std::atomic<std::uint64_t> skipped_{0};
};

}  // namespace starling::broker
