#pragma once

// persisted_consumer: reads msg.persisted (one copy per persistent DEVICE subscriber, key =
// client id) and writes each polled batch into the subscribers' device inboxes **first**, then
// signals their actors to deliver (ARCHITECTURE.md §3, TBMQ's DeviceMsgQueueConsumer).
//
// A batch is committed only after every inbox append succeeded; on a failure (store
// unreachable) the consumer seeks back to the batch start and retries with backoff, so a
// restarted inbox store loses nothing (appends are at least once).
//
// Threads: its own consumer threads (queue.device-persisted-msg.consumers-count).

#include "base/result.h"
#include "starling/message_log.h"

#include <atomic>
#include <memory>
#include <thread>
#include <vector>

namespace starling::broker {

class broker_core;

class persisted_consumer {
  public:
    explicit persisted_consumer(broker_core& core);
    ~persisted_consumer();

    status start();
    void stop();

  private:
    void run(std::size_t index, log_consumer* consumer);
    bool write_batch(std::vector<log_record>& records);

    broker_core& core_;
    std::atomic<bool> running_{false};
    std::vector<std::unique_ptr<log_consumer>> consumers_;
    std::vector<std::thread> threads_;
};

}  // namespace starling::broker
