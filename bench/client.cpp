#include "bench/client.h"

#include "mqtt/encoder.h"
#include "mqtt/reason_code.h"

#include "bench/payload.h"
#include <boost/asio/buffer.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/write.hpp>
#include <netinet/in.h>
#include <sys/socket.h>

#include <algorithm>
#include <string>
#include <utility>

#ifndef IP_BIND_ADDRESS_NO_PORT
#define IP_BIND_ADDRESS_NO_PORT 24
#endif

namespace starling::bench {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;

namespace {

// Publish packet ids are 1..window; SUBSCRIBE takes ids above that range so the two never
// collide (client-to-server packet ids share one space).
constexpr std::size_t max_window = 65000;
constexpr std::uint16_t first_control_id = 65001;

bool is_failure(mqtt::reason_code code) noexcept { return static_cast<std::uint8_t>(code) >= 0x80; }

}  // namespace

client::client(asio::io_context& io, client_events& events, std::uint32_t index,
               client_settings settings)
    : io_(io),
      events_(events),
      index_(index),
      settings_(std::move(settings)),
      socket_(io),
      decoder_(mqtt::decoder_limits{}, mqtt::decoder_role::client) {
    decoder_.set_protocol_version(settings_.version);
}

client::~client() = default;

void client::connect(const tcp::endpoint& server,
                     const std::optional<asio::ip::address>& local_address) {
    state_ = state::connecting;
    connect_started_ns_ = monotonic_ns();
    boost::system::error_code ec;
    socket_.open(server.protocol(), ec);
    if (ec) {
        fail(ec, "socket open");
        return;
    }
    if (local_address) {
        // Choose the source address but let connect() pick the port, so ports are allocated
        // per destination rather than exclusively per source address.
        int one = 1;
        ::setsockopt(socket_.native_handle(), IPPROTO_IP, IP_BIND_ADDRESS_NO_PORT, &one,
                     sizeof(one));
        socket_.bind(tcp::endpoint(*local_address, 0), ec);
        if (ec) {
            fail(ec, "bind to source address");
            return;
        }
    }
    socket_.async_connect(server, [this](const boost::system::error_code& e) { on_connect(e); });
}

void client::on_connect(const boost::system::error_code& ec) {
    if (state_ != state::connecting) {
        return;
    }
    if (ec) {
        fail(ec, "TCP connect");
        return;
    }
    boost::system::error_code ignored;
    socket_.set_option(tcp::no_delay(true), ignored);
    mqtt::connect packet;
    packet.protocol_version = settings_.version;
    packet.clean_start = settings_.clean_start;
    packet.keep_alive = settings_.keep_alive;
    packet.client_id = settings_.client_id;
    packet.username = settings_.username;
    packet.password = settings_.password;
    if (mqtt::is_v5(settings_.version) && settings_.session_expiry > 0) {
        packet.properties.session_expiry_interval = settings_.session_expiry;
    }
    mqtt::encode(packet, settings_.version, out_);
    last_send_ns_ = monotonic_ns();
    flush();
    start_read();
}

void client::start_read() {
    auto buffer = decoder_.prepare(settings_.read_size);
    socket_.async_read_some(
        asio::buffer(buffer.data(), buffer.size()),
        [this](const boost::system::error_code& ec, std::size_t n) { on_read(ec, n); });
}

void client::on_read(const boost::system::error_code& ec, std::size_t n) {
    if (state_ == state::closed) {
        return;
    }
    if (ec) {
        if (state_ == state::closing) {
            finish_close({}, "disconnected");
        } else if (ec == asio::error::eof) {
            fail(ec, "connection closed by the broker");
        } else {
            fail(ec, "read");
        }
        return;
    }
    decoder_.commit(n);
    for (;;) {
        auto r = decoder_.next();
        if (std::holds_alternative<mqtt::need_more>(r)) {
            break;
        }
        if (auto* error = std::get_if<mqtt::decode_error>(&r)) {
            fail(mqtt::make_error_code(error->code),
                 "undecodable packet from the broker: " + error->detail);
            return;
        }
        handle(std::get<mqtt::packet>(std::move(r)));
        if (state_ == state::closed) {
            return;
        }
    }
    if (settings_.low_memory) {
        decoder_.shrink();
    }
    flush();
    start_read();
}

void client::handle(mqtt::packet&& p) {
    switch (mqtt::type_of(p)) {
        case mqtt::packet_type::connack:
            handle_connack(std::get<mqtt::connack>(p));
            return;
        case mqtt::packet_type::publish:
            handle_publish(std::get<mqtt::publish>(p));
            return;
        case mqtt::packet_type::puback: {
            const auto& ack = std::get<mqtt::puback>(p);
            complete(ack.packet_id, 1, !is_failure(ack.reason_code));
            return;
        }
        case mqtt::packet_type::pubrec: {
            const auto& rec = std::get<mqtt::pubrec>(p);
            if (is_failure(rec.reason_code)) {
                complete(rec.packet_id, 2, false);
                return;
            }
            if (rec.packet_id == 0 || rec.packet_id > window_ || slots_[rec.packet_id].stage != 2) {
                // A PUBREC for a message already released: answer it again, as MQTT requires.
                if (rec.packet_id != 0 && rec.packet_id <= window_ &&
                    slots_[rec.packet_id].stage == 3) {
                    mqtt::encode(mqtt::pubrel{.packet_id = rec.packet_id}, settings_.version, out_);
                    return;
                }
                fail(mqtt::make_error_code(mqtt::reason_code::protocol_error),
                     "PUBREC for an unknown packet id");
                return;
            }
            slots_[rec.packet_id].stage = 3;
            mqtt::encode(mqtt::pubrel{.packet_id = rec.packet_id}, settings_.version, out_);
            return;
        }
        case mqtt::packet_type::pubrel: {
            const auto id = std::get<mqtt::pubrel>(p).packet_id;
            if (id < incoming_qos2_.size()) {
                incoming_qos2_[id] = false;
            }
            mqtt::encode(mqtt::pubcomp{.packet_id = id}, settings_.version, out_);
            return;
        }
        case mqtt::packet_type::pubcomp: {
            const auto& comp = std::get<mqtt::pubcomp>(p);
            complete(comp.packet_id, 3, !is_failure(comp.reason_code));
            return;
        }
        case mqtt::packet_type::suback:
            events_.on_subscribed(*this, std::get<mqtt::suback>(p));
            return;
        case mqtt::packet_type::pingresp:
            return;
        case mqtt::packet_type::disconnect: {
            const auto code = std::get<mqtt::disconnect>(p).reason_code;
            fail(mqtt::make_error_code(code),
                 std::string("DISCONNECT from the broker: ") + std::string(mqtt::to_string(code)));
            return;
        }
        default:
            fail(mqtt::make_error_code(mqtt::reason_code::protocol_error),
                 std::string("unexpected ") + std::string(mqtt::to_string(mqtt::type_of(p))));
            return;
    }
}

void client::handle_connack(const mqtt::connack& ack) {
    if (state_ != state::connecting) {
        fail(mqtt::make_error_code(mqtt::reason_code::protocol_error), "second CONNACK");
        return;
    }
    if (is_failure(ack.reason_code)) {
        fail(mqtt::make_error_code(ack.reason_code),
             std::string("CONNACK refused: ") + std::string(mqtt::to_string(ack.reason_code)));
        return;
    }
    std::size_t window = settings_.inflight;
    if (ack.properties.receive_maximum) {
        window = std::min<std::size_t>(window, *ack.properties.receive_maximum);
    }
    window_ = std::clamp<std::size_t>(window, 1, max_window);
    slots_.assign(window_ + 1, inflight_slot{});
    free_ids_.clear();
    free_ids_.reserve(window_);
    for (std::size_t id = window_; id >= 1; --id) {
        free_ids_.push_back(static_cast<std::uint16_t>(id));
    }
    state_ = state::connected;
    events_.on_connected(*this, ack);
}

void client::handle_publish(const mqtt::publish& message) {
    switch (message.qos) {
        case mqtt::qos::at_most_once:
            events_.on_message(*this, message);
            return;
        case mqtt::qos::at_least_once:
            events_.on_message(*this, message);
            if (state_ != state::closed) {
                mqtt::encode(mqtt::puback{.packet_id = message.packet_id}, settings_.version, out_);
            }
            return;
        case mqtt::qos::exactly_once:
            if (incoming_qos2_.empty()) {
                incoming_qos2_.assign(65536, false);
            }
            // Delivered once per packet id until its PUBREL (method B of MQTT 4.3.3): a
            // resend with DUP before PUBREL is acknowledged but not delivered again.
            if (!incoming_qos2_[message.packet_id]) {
                incoming_qos2_[message.packet_id] = true;
                events_.on_message(*this, message);
            }
            if (state_ != state::closed) {
                mqtt::encode(mqtt::pubrec{.packet_id = message.packet_id}, settings_.version, out_);
            }
            return;
    }
}

void client::complete(std::uint16_t id, std::uint8_t expected_stage, bool ok) {
    if (id == 0 || id > window_ || slots_[id].stage != expected_stage) {
        fail(mqtt::make_error_code(mqtt::reason_code::protocol_error),
             "acknowledgement for an unknown packet id " + std::to_string(id));
        return;
    }
    const std::uint64_t send_ns = slots_[id].send_ns;
    slots_[id] = inflight_slot{};
    free_ids_.push_back(id);
    events_.on_publish_done(*this, send_ns, ok);
}

void client::subscribe(std::vector<mqtt::subscription> subscriptions) {
    if (state_ != state::connected) {
        return;
    }
    const std::uint16_t id =
        static_cast<std::uint16_t>(first_control_id + next_control_id_++ % 500);
    mqtt::subscribe packet{.packet_id = id, .subscriptions = std::move(subscriptions)};
    mqtt::encode(packet, settings_.version, out_);
    subscribe_sent_ns_ = monotonic_ns();
    last_send_ns_ = subscribe_sent_ns_;
    request_flush();
}

bool client::publish(std::string_view topic, mqtt::qos qos, bool retain, std::string_view payload,
                     std::uint64_t send_ns) {
    if (state_ != state::connected) {
        return false;
    }
    std::uint16_t id = 0;
    if (qos != mqtt::qos::at_most_once) {
        if (free_ids_.empty()) {
            return false;
        }
        id = free_ids_.back();
        free_ids_.pop_back();
        slots_[id] = inflight_slot{
            send_ns, qos == mqtt::qos::at_least_once ? std::uint8_t{1} : std::uint8_t{2}};
    }
    mqtt::publish_header header{.topic = topic, .qos = qos, .retain = retain, .packet_id = id};
    mqtt::encode_publish(out_, settings_.version, header, payload);
    last_send_ns_ = send_ns;
    request_flush();
    return true;
}

void client::ping() {
    if (state_ != state::connected) {
        return;
    }
    mqtt::encode(mqtt::pingreq{}, settings_.version, out_);
    last_send_ns_ = monotonic_ns();
    request_flush();
}

void client::disconnect() {
    if (state_ == state::closed || state_ == state::closing) {
        return;
    }
    if (state_ != state::connected) {
        finish_close({}, "disconnected before CONNACK");
        return;
    }
    mqtt::encode(mqtt::disconnect{}, settings_.version, out_);
    state_ = state::closing;
    close_after_write_ = true;
    request_flush();
}

void client::abort(std::string_view why) {
    fail(std::make_error_code(std::errc::connection_aborted), why);
}

void client::want_writable(std::size_t bytes) { writable_mark_ = bytes; }

void client::request_flush() {
    if (flush_posted_ || write_in_flight_) {
        return;
    }
    flush_posted_ = true;
    asio::post(io_, [this] {
        flush_posted_ = false;
        flush();
    });
}

void client::flush() {
    if (write_in_flight_ || out_.empty() || state_ == state::closed) {
        return;
    }
    std::swap(out_, writing_);
    out_.clear();
    write_in_flight_ = true;
    asio::async_write(socket_, asio::buffer(writing_),
                      [this](const boost::system::error_code& ec, std::size_t) { on_written(ec); });
}

void client::on_written(const boost::system::error_code& ec) {
    write_in_flight_ = false;
    if (state_ == state::closed) {
        return;
    }
    if (ec) {
        fail(ec, "write");
        return;
    }
    writing_.clear();
    if (close_after_write_ && out_.empty()) {
        boost::system::error_code ignored;
        socket_.shutdown(tcp::socket::shutdown_send, ignored);
        finish_close({}, "disconnected");
        return;
    }
    flush();
    if (writable_mark_ != 0 && pending_write_bytes() < writable_mark_) {
        writable_mark_ = 0;
        events_.on_writable(*this);
    }
}

void client::fail(std::error_code ec, std::string_view why) {
    if (state_ == state::closed) {
        return;
    }
    finish_close(ec, why);
}

void client::finish_close(std::error_code ec, std::string_view why) {
    state_ = state::closed;
    boost::system::error_code ignored;
    socket_.close(ignored);
    // Give the memory back now: a run may close thousands of clients and keep going.
    std::string().swap(out_);
    std::string().swap(writing_);
    std::vector<bool>().swap(incoming_qos2_);
    decoder_.shrink();
    events_.on_closed(*this, ec, why);
}

}  // namespace starling::bench
