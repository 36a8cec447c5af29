#pragma once

// mqtt_target_sender: an integration's external MQTT broker (definition.h, mqtt_target) — a
// bridge. One attempt = one PUBLISH by the Paho C asynchronous client (MQTT 3.1.1 or 5.0, TCP or
// TLS) to the topic template expanded for the message, at the configured QoS and retain flag;
// MQTT 5 properties of the message (content type, payload format, response topic, correlation
// data, user properties) go with it when both sides speak 5.0. Success is what the QoS promises:
// written to the socket (0), PUBACK (1), PUBCOMP (2).
//
// Connection: only while this node owns the integration (owner_changed), since the client id is
// the integration's and two nodes connecting with it would take the session from each other. A
// supervisor thread connects, reconnects after a loss with a backoff (100 ms doubling to 10 s,
// back to 100 ms once a PUBLISH is acknowledged),
// and fails an attempt not acknowledged within deliveryTimeoutMs. While disconnected an attempt
// fails at once ("not connected ..."), and the executor's retries pace it. A connection lost
// with attempts in flight fails them: the executor sends them again (at least once).

#include "integration/definition.h"
#include "integration/target.h"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <thread>

struct MQTTProperties;  // Paho's (MQTTProperties.h)

namespace starling::integration {

class mqtt_target_sender final : public target {
  public:
    explicit mqtt_target_sender(const definition& d);
    ~mqtt_target_sender() override;

    status start() override;
    void send(const broker::app_message& msg, std::function<void(send_outcome)> done) override;
    // Publishes the event document to eventTopicName (starling/events/${clientId}).
    void send_event(std::string_view event, const std::string& client_id, const std::string& json,
                    std::function<void(send_outcome)> done) override;
    void stop() override;
    void owner_changed(bool owner) override;
    std::string describe() const override { return uri_; }

    // Paho's callbacks (C linkage-compatible statics forward here).
    struct attempt_context {
        mqtt_target_sender* self;
        std::uint64_t id;
    };
    void on_connected();
    void on_connect_failed(std::string reason);
    void on_connection_lost(std::string reason);
    void on_attempt_done(attempt_context* ctx, send_outcome outcome);

  private:
    struct attempt {
        std::function<void(send_outcome)> done;
        std::chrono::steady_clock::time_point deadline;
    };
    void supervise(std::stop_token stop);
    // One PUBLISH of `payload` to `topic` (properties: MQTT 5 only, may be empty).
    void publish(const std::string& topic, const std::string& payload, MQTTProperties* properties,
                 std::function<void(send_outcome)> done);
    // Fails every attempt in flight with `reason` (outside the lock).
    void fail_all(const std::string& reason);

    mqtt_target target_;
    payload_format payload_;
    std::string integration_id_;
    std::string uri_;
    void* client_ = nullptr;  // MQTTAsync

    std::mutex mutex_;
    std::condition_variable_any wake_;
    bool wanted_ = false;  // this node owns the integration
    bool connected_ = false;
    bool connecting_ = false;
    bool stopping_ = false;
    std::string last_error_;
    std::chrono::milliseconds backoff_{100};
    std::chrono::steady_clock::time_point next_connect_{};
    std::uint64_t next_id_ = 0;
    std::map<std::uint64_t, attempt> in_flight_;
    // Contexts handed to Paho live until Paho calls back with them or the client is destroyed:
    // an attempt failed here (timeout, lost connection) may still get its late callback.
    std::map<attempt_context*, std::unique_ptr<attempt_context>> contexts_;
    std::jthread supervisor_;
};

}  // namespace starling::integration
