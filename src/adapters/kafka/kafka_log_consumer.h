#pragma once

// kafka_log_consumer: the port's log_consumer as one librdkafka consumer client.
//
// Lifecycle: made by kafka_message_log::create_consumer() (subscribe with group management, or
// a manual assign); close() — or the destructor — leaves the group and destroys the client.
// A dynamic member's partitions move to the other members at once; a static member's
// (consumer_spec::instance_id set) only after the session timeout
// (queue.kafka.consumer.session-timeout-ms): that is what static membership is for, a
// restarting node gets its partitions back without a rebalance (README.md).
// Ownership: owns its client and the client's consumer queue.
// Threads: one thread at a time calls poll/commit/seek/pause/resume/assignment/end_offset/close
// (like a Kafka consumer); rebalance callbacks run inside poll() on that thread. wakeup() may be
// called from any thread: it yields the consumer queue, and a wakeup that arrives while no poll
// is blocked makes the next poll() return at once. The ready callback is librdkafka's queue
// event callback on the consumer queue (messages, rebalances and errors all land there); it
// runs on a librdkafka thread.

#include "adapters/kafka/kafka_log_config.h"
#include "base/result.h"
#include "starling/message_log.h"

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <utility>
#include <vector>

namespace starling::adapters::kafka {

class kafka_log_consumer final : public log_consumer {
  public:
    struct impl;
    explicit kafka_log_consumer(std::unique_ptr<impl> state);
    ~kafka_log_consumer() override;
    kafka_log_consumer(const kafka_log_consumer&) = delete;
    kafka_log_consumer& operator=(const kafka_log_consumer&) = delete;

    result<std::vector<log_record>> poll(std::chrono::milliseconds timeout) override;
    status commit(const std::vector<std::pair<topic_partition, std::int64_t>>& next) override;
    status seek(const topic_partition& tp, std::int64_t offset) override;
    void pause(const std::vector<topic_partition>& tps) override;
    void resume(const std::vector<topic_partition>& tps) override;
    std::vector<topic_partition> assignment() const override;
    result<std::int64_t> end_offset(const topic_partition& tp) override;
    void wakeup() override;
    void close() override;
    bool set_ready_callback(std::function<void()> ready) override;

  private:
    // Removes records of partitions the group revoked while poll() was gathering them.
    void drop_revoked(std::vector<log_record>& records);

    std::unique_ptr<impl> impl_;
};

// Creates the client, then subscribes (spec.topics) or assigns (spec.assignment, each partition
// starting at the group's committed offset, else spec.reset). Fails with invalid_argument when
// the spec names no group, both or neither of topics and assignment, or a property librdkafka
// rejects (logged with the property's name).
result<std::unique_ptr<log_consumer>> make_consumer(const kafka_log_config& config,
                                                    const consumer_spec& spec);

}  // namespace starling::adapters::kafka
