#pragma once

// mqtt_connection: the MQTT side of one network connection. It runs the decoder on the I/O
// thread that read the bytes (so decoding scales with I/O threads), validates the CONNECT's
// client identifier, finds the client's actor and forwards every packet to it. It is also the
// actor's client_channel: writes, close and read pausing go to the transport.
//
// Backpressure: when the actor's mailbox refuses a packet (full), the connection keeps the
// packet (and any others of the same read) in a small backlog, stops reading the socket, and
// the actor resumes it (resume_reading) once its mailbox drained — TCP flow control then slows
// the publisher instead of the broker buffering without bound.
//
// Lifecycle: created by the listener's accept handler, owned by the transport connection
// (shared_ptr) and by the actor while attached. Concurrency: on_* callbacks come from the
// connection's I/O strand; client_channel methods from the actor's thread.

#include "broker/client_actor.h"
#include "broker/client_channel.h"
#include "mqtt/decoder.h"
#include "net/connection.h"

#include <atomic>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>

namespace starling::broker {

class broker_core;
class client_actor;

class mqtt_connection final : public net::connection_handler,
                              public client_channel,
                              public std::enable_shared_from_this<mqtt_connection> {
  public:
    mqtt_connection(broker_core& core, std::shared_ptr<net::connection> transport);

    // net::connection_handler (I/O strand).
    void on_bytes(std::span<const std::uint8_t> bytes) override;
    void on_closed(std::error_code ec) override;
    void on_writability_changed(bool writable) override;

    // client_channel (any thread).
    void send(std::string bytes) override;
    void close() override;
    bool writable() const override;
    void resume_reading() override;
    bool reading_paused() const override { return paused_flag_.load(std::memory_order_acquire); }
    const std::string& remote_address() const override { return remote_address_; }
    std::uint64_t id() const override { return id_; }
    bool input_ended() const override { return input_ended_.load(std::memory_order_acquire); }

  private:
    void handle_connect(mqtt::connect&& c);
    void refuse_connect(mqtt::protocol_version version, mqtt::reason_code code,
                        std::string_view why);
    void forward(client_message&& m);

    broker_core& core_;
    std::shared_ptr<net::connection> transport_;
    const std::uint64_t id_;
    const std::string remote_address_;
    mqtt::decoder decoder_;
    std::shared_ptr<client_actor> actor_;  // set once CONNECT was handed over
    bool refused_ = false;

    std::mutex backlog_mutex_;
    std::deque<client_message> backlog_;
    bool paused_ = false;
    std::atomic<bool> paused_flag_{false};  // paused_, readable without the mutex
    std::atomic<bool> input_ended_{false};  // set after forwarding DISCONNECT or the close
};

}  // namespace starling::broker
