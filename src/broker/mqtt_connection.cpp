#include "broker/mqtt_connection.h"

#include "broker/broker_core.h"
#include "broker/client_actor.h"
#include "mqtt/encoder.h"
#include "mqtt/utf8.h"

#include <spdlog/spdlog.h>

#include <random>

namespace starling::broker {

namespace {

std::string generate_client_id() {
    thread_local std::mt19937_64 rng{std::random_device{}()};
    static constexpr char hex[] = "0123456789abcdef";
    std::string id = "starling-";
    std::uint64_t a = rng();
    std::uint64_t b = rng();
    for (int i = 0; i < 16; ++i) {
        id.push_back(hex[(a >> (i * 4)) & 0xF]);
    }
    for (int i = 0; i < 8; ++i) {
        id.push_back(hex[(b >> (i * 4)) & 0xF]);
    }
    return id;
}

}  // namespace

mqtt_connection::mqtt_connection(broker_core& core, std::shared_ptr<net::connection> transport)
    : core_(core),
      transport_(std::move(transport)),
      id_(transport_->id()),
      remote_address_(transport_->remote_address()),
      decoder_(mqtt::decoder_limits{.max_packet_size = core.cfg().max_packet_size},
               mqtt::decoder_role::server) {}

void mqtt_connection::on_bytes(std::span<const std::uint8_t> bytes) {
    if (refused_) {
        return;
    }
    decoder_.feed(bytes);
    for (;;) {
        auto r = decoder_.next();
        if (std::holds_alternative<mqtt::need_more>(r)) {
            break;
        }
        if (auto* err = std::get_if<mqtt::decode_error>(&r)) {
            spdlog::info("connection {} ({}): malformed input: {} ({})", id_, remote_address_,
                         err->detail, mqtt::to_string(err->code));
            if (!actor_) {
                if (auto version = decoder_.version()) {
                    refuse_connect(*version, err->code, err->detail);  // a broken CONNECT
                } else {
                    // Not even a CONNECT: close without an answer (MQTT-3.1.0-1, 4.8.0-1).
                    refused_ = true;
                    transport_->close();
                }
            } else {
                forward(client_msg::closed{
                    .channel_id = id_, .reason = err->detail, .protocol_error = err->code});
            }
            return;
        }
        auto& packet = std::get<mqtt::packet>(r);
        if (!actor_) {
            auto* connect = std::get_if<mqtt::connect>(&packet);
            if (connect == nullptr) {
                // The first packet must be CONNECT (MQTT-3.1.0-1): close without answer.
                spdlog::info("connection {} ({}): first packet is not CONNECT", id_,
                             remote_address_);
                refused_ = true;
                transport_->close();
                return;
            }
            handle_connect(std::move(*connect));
            if (refused_) {
                return;
            }
            continue;
        }
        const bool is_disconnect = std::holds_alternative<mqtt::disconnect>(packet);
        forward(client_msg::packet{id_, std::move(packet)});
        if (is_disconnect) {
            input_ended_.store(true, std::memory_order_release);
        }
    }
    decoder_.shrink();
}

void mqtt_connection::handle_connect(mqtt::connect&& c) {
    const auto version = c.protocol_version;
    if (core_.stopping()) {
        refuse_connect(version, mqtt::reason_code::server_unavailable, "server shutting down");
        return;
    }
    bool assigned = false;
    bool generated = false;
    if (c.client_id.empty()) {
        if (version == mqtt::protocol_version::v3_1) {
            refuse_connect(version, mqtt::reason_code::client_identifier_not_valid,
                           "empty client id at MQTT 3.1");
            return;
        }
        if (version == mqtt::protocol_version::v3_1_1 && !c.clean_start) {
            // MQTT-3.1.3-8: a zero-length id requires CleanSession=1.
            refuse_connect(version, mqtt::reason_code::client_identifier_not_valid,
                           "empty client id with clean session 0");
            return;
        }
        c.client_id = generate_client_id();
        generated = true;
        assigned = version == mqtt::protocol_version::v5;
    } else if (version == mqtt::protocol_version::v3_1 &&
               c.client_id.size() > core_.cfg().max_client_id_length_v31) {
        refuse_connect(version, mqtt::reason_code::client_identifier_not_valid,
                       "client id too long for MQTT 3.1");
        return;
    }
    if (version == mqtt::protocol_version::v5) {
        // The client's own maximum packet size bounds what we send; ours is in CONNACK.
        decoder_.set_max_packet_size(core_.cfg().max_packet_size);
    }
    auto client_id = c.client_id;
    actor_ = core_.actor_for(client_id);
    client_msg::connect msg{.channel = shared_from_this(),
                            .packet = std::move(c),
                            .id_assigned = assigned,
                            .id_generated = generated};
    client_message m = std::move(msg);
    if (actor_->tell_control(std::move(m))) {
        return;
    }
    // The actor stopped between lookup and tell (its mailbox is closed): the registry no
    // longer holds it, so the next lookup creates a fresh one.
    actor_ = core_.actor_for(client_id);
    if (!actor_->tell_control(std::move(m))) {
        actor_.reset();
        refuse_connect(version, mqtt::reason_code::server_busy, "client actor unavailable");
    }
}

void mqtt_connection::refuse_connect(mqtt::protocol_version version, mqtt::reason_code code,
                                     std::string_view why) {
    refused_ = true;
    spdlog::info("client refused: address={} reason={} ({})", remote_address_,
                 mqtt::to_string(code), why);
    std::string out;
    mqtt::connack ack;
    ack.reason_code = code;
    if (version != mqtt::protocol_version::v5) {
        // v3 CONNACK carries a return code; only CONNECT problems have one. Anything else
        // (malformed packet) just closes the connection.
        auto rc = mqtt::to_connect_return_code(code);
        if (rc == mqtt::connect_return_code::accepted) {
            transport_->close();
            return;
        }
    }
    mqtt::encode(ack, version, out);
    transport_->send(std::move(out));
    transport_->close();
}

void mqtt_connection::forward(client_message&& m) {
    // Packets and the end of the connection travel on the actor's normal lane, in order: a
    // close must never overtake the DISCONNECT (or PUBLISH) that preceded it.
    std::lock_guard lock(backlog_mutex_);
    if (paused_) {
        backlog_.push_back(std::move(m));
        return;
    }
    if (actor_->tell(std::move(m))) {
        return;
    }
    // Mailbox full (a refused message is not moved from): keep it, stop reading until the
    // actor drained. The actor calls resume_reading() once its mailbox is below half.
    backlog_.push_back(std::move(m));
    paused_ = true;
    paused_flag_.store(true, std::memory_order_release);
    transport_->pause_reading();
}

void mqtt_connection::resume_reading() {
    std::unique_lock lock(backlog_mutex_);
    while (!backlog_.empty()) {
        if (!actor_->tell(std::move(backlog_.front()))) {
            return;  // still full: the actor calls again after its next message
        }
        backlog_.pop_front();
    }
    if (paused_) {
        paused_ = false;
        paused_flag_.store(false, std::memory_order_release);
        transport_->resume_reading();
    }
}

void mqtt_connection::on_closed(std::error_code ec) {
    if (actor_) {
        forward(client_msg::closed{.channel_id = id_,
                                   .reason = ec ? ec.message() : "connection closed by peer",
                                   .protocol_error = std::nullopt});
        input_ended_.store(true, std::memory_order_release);
    }
}

void mqtt_connection::on_writability_changed(bool writable) {
    if (actor_) {
        actor_->tell_control(client_msg::writability{id_, writable});
    }
}

void mqtt_connection::send(std::string bytes) { transport_->send(std::move(bytes)); }

void mqtt_connection::close() { transport_->close(); }

bool mqtt_connection::writable() const { return transport_->is_writable(); }

}  // namespace starling::broker
