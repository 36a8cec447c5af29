#pragma once

// kafka_message_log: the message-log port (include/starling/message_log.h) on Apache Kafka via
// librdkafka — what a Starling node runs on in `starling.mode: cluster`. README.md in this
// folder has the design notes; kafka_log_config.h the settings.
//
// Lifecycle: open() creates the producer (it does not wait for a broker: an unreachable cluster
// shows in the first admin call, which fails after config.admin_timeout, and in healthy()) and
// starts the delivery thread. stop() (or the destructor) waits up to delivery_timeout for
// every outstanding produce, purges what is left (their callbacks get an error), and joins the
// thread. Consumers are independent clients and may outlive the log object.
// Ownership: owns one librdkafka producer (also used for admin and metadata requests) and the
// delivery thread.
// Threads: every produce callback runs on the delivery thread ("kafka-dr", an rd_kafka_poll
// loop) — including produce()'s immediate failures (unknown partition, full queue), which are
// handed to that thread rather than run on the caller's. Only after stop() does produce() run
// its callback inline on the caller's thread (with operation_canceled). All methods are
// thread-safe; create_topic, delete_topic, partition_count and create_consumer block (admin and
// metadata round trips, bounded by admin_timeout) and must not be called on an I/O thread.
// healthy(): false from the moment librdkafka reports all brokers down until a delivery
// succeeds or the producer's statistics (every 2 s) show a broker up again.
// Errors: kafka_errc.h (rd_kafka_resp_err_t as std::error_code).

#include "adapters/kafka/kafka_log_config.h"
#include "base/result.h"
#include "starling/message_log.h"

#include <chrono>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace starling::adapters::kafka {

class kafka_message_log final : public message_log {
  public:
    // Fails with invalid_argument (and a log line naming the field or librdkafka property)
    // on a bad configuration.
    static result<std::unique_ptr<kafka_message_log>> open(kafka_log_config config);

    ~kafka_message_log() override;
    kafka_message_log(const kafka_message_log&) = delete;
    kafka_message_log& operator=(const kafka_message_log&) = delete;

    void stop();

    status create_topic(const topic_spec& spec) override;
    status delete_topic(std::string_view name) override;
    result<std::int32_t> partition_count(std::string_view topic) override;

    void produce(std::string_view topic, std::string key, std::string value,
                 std::vector<log_header> headers, produce_callback done,
                 std::int32_t partition = -1) override;

    result<std::unique_ptr<log_consumer>> create_consumer(const consumer_spec& spec) override;

    status flush(std::chrono::milliseconds timeout) override;
    bool healthy() const override;

    const kafka_log_config& config() const;

    // Names of every topic in the cluster that starts with `prefix` (a metadata request,
    // bounded by admin_timeout). Not part of the port: for tools and test clean-up.
    result<std::vector<std::string>> list_topics(std::string_view prefix);

    struct impl;

  private:
    explicit kafka_message_log(std::unique_ptr<impl> state);
    std::unique_ptr<impl> impl_;
};

}  // namespace starling::adapters::kafka
