#include "broker/mqtt_connection.h"

#include "base/log_throttle.h"
#include "broker/broker_core.h"
#include "broker/client_actor.h"
#include "broker/lifecycle_events.h"
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

// "ip:port" or "[v6]:port" → the address alone (blocked clients and the unauthorized log
// match on it).
std::string host_of(std::string_view address) {
    if (address.starts_with('[')) {
        const auto close = address.find(']');
        return std::string(
            address.substr(1, close == std::string_view::npos ? address.npos : close - 1));
    }
    const auto colon = address.rfind(':');
    if (colon != std::string_view::npos && address.find(':') == colon) {
        return std::string(address.substr(0, colon));
    }
    return std::string(address);
}

// What the listener's TLS handshake established, in the form auth providers take (X_509).
// No certificate when the connection is not TLS or the client sent none.
std::optional<auth::peer_certificate> certificate_of(const net::tls_peer_info* peer) {
    if (peer == nullptr || peer->der_chain.empty()) {
        return std::nullopt;
    }
    return auth::peer_certificate{.der_chain = peer->der_chain,
                                  .subject_cn = peer->subject_cn,
                                  .verified_by_listener = peer->verified};
}

}  // namespace

mqtt_connection::mqtt_connection(broker_core& core, std::shared_ptr<net::connection> transport)
    : core_(core),
      transport_(std::move(transport)),
      id_(transport_->id()),
      remote_address_(transport_->remote_address()),
      decoder_(mqtt::decoder_limits{.max_packet_size = core.cfg().max_packet_size,
                                    .max_user_properties = core.cfg().max_user_properties},
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
            if (phase_.load(std::memory_order_acquire) == phase::connecting) {
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
        if (phase_.load(std::memory_order_acquire) == phase::connecting) {
            auto* connect = std::get_if<mqtt::connect>(&packet);
            if (connect == nullptr) {
                // The first packet must be CONNECT (MQTT-3.1.0-1): close without answer.
                spdlog::info("connection {} ({}): first packet is not CONNECT", id_,
                             remote_address_);
                refused_ = true;
                transport_->close();
                return;
            }
            // A complete CONNECT: the listener's connect deadline (measured from accept) is met.
            transport_->connect_completed();
            handle_connect(std::move(*connect));
            if (refused_) {
                return;
            }
            continue;
        }
        const bool is_disconnect = std::holds_alternative<mqtt::disconnect>(packet);
        if (is_delivery_acknowledgement(packet)) {
            forward_acknowledgement(client_msg::packet{id_, std::move(packet)});
            continue;
        }
        if (is_disconnect) {
            // Before the packet is queued, not after: a new connection's CONNECT handled in
            // between must already see that this one's input ended, or it takes the session over
            // instead of waiting behind the DISCONNECT (client_actor::on_connect). Seen early,
            // the flag only makes that CONNECT wait a turn or two for the packet to arrive.
            input_ended_.store(true, std::memory_order_release);
        }
        forward(client_msg::packet{id_, std::move(packet)});
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
    if (const auto* blocked = core_.blocked()) {
        std::optional<std::string_view> username;
        if (c.username) {
            username = *c.username;
        }
        if (auto why =
                blocked->check(c.client_id, username, host_of(remote_address_), core_.now_ms())) {
            refuse_unauthorized(c, mqtt::reason_code::banned, "blocked: " + *why);
            return;
        }
    }
    pending_connect pc{std::move(c), assigned, generated};
    auto* authenticator = core_.authenticator();
    if (authenticator == nullptr) {
        std::lock_guard lock(backlog_mutex_);
        if (!attach_locked(std::move(pc), client_type::device, auth::topic_rules::everything())) {
            refuse_connect(version, mqtt::reason_code::server_busy, "client actor unavailable");
        }
        return;
    }
    auth::auth_request request{.client_id = pc.packet.client_id,
                               .username = pc.packet.username,
                               .password = pc.packet.password,
                               .remote_address = remote_address_,
                               .tls = transport_->tls_peer() != nullptr,
                               .certificate = certificate_of(transport_->tls_peer())};
    {
        // Until the verdict: stop reading, and park whatever else this read decoded.
        std::lock_guard lock(backlog_mutex_);
        phase_.store(phase::authenticating, std::memory_order_release);
        paused_ = true;
        paused_flag_.store(true, std::memory_order_release);
    }
    transport_->pause_reading();
    // The verdict may come at once (cache, anonymous) on this thread, or later on another.
    authenticator->authenticate(
        std::move(request),
        [self = shared_from_this(), pc = std::make_shared<pending_connect>(std::move(pc))](
            auth::auth_decision d) { self->on_authenticated(std::move(*pc), std::move(d)); });
}

void mqtt_connection::on_authenticated(pending_connect&& pc, auth::auth_decision&& d) {
    const auto& r = d.result;
    if (r.outcome == auth::verdict::allow && pc.packet.will && r.rules &&
        !r.rules->may_publish(pc.packet.will->topic)) {
        // A will the client may not publish is refused at CONNECT, where the client can still
        // be told, rather than silently dropped when it fires.
        d.result.outcome = auth::verdict::deny;
        d.result.bad_credentials = false;
        d.result.reason = "will topic '" + pc.packet.will->topic + "' not authorized";
    }
    if (d.result.outcome != auth::verdict::allow) {
        {
            std::lock_guard lock(backlog_mutex_);
            backlog_.clear();
            if (peer_gone_) {
                return;
            }
            phase_.store(phase::refused, std::memory_order_release);
        }
        // Throttled (too many failed attempts from this address) and shed (authentication
        // overloaded) tell the client to come back later; v3 has only 0x03 for both.
        const auto code = d.throttled                ? mqtt::reason_code::connection_rate_exceeded
                          : d.result.shed            ? mqtt::reason_code::server_busy
                          : d.result.bad_credentials ? mqtt::reason_code::bad_user_name_or_password
                                                     : mqtt::reason_code::not_authorized;
        auto reason = d.provider.empty() ? d.result.reason : d.provider + ": " + d.result.reason;
        refuse_unauthorized(pc.packet, code, std::move(reason));
        return;
    }
    const auto version = pc.packet.protocol_version;
    {
        std::lock_guard lock(backlog_mutex_);
        if (peer_gone_) {
            backlog_.clear();  // the client left while we waited: no session starts
            return;
        }
        if (!attach_locked(std::move(pc), d.result.type, std::move(d.result.rules))) {
            backlog_.clear();
            phase_.store(phase::refused, std::memory_order_release);
            refuse_connect(version, mqtt::reason_code::server_busy, "client actor unavailable");
            return;
        }
    }
    resume_reading();  // the backlog first, then the socket
}

bool mqtt_connection::attach_locked(pending_connect&& pc, client_type type,
                                    std::shared_ptr<const auth::topic_rules> rules) {
    auto client_id = pc.packet.client_id;
    auto actor = core_.actor_for(client_id);
    client_msg::connect msg{.channel = shared_from_this(),
                            .packet = std::move(pc.packet),
                            .id_assigned = pc.id_assigned,
                            .id_generated = pc.id_generated,
                            .type = type,
                            .rules = std::move(rules)};
    client_message m = std::move(msg);
    if (!actor->tell_control(std::move(m))) {
        // The actor stopped between lookup and tell (its mailbox is closed): the registry no
        // longer holds it, so the next lookup creates a fresh one.
        actor = core_.actor_for(client_id);
        if (!actor->tell_control(std::move(m))) {
            return false;
        }
    }
    actor_ = std::move(actor);
    phase_.store(phase::attached, std::memory_order_release);
    return true;
}

void mqtt_connection::refuse_unauthorized(const mqtt::connect& c, mqtt::reason_code code,
                                          std::string reason) {
    unauthorized_client entry;
    entry.client_id = c.client_id;
    entry.ip_address = host_of(remote_address_);
    entry.ts_ms = core_.now_ms();
    entry.username = c.username.value_or("");
    entry.password_provided = c.password.has_value();
    entry.tls_used = transport_->tls_peer() != nullptr;
    entry.reason = reason;
    emit_lifecycle_event(core_, integration::lifecycle_event::auth_failed,
                         {.client_id = c.client_id,
                          .address = remote_address_,
                          .protocol_version = mqtt::to_string(c.protocol_version),
                          .reason = reason});
    core_.metadata().record_unauthorized(std::move(entry), [id = c.client_id](status st) {
        if (!st) {
            spdlog::warn("client {}: unauthorized-client log not written: {}", id,
                         st.error().message());
        }
    });
    refuse_connect(c.protocol_version, code, reason, c.client_id);
}

void mqtt_connection::refuse_connect(mqtt::protocol_version version, mqtt::reason_code code,
                                     std::string_view why, std::string_view client_id) {
    refused_ = true;
    // Refusals come before authentication: a flood of them is logged 20 lines a second at
    // most (each let-through line counts those held back), with the client id clipped.
    static base::log_throttle refused_lines(20);
    std::size_t held_back = 0;
    if (refused_lines.admit(std::chrono::steady_clock::now(), held_back)) {
        const std::string more = held_back == 0
                                     ? std::string()
                                     : fmt::format(" [{} more refusals not logged]", held_back);
        if (client_id.empty()) {
            spdlog::info("client refused: address={} reason={} ({}){}", remote_address_,
                         mqtt::to_string(code), why, more);
        } else {
            spdlog::info("client refused: id={} address={} reason={} ({}){}",
                         base::clipped_for_log(client_id), remote_address_, mqtt::to_string(code),
                         why, more);
        }
    }
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

bool mqtt_connection::tell_actor_locked(client_message& m) {
    // The mailbox bounds messages by count; the bytes of the packets in it are bounded too
    // (settings::mailbox_bytes), or 10,000 packets of 64 KiB would be 640 MB for one client.
    // One packet always goes, however large, so a client is never stuck behind its own.
    std::int64_t cost = 0;
    if (const auto* packet = std::get_if<client_msg::packet>(&m)) {
        cost = client_actor::inbound_cost(packet->packet);
        const auto queued = actor_->inbound_bytes();
        if (queued > 0 && static_cast<std::uint64_t>(queued + cost) > core_.cfg().mailbox_bytes) {
            return false;
        }
        actor_->add_inbound_bytes(cost);
    }
    if (actor_->tell(std::move(m))) {
        return true;
    }
    actor_->add_inbound_bytes(-cost);  // refused: not queued (and not moved from)
    return false;
}

bool mqtt_connection::is_delivery_acknowledgement(const mqtt::packet& p) {
    return std::holds_alternative<mqtt::puback>(p) || std::holds_alternative<mqtt::pubrec>(p) ||
           std::holds_alternative<mqtt::pubcomp>(p);
}

void mqtt_connection::forward_acknowledgement(client_message&& m) {
    // The client's PUBACK / PUBREC / PUBCOMP free its in-flight window. Behind thousands of
    // deliveries in the normal lane they would come too late: the window stays full, copies pile
    // up in the actor's queue and are trimmed although the client answered at once. On the
    // control lane they overtake the deliveries — and the packets this client sent before them,
    // which is harmless: an acknowledgement of a message the server sent depends on no packet
    // of the client's. Their bytes count against settings::mailbox_bytes like any packet's; over
    // it, or once the actor stopped, they take the normal path (and its backpressure).
    std::lock_guard lock(backlog_mutex_);
    if (!paused_ && actor_) {
        const auto cost = client_actor::inbound_cost(std::get<client_msg::packet>(m).packet);
        const auto queued = actor_->inbound_bytes();
        if (queued + cost <= static_cast<std::int64_t>(core_.cfg().mailbox_bytes)) {
            actor_->add_inbound_bytes(cost);
            if (actor_->tell_control(std::move(m))) {
                return;
            }
            actor_->add_inbound_bytes(-cost);
        }
    }
    forward_locked(std::move(m));
}

void mqtt_connection::forward(client_message&& m) {
    std::lock_guard lock(backlog_mutex_);
    forward_locked(std::move(m));
}

void mqtt_connection::forward_locked(client_message&& m) {
    // Packets and the end of the connection travel on the actor's normal lane, in order: a
    // close must never overtake the DISCONNECT (or PUBLISH) that preceded it.
    if (paused_) {
        backlog_.push_back(std::move(m));
        return;
    }
    if (tell_actor_locked(m)) {
        return;
    }
    // Mailbox full (by count or bytes): keep the message, stop reading until the actor
    // drained. The actor calls resume_reading() once its mailbox is below half of both.
    backlog_.push_back(std::move(m));
    paused_ = true;
    paused_flag_.store(true, std::memory_order_release);
    transport_->pause_reading();
}

void mqtt_connection::resume_reading() {
    std::unique_lock lock(backlog_mutex_);
    while (!backlog_.empty()) {
        if (!tell_actor_locked(backlog_.front())) {
            return;  // still full: the actor calls again after its next message
        }
        backlog_.pop_front();
    }
    if (paused_) {
        paused_ = false;
        paused_flag_.store(false, std::memory_order_release);
        if (!held_) {
            transport_->resume_reading();
        }
    }
}

void mqtt_connection::hold_reading(bool held) {
    std::lock_guard lock(backlog_mutex_);
    if (held_ == held) {
        return;
    }
    held_ = held;
    if (held) {
        transport_->pause_reading();
    } else if (!paused_) {
        transport_->resume_reading();
    }
}

std::shared_ptr<client_actor> mqtt_connection::current_actor() {
    std::lock_guard lock(backlog_mutex_);
    return actor_;
}

void mqtt_connection::on_closed(std::error_code ec) {
    {
        std::lock_guard lock(backlog_mutex_);
        if (phase_.load(std::memory_order_relaxed) == phase::authenticating) {
            peer_gone_ = true;  // on_authenticated will not start a session
            return;
        }
    }
    if (current_actor()) {
        input_ended_.store(true, std::memory_order_release);  // before, as for a DISCONNECT
        forward(client_msg::closed{.channel_id = id_,
                                   .reason = ec ? ec.message() : "connection closed by peer",
                                   .protocol_error = std::nullopt});
    }
}

void mqtt_connection::on_writability_changed(bool writable) {
    if (auto actor = current_actor()) {
        actor->tell_control(client_msg::writability{id_, writable});
    }
}

void mqtt_connection::send(std::string bytes) { transport_->send(std::move(bytes)); }

void mqtt_connection::close() { transport_->close(); }

bool mqtt_connection::writable() const { return transport_->is_writable(); }

}  // namespace starling::broker
