#pragma once

// kafka_target_sender: an integration's Kafka topic on a Kafka cluster of the user's (not the
// broker's own log; definition.h, kafka_target). One attempt = one record produced with
// librdkafka; its delivery report is the outcome: acknowledged per `acks` is success, an error
// or no acknowledgement within deliveryTimeoutMs is a failure the executor retries.
//
//   - key: the key template expanded for the message ("${topic}" by default, so each MQTT
//     topic stays on one partition and in order there); value: the body of payloadContentType
//     (the JSON envelope by default, http_payload.h); headers: kafkaHeaders as configured.
//   - with acks=all the producer is idempotent: librdkafka's own resends within one attempt
//     neither duplicate nor reorder.
//   - otherProperties go to librdkafka last (TLS, SASL, batching ...): they may override the
//     settings above.
// A thread of its own serves librdkafka's callbacks (rd_kafka_poll).

#include "integration/definition.h"
#include "integration/target.h"

#include <atomic>
#include <thread>

struct rd_kafka_s;

namespace starling::integration {

class kafka_target_sender final : public target {
  public:
    explicit kafka_target_sender(const definition& d);
    ~kafka_target_sender() override;

    status start() override;
    void send(const broker::app_message& msg, std::function<void(send_outcome)> done) override;
    // The event document as the value, the client id as the key, header ie-event = its name.
    void send_event(std::string_view event, const std::string& client_id, const std::string& json,
                    std::function<void(send_outcome)> done) override;
    void stop() override;
    std::string describe() const override;

  private:
    void produce(const std::string& key, const std::string& value, std::string_view event,
                 std::function<void(send_outcome)> done);
    kafka_target target_;
    payload_format payload_;
    std::string integration_id_;
    rd_kafka_s* producer_ = nullptr;
    std::atomic<bool> stopping_{false};
    std::jthread poller_;
};

}  // namespace starling::integration
