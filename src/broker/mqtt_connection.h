#pragma once

// mqtt_connection: the MQTT side of one network connection. It runs the decoder on the I/O
// thread that read the bytes (so decoding scales with I/O threads), validates the CONNECT's
// client identifier, finds the client's actor and forwards every packet to it. It is also the
// actor's client_channel: writes, close and read pausing go to the transport.
//
// Backpressure: when the actor's mailbox refuses a packet (full), the connection keeps the
// packet (and any others of the same read) in a small backlog, stops reading the socket, and
// the actor resumes it (resume_reading) once its mailbox drained — TCP flow control then slows
// the publisher instead of the broker buffering without bound. The actor may also hold reading
// for its own reasons (hold_reading: a 3.1.1 publisher whose inbound window is full); the socket
// is read again only when neither holds it.
//
// Authentication (issue 6): after the client-id checks, a CONNECT goes through the blocked
// clients list and then the authenticator, which may answer later on another thread. Until it
// answers, reading is paused and packets already decoded wait in the backlog; on allow the
// actor gets the CONNECT (with the client type and topic rules) and then the backlog, in order;
// on deny the client gets CONNACK 0x86/0x87 (v3: 0x04/0x05), the refusal is logged and written
// to the metadata store's unauthorized-client log.
//
// Connect deadline: the listener closes a connection that has not delivered a complete CONNECT
// within listener.connect_timeout_ms of its accept (net::connection, errc::connect_timeout); the
// first decoded CONNECT calls connect_completed(). A partial CONNECT does not count.
//
// Lifecycle: created by the listener's accept handler, owned by the transport connection
// (shared_ptr) and by the actor while attached. Concurrency: on_* callbacks come from the
// connection's I/O strand; client_channel methods from the actor's thread.

#include "auth/authenticator.h"
#include "base/lazy_deque.h"
#include "broker/client_actor.h"
#include "broker/client_channel.h"
#include "mqtt/decoder.h"
#include "net/connection.h"

#include <atomic>
#include <cstdint>
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
    void hold_reading(bool held) override;
    const std::string& remote_address() const override { return remote_address_; }
    std::uint64_t id() const override { return id_; }
    bool input_ended() const override { return input_ended_.load(std::memory_order_acquire); }

  private:
    // connecting → (authenticating →) attached, or refused. Written under backlog_mutex_.
    enum class phase : std::uint8_t { connecting, authenticating, attached, refused };
    struct pending_connect {
        mqtt::connect packet;
        bool id_assigned = false;
        bool id_generated = false;
    };

    void handle_connect(mqtt::connect&& c);
    void on_authenticated(pending_connect&& pc, auth::auth_decision&& d);
    // Hands the CONNECT to the client's actor; false when no actor would take it.
    bool attach_locked(pending_connect&& pc, client_type type,
                       std::shared_ptr<const auth::topic_rules> rules);
    void refuse_unauthorized(const mqtt::connect& c, mqtt::reason_code code, std::string reason);
    void refuse_connect(mqtt::protocol_version version, mqtt::reason_code code,
                        std::string_view why, std::string_view client_id = {});
    void forward(client_message&& m);
    void forward_locked(client_message&& m);  // under backlog_mutex_
    // The client's acknowledgements of deliveries go on the actor's control lane (see the .cpp).
    static bool is_delivery_acknowledgement(const mqtt::packet& p);
    void forward_acknowledgement(client_message&& m);
    // Tells the actor `m` unless its mailbox is full by count or by bytes (then false, and m
    // is untouched). Under backlog_mutex_.
    bool tell_actor_locked(client_message& m);
    std::shared_ptr<client_actor> current_actor();

    broker_core& core_;
    std::shared_ptr<net::connection> transport_;
    const std::uint64_t id_;
    const std::string remote_address_;
    mqtt::decoder decoder_;
    std::shared_ptr<client_actor> actor_;  // set once CONNECT was handed over (under the mutex)
    std::atomic<bool> refused_{false};
    std::atomic<phase> phase_{phase::connecting};
    bool peer_gone_ = false;  // closed while authenticating (under the mutex)

    std::mutex backlog_mutex_;
    base::lazy_deque<client_message> backlog_;
    bool paused_ = false;
    std::atomic<bool> paused_flag_{false};  // paused_, readable without the mutex
    bool held_ = false;                     // hold_reading(true) (under the mutex)
    std::atomic<bool> input_ended_{false};  // set after forwarding DISCONNECT or the close
};

}  // namespace starling::broker
