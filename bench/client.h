#pragma once

// client: one MQTT client connection of the load generator, over a plain TCP socket, driven by
// the Asio io_context of the worker thread that owns it. It speaks just enough MQTT for
// benchmarking (CONNECT, SUBSCRIBE, PUBLISH at QoS 0/1/2 in both directions with their
// acknowledgements, PINGREQ, DISCONNECT) with Starling's codec (src/mqtt/), and reports what
// happens to a client_events sink (the worker).
//
// Outbound bytes are appended to one buffer and written with one async_write at a time; what is
// appended while a write is in flight goes out in the next one, so a burst of publishes costs a
// few syscalls, not one each. publish() at QoS 1/2 takes a packet id from a window of
// min(configured in-flight, server Receive Maximum) and returns false when none is free.
//
// Lifecycle: constructed unconnected → connect() → CONNACK (on_connected) → ... → disconnect()
// or a failure (on_closed, exactly once). Not reusable after it closed. Owned by its worker,
// which destroys it only after its io_context stopped running, so completion handlers may hold
// `this`.
//
// Concurrency: every member is used on the owning worker's thread only.

#include "mqtt/decoder.h"
#include "mqtt/packet.h"
#include "mqtt/protocol_version.h"
#include "mqtt/qos.h"

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

namespace starling::bench {

class client;

// Everything a client reports. Called on the client's worker thread, from inside the client's
// handlers: an implementation may publish on (or close) any client of the same worker.
class client_events {
  public:
    virtual ~client_events() = default;
    virtual void on_connected(client& c, const mqtt::connack& ack) = 0;
    virtual void on_subscribed(client& c, const mqtt::suback& ack) = 0;
    virtual void on_message(client& c, const mqtt::publish& message) = 0;
    // A QoS 1/2 publish completed (PUBACK or PUBCOMP); ok is false for a v5 failure code.
    virtual void on_publish_done(client& c, std::uint64_t send_ns, bool ok) = 0;
    // The client asked for it (want_writable) and its write buffer drained below the mark.
    virtual void on_writable(client& c) = 0;
    // The connection ended: by disconnect() (ec is empty) or by a failure (why says what).
    virtual void on_closed(client& c, std::error_code ec, std::string_view why) = 0;
};

struct client_settings {
    mqtt::protocol_version version = mqtt::protocol_version::v3_1_1;
    std::string client_id;
    bool clean_start = true;
    std::uint32_t session_expiry = 0;  // v5 only
    std::uint16_t keep_alive = 300;
    std::optional<std::string> username;
    std::optional<std::string> password;
    std::uint16_t inflight = 100;  // outbound QoS 1/2 window before the server's limit
    std::size_t read_size = 16 * 1024;
    // Free the receive buffer after each read: idle connections then hold none (for the
    // connection scenario, where the load generator's own memory would otherwise dominate).
    bool low_memory = false;
};

class client {
  public:
    enum class state : std::uint8_t { idle, connecting, connected, closing, closed };

    client(boost::asio::io_context& io, client_events& events, std::uint32_t index,
           client_settings settings);
    ~client();
    client(const client&) = delete;
    client& operator=(const client&) = delete;

    // Opens the TCP connection (from local_address when given) and sends CONNECT.
    void connect(const boost::asio::ip::tcp::endpoint& server,
                 const std::optional<boost::asio::ip::address>& local_address);
    void subscribe(std::vector<mqtt::subscription> subscriptions);
    // QoS 0: always accepted (buffered). QoS 1/2: false when the window is full.
    bool publish(std::string_view topic, mqtt::qos qos, bool retain, std::string_view payload,
                 std::uint64_t send_ns);
    void ping();
    // DISCONNECT, then close once written. on_closed follows with an empty error.
    void disconnect();
    // Closes at once; on_closed follows.
    void abort(std::string_view why);

    // on_writable is called once the write buffer drops below `bytes` (one shot).
    void want_writable(std::size_t bytes);

    std::uint32_t index() const noexcept { return index_; }
    const client_settings& settings() const noexcept { return settings_; }
    state current_state() const noexcept { return state_; }
    bool connected() const noexcept { return state_ == state::connected; }
    std::size_t window() const noexcept { return window_; }
    std::size_t inflight() const noexcept { return window_ - free_ids_.size(); }
    bool window_full() const noexcept { return free_ids_.empty(); }
    std::size_t pending_write_bytes() const noexcept { return out_.size() + writing_.size(); }
    std::uint64_t connect_started_ns() const noexcept { return connect_started_ns_; }
    std::uint64_t last_send_ns() const noexcept { return last_send_ns_; }
    std::uint64_t subscribe_sent_ns() const noexcept { return subscribe_sent_ns_; }

  private:
    struct inflight_slot {
        std::uint64_t send_ns = 0;
        std::uint8_t stage = 0;  // 0 free, 1 awaiting PUBACK, 2 PUBREC, 3 PUBCOMP
    };

    void on_connect(const boost::system::error_code& ec);
    void start_read();
    void on_read(const boost::system::error_code& ec, std::size_t n);
    void handle(mqtt::packet&& p);
    void handle_connack(const mqtt::connack& ack);
    void handle_publish(const mqtt::publish& message);
    void complete(std::uint16_t id, std::uint8_t expected_stage, bool ok);
    void request_flush();
    void flush();
    void on_written(const boost::system::error_code& ec);
    void fail(std::error_code ec, std::string_view why);
    void finish_close(std::error_code ec, std::string_view why);

    boost::asio::io_context& io_;
    client_events& events_;
    std::uint32_t index_;
    client_settings settings_;
    boost::asio::ip::tcp::socket socket_;
    mqtt::decoder decoder_;
    state state_ = state::idle;

    std::string out_;      // appended to while a write is in flight
    std::string writing_;  // the bytes of the write in flight
    bool write_in_flight_ = false;
    bool flush_posted_ = false;
    bool close_after_write_ = false;
    std::size_t writable_mark_ = 0;  // 0 = nobody waits for on_writable

    std::size_t window_ = 0;
    std::vector<std::uint16_t> free_ids_;
    std::vector<inflight_slot> slots_;   // index = packet id
    std::vector<bool> incoming_qos2_;    // packet ids awaiting PUBREL (allocated on first use)
    std::uint16_t next_control_id_ = 0;  // SUBSCRIBE ids, above the publish window

    std::uint64_t connect_started_ns_ = 0;
    std::uint64_t last_send_ns_ = 0;
    std::uint64_t subscribe_sent_ns_ = 0;
};

}  // namespace starling::bench
