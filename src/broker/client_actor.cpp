#include "broker/client_actor.h"

#include "broker/application_delivery.h"
#include "broker/broker_core.h"
#include "broker/group_inbox.h"
#include "broker/lifecycle_events.h"
#include "broker/retained_echoes.h"
#include "broker/session_coordinator.h"
#include "mqtt/encoder.h"
#include "mqtt/keep_alive.h"
#include "mqtt/topic.h"
#include "mqtt/topic_alias.h"
#include "ratelimit/bandwidth_spec.h"

#include "proto/starling.pb.h"
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <random>

namespace starling::broker {

namespace {

constexpr std::uint32_t session_never_expires = 0xFFFFFFFF;
constexpr std::size_t pre_connack_limit = 1000;

// Whether a SUBSCRIBE sends the filter's retained messages (MQTT 5 Retain Handling; 3.1.1
// always sends them).
bool wants_retained(const stored_subscription& sub, bool existed) {
    const auto rh = sub.options.retain_handling;
    return rh == mqtt::retain_handling::send_on_subscribe ||
           (rh == mqtt::retain_handling::send_if_new_subscription && !existed);
}

// The clientDisconnects_total reason of a server-side DISCONNECT (or refusing CONNACK) code.
metrics::disconnect_reason disconnect_reason_of(mqtt::reason_code code) {
    using metrics::disconnect_reason;
    using mqtt::reason_code;
    switch (code) {
        case reason_code::keep_alive_timeout:
            return disconnect_reason::keep_alive_timeout;
        case reason_code::session_taken_over:
            return disconnect_reason::taken_over;
        case reason_code::server_shutting_down:
            return disconnect_reason::server_shutdown;
        case reason_code::administrative_action:
            return disconnect_reason::admin;
        case reason_code::malformed_packet:
        case reason_code::protocol_error:
        case reason_code::topic_name_invalid:
        case reason_code::topic_filter_invalid:
        case reason_code::topic_alias_invalid:
        case reason_code::packet_identifier_in_use:
        case reason_code::receive_maximum_exceeded:
        case reason_code::payload_format_invalid:
            return disconnect_reason::protocol_error;
        default:
            return disconnect_reason::policy;
    }
}

std::string_view version_name(mqtt::protocol_version v) {
    switch (v) {
        case mqtt::protocol_version::v3_1:
            return "3.1";
        case mqtt::protocol_version::v3_1_1:
            return "3.1.1";
        case mqtt::protocol_version::v5:
            return "5.0";
    }
    return "?";
}

using mqtt::topic_levels;

}  // namespace

// What exists only while a network connection is attached.
struct client_actor::connection_state {
    std::shared_ptr<client_channel> channel;
    std::uint64_t id = 0;
    mqtt::protocol_version version = mqtt::protocol_version::v5;
    bool connack_sent = false;
    std::uint16_t requested_keep_alive = 0;  // as CONNECT asked; negotiated at the CONNACK
    std::uint32_t requested_expiry = 0;      // as CONNECT asked (3.1.1 clean session 0: 0xFFFFFFFF)
    bool clean_start = true;
    // None until the CONNACK, when its timer is first armed; before that, the listener's connect
    // deadline bounds the wait for CONNECT, and the provider and cluster-request timeouts the
    // steps between CONNECT and CONNACK.
    mqtt::keep_alive_deadline keep_alive;
    actor::timer_handle keep_alive_timer;
    std::uint16_t client_receive_max = 65535;
    std::uint32_t client_max_packet = 0;  // 0: no limit
    // Topic aliases, created on first use: most clients use none. Client → server: one pointer
    // until the client's first alias.
    mqtt::inbound_topic_aliases inbound_aliases;
    // Server → client, up to the client's maximum; null when the client allows none (boxed:
    // the table is about 100 bytes inline).
    std::unique_ptr<mqtt::outbound_topic_aliases> outbound_aliases;
    // Boxed: a will_message is over 500 bytes and most connections have none.
    std::unique_ptr<mqtt::will_message> will;
    // While a SUBSCRIBE's retained messages may meet their own live copies (retained_echoes.h);
    // null the rest of the time.
    std::unique_ptr<retained_echoes> echoes;
    bool will_suppressed = false;  // DISCONNECT 0x00 received
    client_type type = client_type::device;
    std::shared_ptr<const auth::topic_rules> rules;  // null = everything allowed
    bool wants_response_information = false;
    bool closing = false;
    std::string encode_buffer;
    // Cluster: the request this connection waits on, and a disconnect for it that overtook the
    // reply (replies and disconnects travel on different topics, so their order is not kept).
    std::string request_id;
    bool moved_before_reply = false;
    std::string moved_to_node;
    bool moved_clean_start = false;

    bool v5() const { return version == mqtt::protocol_version::v5; }
};

client_actor::client_actor(broker_core& core, std::string client_id)
    : core_(core), client_id_(std::move(client_id)) {}

std::shared_ptr<client_actor> client_actor::create(broker_core& core, std::string client_id) {
    auto actor = std::make_shared<client_actor>(core, std::move(client_id));
    // The handler holds the actor only weakly (the actor owns its mailbox) and pins it for the
    // duration of each message: whoever drops the last reference while a turn is running (a
    // router thread after a tell, say) cannot free the actor under the handler's feet.
    std::weak_ptr<client_actor> weak = actor;
    actor->mailbox_ = actor::mailbox<client_message>::create(
        core.dispatcher(),
        [weak](client_message&& m) {
            if (auto self = weak.lock()) {
                self->handle(std::move(m));
            }
        },
        actor::mailbox_options{.capacity = core.cfg().mailbox_capacity,
                               .throughput = static_cast<std::uint32_t>(core.cfg().throughput)});
    return actor;
}

client_actor::~client_actor() = default;

bool client_actor::tell(client_message&& m) { return mailbox_->tell(std::move(m)); }

bool client_actor::tell_control(client_message&& m) { return mailbox_->tell_control(std::move(m)); }

std::size_t client_actor::mailbox_depth() const { return mailbox_->depth(); }

void client_actor::post(std::function<void(client_actor&)> fn) {
    // The mailbox handler captures `this`; keep the actor alive until the call ran.
    auto self = shared_from_this();
    mailbox_->tell_control(
        client_msg::call{[self, fn = std::move(fn)](client_actor& a) mutable { fn(a); }});
}

void client_actor::handle(client_message&& m) {
    std::visit(
        [this](auto&& msg) {
            using T = std::decay_t<decltype(msg)>;
            if constexpr (std::is_same_v<T, client_msg::connect>) {
                on_connect(std::move(msg));
            } else if constexpr (std::is_same_v<T, client_msg::packet>) {
                inbound_bytes_.fetch_sub(inbound_cost(msg.packet), std::memory_order_relaxed);
                if (conn_ && conn_->id == msg.channel_id && !conn_->closing) {
                    conn_->keep_alive.on_packet(core_.clock().steady_now());
                    if (!conn_->connack_sent || inbound_qos2_loading_) {
                        if (pre_connack_.size() >= pre_connack_limit) {
                            disconnect_with(mqtt::reason_code::receive_maximum_exceeded,
                                            "too many packets before CONNACK");
                            return;
                        }
                        pre_connack_.push_back(std::move(msg.packet));
                        return;
                    }
                    on_packet(std::move(msg.packet));
                }
            } else if constexpr (std::is_same_v<T, client_msg::closed>) {
                on_closed(std::move(msg));
            } else if constexpr (std::is_same_v<T, client_msg::writability>) {
                on_writability(msg);
            } else if constexpr (std::is_same_v<T, client_msg::deliver>) {
                on_deliver(std::move(msg.delivery));
            } else if constexpr (std::is_same_v<T, client_msg::inbox_signal>) {
                inbox_dirty_ = true;
                pump_inbox();
            } else if constexpr (std::is_same_v<T, client_msg::shutdown>) {
                on_shutdown(std::move(msg));
            } else if constexpr (std::is_same_v<T, client_msg::call>) {
                msg.fn(*this);
            }
        },
        std::move(m));
    subscription_count_.store(static_cast<std::uint32_t>(subscriptions_.size()),
                              std::memory_order_relaxed);
    // TCP backpressure: the connection stopped reading when the mailbox was full (by count or
    // by bytes); let it read again once both drained below half.
    if (conn_ && conn_->channel->reading_paused() && mailbox_->depth() < mailbox_->capacity() / 2 &&
        inbound_bytes() < static_cast<std::int64_t>(core_.cfg().mailbox_bytes / 2)) {
        conn_->channel->resume_reading();
    }
}

std::int64_t client_actor::inbound_cost(const mqtt::packet& p) {
    constexpr std::int64_t overhead = 64;  // the packet's own structure, roughly
    if (const auto* publish = std::get_if<mqtt::publish>(&p)) {
        return overhead +
               static_cast<std::int64_t>(publish->topic.size() + publish->payload.size());
    }
    return overhead;
}

// ---------------------------------------------------------------------------------------------
// CONNECT

void client_actor::on_connect(client_msg::connect&& m) {
    if (stopped_) {
        // This actor ended its session after the connection looked it up: hand the CONNECT to
        // the actor that now owns the client id.
        auto next = core_.actor_for(client_id_);
        if (next.get() != this) {
            next->tell_control(std::move(m));
        } else {
            m.channel->close();
        }
        return;
    }
    // A CONNECT travels on the control lane, the previous connection's packets on the normal
    // one. When that connection already ended its input (a DISCONNECT, possibly changing the
    // session expiry, or EOF) those last packets must be handled first, as the client sent
    // them first: queue the CONNECT behind them. Bounded, in case the old connection's
    // packets wait in its backlog rather than in the mailbox.
    constexpr std::uint16_t max_connect_deferrals = 64;
    if (conn_ && conn_->channel->input_ended() && m.deferrals < max_connect_deferrals) {
        ++m.deferrals;
        client_message deferred = std::move(m);
        if (mailbox_->tell(std::move(deferred))) {
            return;
        }
        m = std::move(std::get<client_msg::connect>(deferred));  // mailbox full: take over now
    }
    const mqtt::connect& p = m.packet;
    const bool v5 = p.protocol_version == mqtt::protocol_version::v5;

    // A will the server cannot honour refuses the CONNECT (MQTT 5.0 section 3.2.2.3.4: 0x9B,
    // 0x9A), before anything changes for a connection this one would replace.
    if (auto refusal = will_refusal(p)) {
        spdlog::info("client refused: id={} address={} version={} reason={} ({})", client_id_,
                     m.channel->remote_address(), version_name(p.protocol_version),
                     mqtt::to_string(refusal->first), refusal->second);
        mqtt::connack ack;
        ack.reason_code = refusal->first;
        if (v5) {
            ack.properties.reason_string = std::string(refusal->second);
        }
        std::string out;
        mqtt::encode(ack, p.protocol_version, out);
        m.channel->send(std::move(out));
        m.channel->close();
        if (!conn_ && !session_exists_) {
            stop_actor();
        }
        return;
    }

    // Takeover: the old connection gets DISCONNECT 0x8E and its will is published unless the
    // session continues and a will delay applies (the new connection cancels it).
    if (conn_) {
        auto old = std::move(conn_);
        conn_ = nullptr;
        if (old->v5() && old->connack_sent) {
            old->encode_buffer.clear();
            mqtt::disconnect d;
            d.reason_code = mqtt::reason_code::session_taken_over;
            d.properties.reason_string = "another connection took over the session";
            mqtt::encode(d, old->version, old->encode_buffer);
            old->channel->send(std::move(old->encode_buffer));
        }
        old->channel->close();
        core_.timers().cancel(old->keep_alive_timer);
        if (old->will && !old->will_suppressed) {
            std::uint32_t delay = old->will->properties.will_delay_interval.value_or(0);
            if (p.clean_start || delay == 0) {
                publish_will(*old->will);
            }
        }
        if (old->connack_sent) {
            core_.probe().client_disconnected();
            core_.probe().disconnect_counted(metrics::disconnect_reason::taken_over);
        }
        spdlog::info("client disconnected: id={} address={} version={} reason=session taken over",
                     client_id_, old->channel->remote_address(), version_name(old->version));
        emit_event(integration::lifecycle_event::disconnected, "session taken over", {}, old.get());
        connected_.store(false, std::memory_order_release);
    }
    // A reconnect within the will delay cancels the pending will.
    if (will_timer_) {
        core_.timers().cancel(will_timer_);
        will_timer_ = {};
        pending_will_.reset();
    }
    if (expiry_timer_) {
        core_.timers().cancel(expiry_timer_);
        expiry_timer_ = {};
    }
    ++expiry_generation_;
    ++retire_generation_;
    core_.timers().cancel(retire_timer_);
    retire_timer_ = {};
    generated_id_ = m.id_generated;

    auto c = std::make_unique<connection_state>();
    c->channel = std::move(m.channel);
    c->id = c->channel->id();
    c->version = p.protocol_version;
    c->requested_keep_alive = p.keep_alive;
    c->clean_start = p.clean_start;
    c->will = p.will ? std::make_unique<mqtt::will_message>(*p.will) : nullptr;
    c->type = m.type;
    if (auto prev = core_.sessions().find_session(client_id_); prev && prev->persistent) {
        app_previous_type_ = prev->type;
    } else {
        app_previous_type_ = type_;
    }
    type_ = m.type;
    c->rules = std::move(m.rules);
    if (v5) {
        c->client_receive_max = p.properties.receive_maximum.value_or(65535);
        c->client_max_packet = p.properties.maximum_packet_size.value_or(0);
        if (const auto maximum = p.properties.topic_alias_maximum.value_or(0); maximum > 0) {
            c->outbound_aliases = std::make_unique<mqtt::outbound_topic_aliases>(maximum);
        }
        c->wants_response_information = p.properties.request_response_information.value_or(0) == 1;
    }
    conn_ = std::move(c);
    if (!writable_.exchange(true, std::memory_order_acq_rel)) {
        core_.probe().non_writable_clients(-1);  // the replaced connection was congested
    }
    // What the replaced connection left unanswered goes with it: its QoS 1/2 PUBLISHes were
    // not acknowledged, so the client sends them again on this one.
    pre_connack_.clear();
    inbound_.connection_ended();
    drop_gated_answers();
    drop_held();
    inbound_qos2_loading_ = false;

    // Enhanced authentication is not configured: a CONNECT asking for it is refused.
    if (v5 && p.properties.authentication_method) {
        mqtt::connack ack;
        ack.reason_code = mqtt::reason_code::bad_authentication_method;
        send_packet(ack);
        spdlog::info("client refused: id={} address={} version={} reason=bad authentication method",
                     client_id_, conn_->channel->remote_address(), version_name(conn_->version));
        conn_->channel->close();
        conn_.reset();
        if (!session_exists_) {
            stop_actor();
        }
        return;
    }

    // Session expiry: the v5 interval, or for a 3.1.1 persistent session (clean session 0,
    // which has no interval of its own) "as long as allowed"; the configured maximum caps both,
    // 0xFFFFFFFF included (docs/configuration.md, mqtt.client-session-expiry).
    std::uint32_t requested = 0;
    if (v5) {
        requested = p.properties.session_expiry_interval.value_or(0);
    } else {
        requested = p.clean_start ? 0 : session_never_expires;
    }
    conn_->requested_expiry = requested;
    const std::uint32_t expiry = std::min(requested, core_.cfg().max_session_expiry);
    if (limits_need_admission()) {
        // A new session under mqtt.sessions-limit / application-clients-limit: continues in
        // connect_session once the shared counters answered (session_limits.cpp).
        limits_admit(std::move(m.packet), expiry, m.id_assigned);
        return;
    }
    connect_session(p, expiry, m.id_assigned);
}

void client_actor::connect_session(const mqtt::connect& p, std::uint32_t expiry, bool id_assigned) {
    if (core_.coordinator() != nullptr) {  // cluster mode
        // Cluster: whether a session exists, and where, is the session-event handler's call.
        request_cluster_connect(p, expiry, id_assigned);
        return;
    }
    const bool resumed = !p.clean_start && session_exists_ && persistent_;
    begin_session(resumed, expiry != 0 || !p.clean_start, expiry);
    if (resumed) {
        authorize_inherited_subscriptions();
    }

    const std::uint64_t channel_id = conn_->id;
    write_session_record(
        true, bind_status([channel_id, resumed, id_assigned](client_actor& a, status st) {
            if (!a.conn_ || a.conn_->id != channel_id) {
                return;
            }
            if (!st) {
                spdlog::warn("client {}: session record not written ({}); refusing CONNECT",
                             a.client_id_, st.error().message());
                mqtt::connack ack;
                ack.reason_code = mqtt::reason_code::server_unavailable;
                a.send_packet(ack);
                a.conn_->channel->close();
                a.conn_.reset();
                return;
            }
            a.complete_connect(channel_id, resumed, id_assigned);
        }));
}

std::optional<std::pair<mqtt::reason_code, std::string_view>> client_actor::will_refusal(
    const mqtt::connect& p) const {
    if (!p.will) {
        return std::nullopt;
    }
    const auto& cfg = core_.cfg();
    if (static_cast<std::uint8_t>(p.will->qos) > cfg.max_qos) {
        return std::pair{mqtt::reason_code::qos_not_supported, "will QoS above the maximum"};
    }
    if (p.will->retain && !cfg.retain_available) {
        return std::pair{mqtt::reason_code::retain_not_supported, "retained will not available"};
    }
    if (cfg.max_topic_segments != 0 && topic_levels(p.will->topic) > cfg.max_topic_segments) {
        return std::pair{mqtt::reason_code::topic_name_invalid,
                         "will topic has more levels than allowed"};
    }
    return std::nullopt;
}

std::uint64_t client_actor::pending_connect_channel() const {
    return conn_ && !conn_->closing && !conn_->connack_sent ? conn_->id : 0;
}

void client_actor::refuse_connect(mqtt::reason_code code, std::string_view why) {
    spdlog::info("client refused: id={} address={} version={} reason={}", client_id_,
                 conn_->channel->remote_address(), version_name(conn_->version), why);
    mqtt::connack ack;
    ack.reason_code = code;
    if (conn_->v5()) {
        ack.properties.reason_string = std::string(why);
    }
    send_packet(ack);
    conn_->channel->close();
    conn_.reset();
    if (!session_exists_) {
        stop_actor();
    }
}

void client_actor::begin_session(bool resumed, bool persistent, std::uint32_t expiry) {
    if (!resumed) {
        clear_session_state();
    } else {
        // Messages sent on the previous connection and still unacknowledged go again with DUP.
        for (const auto& [id, slot] : inflight_) {
            if (slot.entry.from_inbox) {
                sent_before_.insert(id);
            }
        }
        drop_prefetched();  // still in the inbox: this connection reads them again
        inflight_.clear();
        queued_.clear();
    }
    persistent_ = persistent;
    session_expiry_ = expiry;
    session_exists_ = true;
    limits_on_session_begun();
}

void client_actor::request_cluster_connect(const mqtt::connect& p, std::uint32_t expiry,
                                           bool id_assigned) {
    auto* coordinator = core_.coordinator();
    std::string request_id = coordinator->new_request_id();
    const std::uint64_t channel_id = conn_->id;
    conn_->request_id = request_id;
    connect_request req{.client_id = client_id_,
                        .request_id = request_id,
                        .clean_start = p.clean_start,
                        .session_expiry_interval = expiry,
                        .persistent = expiry != 0 || !p.clean_start,
                        .protocol_version = static_cast<std::uint32_t>(p.protocol_version),
                        .type = type_,
                        .client_address = conn_->channel->remote_address()};
    coordinator->request_connect(req, [self = shared_from_this(), channel_id, request_id, expiry,
                                       id_assigned](result<connect_grant> r) {
        self->post([channel_id, request_id, expiry, id_assigned,
                    r = std::move(r)](client_actor& a) mutable {
            a.on_cluster_connect_reply(channel_id, request_id, expiry, id_assigned, std::move(r));
        });
    });
}

void client_actor::on_cluster_connect_reply(std::uint64_t channel_id, const std::string& request_id,
                                            std::uint32_t expiry, bool id_assigned,
                                            result<connect_grant> r) {
    auto* coordinator = core_.coordinator();
    if (!conn_ || conn_->id != channel_id || conn_->closing) {
        // The connection ended or was replaced before the reply. A session granted to it must
        // not stay "connected" in client.session (the handler ignores this if a newer
        // connection replaced it meanwhile).
        if (r && coordinator != nullptr) {
            if (expiry != 0) {
                coordinator->notify_disconnected(client_id_, request_id, expiry);
            } else {
                coordinator->notify_session_ended(client_id_, request_id);
            }
        }
        return;
    }
    if (!r) {
        spdlog::warn(
            "client refused: id={} address={} version={} reason=session coordination "
            "failed ({})",
            client_id_, conn_->channel->remote_address(), version_name(conn_->version),
            r.error().message());
        mqtt::connack ack;
        ack.reason_code = mqtt::reason_code::server_unavailable;  // v3: return code 3
        send_packet(ack);
        conn_->channel->close();
        conn_.reset();
        if (!session_exists_) {
            stop_actor();
        }
        return;
    }
    const connect_grant& grant = r.value();
    const bool previous_here = !session_id_.empty() && session_id_ == grant.previous_session_id;
    if (!previous_here && !grant.previous_session_id.empty()) {
        // The session continues from (or replaces) one this actor does not hold: whatever it
        // still has is older than the handler's view.
        drop_local_session();
        if (grant.session_present) {
            // The node the session comes from wrote its last subscription set before it
            // acknowledged it; this node's mirror may not have applied it yet. Adopt once the
            // follower caught up (CONNACK does not wait: the client is told its session exists,
            // and the subscriptions follow within the follower's lag).
            adopting_subscriptions_ = true;
            core_.after_subscriptions_caught_up(client_id_, [self = shared_from_this()] {
                self->post([](client_actor& a) {
                    a.adopt_subscriptions();
                    a.adopting_subscriptions_ = false;
                    if (a.conn_) {
                        a.release_held();
                    }
                });
            });
            session_exists_ = true;
            persistent_ = true;
        } else {
            // A clean start replaces a session held elsewhere: its queued messages and
            // subscriptions end with it.
            core_.clear_subscriptions(client_id_);
            core_.inbox().clear(client_id_, [](status) {});
            core_.metadata().delete_session_context(client_id_, [](status) {});
        }
    }
    begin_session(grant.session_present, expiry != 0 || !conn_->clean_start, expiry);
    if (grant.session_present && previous_here) {
        authorize_inherited_subscriptions();
    }
    if (grant.session_present && !previous_here) {
        // The node the session comes from may have sent some of its pending messages (it was
        // connected there, killed mid-delivery, or ended with some unacknowledged): each goes
        // with DUP until the inbox was covered once. A session that left cleanly, everything
        // acknowledged, has nothing to redeliver: its messages are first deliveries.
        redeliver_all_as_dup_ = grant.previous_may_have_sent;
    }
    session_id_ = request_id;
    const bool moved = conn_->moved_before_reply;
    const std::string moved_to = conn_->moved_to_node;
    const bool moved_clean_start = conn_->moved_clean_start;
    complete_connect(channel_id, grant.session_present, id_assigned);
    if (moved) {
        // A newer connection elsewhere already replaced this one: it ends as if the
        // disconnect had come after the reply.
        on_session_moved(request_id, moved_to, moved_clean_start);
    }
}

void client_actor::session_moved(std::string session_id, std::string new_node_id,
                                 bool new_clean_start) {
    post([session_id = std::move(session_id), new_node_id = std::move(new_node_id),
          new_clean_start](client_actor& a) {
        a.on_session_moved(session_id, new_node_id, new_clean_start);
    });
}

bool client_actor::post_admin(std::function<void(client_actor&)> fn) {
    auto self = shared_from_this();
    return mailbox_->tell_control(
        client_msg::call{[self, fn = std::move(fn)](client_actor& a) mutable { fn(a); }});
}

void client_actor::admin_disconnect(std::string session_id, std::function<void(bool)> done) {
    auto shared_done = std::make_shared<std::function<void(bool)>>(std::move(done));
    const bool posted =
        post_admin([session_id = std::move(session_id), shared_done](client_actor& a) {
            const bool current = session_id.empty() || session_id == a.session_id_;
            const bool acted =
                !a.stopped_ && current && a.conn_ && a.conn_->connack_sent && !a.conn_->closing;
            if (acted) {
                a.disconnect_with(mqtt::reason_code::administrative_action,
                                  "disconnected by an administrator");
            }
            if (*shared_done) {
                (*shared_done)(acted);
            }
        });
    if (!posted && *shared_done) {
        (*shared_done)(false);
    }
}

void client_actor::admin_end_session(std::string session_id, std::function<void(bool)> done) {
    auto shared_done = std::make_shared<std::function<void(bool)>>(std::move(done));
    const bool posted =
        post_admin([session_id = std::move(session_id), shared_done](client_actor& a) {
            const bool current = session_id.empty() || session_id == a.session_id_;
            const bool acted = !a.stopped_ && current && !a.conn_ && a.session_exists_;
            if (acted) {
                spdlog::info("client {}: session ended by an administrator", a.client_id_);
                a.end_session();
            }
            if (*shared_done) {
                (*shared_done)(acted);
            }
        });
    if (!posted && *shared_done) {
        (*shared_done)(false);
    }
}

void client_actor::admin_set_subscriptions(std::string session_id,
                                           std::vector<stored_subscription> subscriptions,
                                           std::function<void(bool)> done) {
    auto shared_done = std::make_shared<std::function<void(bool)>>(std::move(done));
    const bool posted = post_admin([session_id = std::move(session_id),
                                    subscriptions = std::move(subscriptions),
                                    shared_done](client_actor& a) mutable {
        const bool current = session_id.empty() || session_id == a.session_id_;
        if (a.stopped_ || !current || !a.session_exists_) {
            (*shared_done)(false);
            return;
        }
        std::map<std::string, stored_subscription> wanted;
        for (auto& sub : subscriptions) {
            auto key = subscription_records::entry_key(sub.share_group, sub.filter);
            wanted.insert_or_assign(std::move(key), std::move(sub));
        }
        for (auto it = a.subscriptions_.begin(); it != a.subscriptions_.end();) {
            if (!wanted.contains(it->first)) {
                a.core_.trie().unsubscribe(it->second.filter, a.client_id_, it->second.share_group);
                it = a.subscriptions_.erase(it);
            } else {
                ++it;
            }
        }
        std::vector<stored_subscription> new_shared;
        for (auto& [key, sub] : wanted) {
            if (!sub.share_group.empty() && !a.subscriptions_.contains(key)) {
                new_shared.push_back(sub);
            }
            a.add_subscription(std::move(sub));
        }
        spdlog::info("client {}: subscriptions replaced by an administrator ({} now)", a.client_id_,
                     a.subscriptions_.size());
        a.app_sync_shared();
        a.write_subscriptions(a.bind_status(
            [shared_done, new_shared = std::move(new_shared)](client_actor& self, status st) {
                if (st && self.delivering()) {
                    for (const auto& sub : new_shared) {
                        self.take_group_inboxes(&sub);
                    }
                }
                (*shared_done)(st.has_value());
            }));
    });
    if (!posted) {
        (*shared_done)(false);
    }
}

bool client_actor::admin_inspect(std::function<void(admin_view)> done) {
    return post_admin([done = std::move(done)](client_actor& a) {
        admin_view v;
        v.connected = a.conn_ && a.conn_->connack_sent && !a.conn_->closing;
        v.subscriptions.reserve(a.subscriptions_.size());
        for (const auto& [key, sub] : a.subscriptions_) {
            v.subscriptions.push_back(sub);
        }
        v.in_flight = a.inflight_.size();
        v.queued = a.queued_.size() + a.inbox_prefetched_.size();
        done(std::move(v));
    });
}

void client_actor::on_session_moved(const std::string& session_id, const std::string& new_node_id,
                                    bool new_clean_start) {
    if (!stopped_ && conn_ && !conn_->connack_sent && !session_id.empty() &&
        session_id == conn_->request_id) {
        // The disconnect overtook the reply granting this very connection.
        conn_->moved_before_reply = true;
        conn_->moved_to_node = new_node_id;
        conn_->moved_clean_start = new_clean_start;
        return;
    }
    if (stopped_ || !session_exists_ || session_id.empty() || session_id != session_id_) {
        spdlog::debug("client {}: stale disconnect for session {} ignored", client_id_, session_id);
        return;
    }
    // A connection that got its CONNACK belongs to `session_id`; one still waiting for its
    // reply is newer and stays.
    if (conn_ && conn_->connack_sent) {
        auto old = std::move(conn_);
        conn_ = nullptr;
        core_.timers().cancel(old->keep_alive_timer);
        if (old->v5()) {
            old->encode_buffer.clear();
            mqtt::disconnect d;
            d.reason_code = mqtt::reason_code::session_taken_over;
            d.properties.reason_string = "another connection took over the session";
            mqtt::encode(d, old->version, old->encode_buffer);
            old->channel->send(std::move(old->encode_buffer));
        }
        old->channel->close();
        if (old->will && !old->will_suppressed) {
            std::uint32_t delay = old->will->properties.will_delay_interval.value_or(0);
            if (new_clean_start || delay == 0) {
                publish_will(*old->will);
            }
        }
        connected_.store(false, std::memory_order_release);
        if (!writable_.exchange(true, std::memory_order_acq_rel)) {
            core_.probe().non_writable_clients(-1);
        }
        pre_connack_.clear();
        inbound_.connection_ended();
        drop_gated_answers();
        drop_held();
        core_.probe().client_disconnected();
        core_.probe().disconnect_counted(metrics::disconnect_reason::taken_over);
        spdlog::info(
            "client disconnected: id={} address={} version={} reason=session taken over on "
            "node {}",
            client_id_, old->channel->remote_address(), version_name(old->version), new_node_id);
        emit_event(integration::lifecycle_event::disconnected,
                   "session taken over on node " + new_node_id, {}, old.get());
    }
    // A clean start on the new node ends the session's subscriptions there: nothing to hand.
    drop_local_session(new_clean_start ? std::string() : new_node_id);
    if (!conn_) {
        retire();
    }
}

void client_actor::drop_local_session(const std::string& new_owner) {
    // The session belongs to another node now (or never was this actor's): forget it here
    // without touching the log, the inbox or the metadata store — the new owner uses them.
    if (will_timer_) {
        core_.timers().cancel(will_timer_);
        will_timer_ = {};
    }
    pending_will_.reset();
    if (expiry_timer_) {
        core_.timers().cancel(expiry_timer_);
        expiry_timer_ = {};
    }
    ++expiry_generation_;
    // Whoever holds the session next writes its own generation of the set.
    subscriptions_journal_.restart();
    if (!new_owner.empty() && !subscriptions_.empty()) {
        // The session continues on `new_owner`: its entries here become that node's mirrored
        // ones without a moment in between where a message routed here would match nobody.
        broker_core::handed_subscriptions handed;
        handed.reserve(subscriptions_.size());
        for (const auto& [key, sub] : subscriptions_) {
            handed.emplace_back(sub.filter, trie_entry(sub));
            handed.back().second.owner_node = new_owner;
        }
        subscriptions_.clear();
        core_.hand_over_subscriptions(client_id_, std::move(handed), new_owner);
    } else {
        remove_subscriptions();
    }
    inflight_.clear();
    queued_.clear();
    sent_before_.clear();
    inbound_.clear();
    drop_gated_answers();
    if (app_) {
        app_->drop();  // its consumers stop here; the new owner reads the topics
    }
    redeliver_all_as_dup_ = false;
    check_stored_deliveries_ = false;
    forget_inbox_state();
    session_exists_ = false;
    persistent_ = false;
    session_id_.clear();
    counted_ = false;  // the session's session-limit unit moved with it
    uncounted_ = false;
}

void client_actor::adopt_subscriptions() {
    auto set = core_.sessions().subscriptions_of(client_id_);
    if (!set) {
        spdlog::info("client {}: session taken over with no subscriptions to adopt", client_id_);
        return;
    }
    auto parsed = subscription_records::parse_set(*set);
    if (!parsed) {
        spdlog::warn("client {}: undecodable subscription set not adopted", client_id_);
        return;
    }
    for (auto& sub : *parsed) {
        // A SUBSCRIBE the client sent after its CONNACK, before this ran, is newer: it wins.
        if (subscriptions_.contains(subscription_records::entry_key(sub.share_group, sub.filter))) {
            continue;
        }
        add_subscription(std::move(sub));
    }
    if (conn_) {
        authorize_inherited_subscriptions();
    }
    spdlog::info("client {}: adopted {} subscriptions from the session's previous node", client_id_,
                 parsed->size());
    // This node is now the set's single writer: its records (origin = this node) are what the
    // other nodes mirror, routing to this node from now on. A new generation: the records in
    // the log are the previous node's.
    subscriptions_journal_.restart();
    write_subscriptions([](status) {});
    app_sync_shared();
}

void client_actor::authorize_inherited_subscriptions() {
    const auto& rules = conn_->rules;
    if (!rules || rules->allow_all) {
        return;
    }
    std::vector<std::string> dropped;
    for (auto it = subscriptions_.begin(); it != subscriptions_.end();) {
        const stored_subscription& sub = it->second;
        // As on SUBSCRIBE: the rules see the filter as the client writes it ($share/... too).
        std::string written =
            sub.share_group.empty() ? sub.filter : "$share/" + sub.share_group + "/" + sub.filter;
        if (rules->may_subscribe(written)) {
            ++it;
            continue;
        }
        core_.trie().unsubscribe(sub.filter, client_id_, sub.share_group);
        dropped.push_back(std::move(written));
        it = subscriptions_.erase(it);
    }
    if (dropped.empty()) {
        return;
    }
    check_stored_deliveries_ = true;
    spdlog::warn(
        "client {}: resumed by a connection (address={}) whose topic rules do not allow {} of "
        "the session's subscriptions; dropped: {}",
        client_id_, conn_->channel->remote_address(), dropped.size(), fmt::join(dropped, ", "));
    write_subscriptions([](status) {});
    app_sync_shared();
}

bool client_actor::authorized_for_delivery(const app_message& m) const {
    return std::any_of(subscriptions_.begin(), subscriptions_.end(), [&](const auto& entry) {
        return mqtt::topic_matches(entry.second.filter, m.topic);
    });
}

void client_actor::remove_subscriptions() {
    for (const auto& [key, sub] : subscriptions_) {
        core_.trie().unsubscribe(sub.filter, client_id_, sub.share_group);
    }
    const bool had_subscriptions = !subscriptions_.empty();
    subscriptions_.clear();
    if (had_subscriptions) {
        // Cluster mode: the mirrored entries of another node, kept out while these existed,
        // go back in (state_follower::reapply_subscriptions).
        core_.subscriptions_dropped(client_id_);
    }
}

routing::subscription client_actor::trie_entry(const stored_subscription& sub) const {
    return routing::subscription{
        .client_id = client_id_,
        .options = {.qos = static_cast<std::uint8_t>(sub.options.qos),
                    .no_local = sub.options.no_local,
                    .retain_as_published = sub.options.retain_as_published,
                    .retain_handling = static_cast<std::uint8_t>(sub.options.retain_handling)},
        .subscription_identifier = sub.subscription_id,
        .share_group = sub.share_group};
}

void client_actor::add_subscription(stored_subscription sub) {
    core_.trie().subscribe(sub.filter, trie_entry(sub));
    auto key = subscription_records::entry_key(sub.share_group, sub.filter);
    subscriptions_.insert_or_assign(std::move(key), std::move(sub));
}

void client_actor::complete_connect(std::uint64_t channel_id, bool session_present,
                                    bool id_assigned) {
    const auto& cfg = core_.cfg();
    connection_state& c = *conn_;
    mqtt::connack ack;
    ack.session_present = session_present;
    const auto keep_alive =
        mqtt::negotiate_keep_alive(c.requested_keep_alive, cfg.max_keep_alive, c.version);
    if (c.v5()) {
        auto& props = ack.properties;
        props.receive_maximum = cfg.max_in_flight;
        if (cfg.max_qos < 2) {
            props.maximum_qos = cfg.max_qos;
        }
        if (!cfg.retain_available) {
            props.retain_available = 0;
        }
        props.maximum_packet_size = cfg.max_packet_size;
        props.topic_alias_maximum = cfg.topic_alias_max;
        if (id_assigned) {
            props.assigned_client_identifier = client_id_;
        }
        // Server Keep Alive: the client must use this value instead of its own.
        props.server_keep_alive = keep_alive.server_keep_alive;
        if (session_expiry_ != c.requested_expiry) {
            // The server's maximum shortened the client's interval: the client is told the one
            // in force (MQTT 5.0 section 3.2.2.3.2).
            props.session_expiry_interval = session_expiry_;
        }
        if (c.wants_response_information && !cfg.response_information.empty()) {
            props.response_information = cfg.response_information;
        }
    } else if (keep_alive.seconds != c.requested_keep_alive) {
        // 3.1.x has no Server Keep Alive: the maximum applies all the same (keep_alive.h).
        spdlog::debug("client {}: keep-alive {} s enforced as {} s", client_id_,
                      c.requested_keep_alive, keep_alive.seconds);
    }
    c.keep_alive = mqtt::keep_alive_deadline(keep_alive.seconds, core_.clock().steady_now());
    app_on_connect(session_present);
    send_packet(ack);
    c.connack_sent = true;
    connected_.store(true, std::memory_order_release);
    core_.probe().client_connected();
    spdlog::info(
        "client connected: id={} address={} version={} session_present={} persistent={} "
        "keep_alive={}",
        client_id_, c.channel->remote_address(), version_name(c.version), session_present,
        persistent_, c.keep_alive.seconds());
    emit_event(integration::lifecycle_event::connected, {}, {});
    core_.sessions().put_session(
        session_record{.client_id = client_id_,
                       .persistent = persistent_,
                       .connected = true,
                       .session_expiry_interval = session_expiry_,
                       .connected_at_ms = core_.now_ms(),
                       .node_id = core_.cfg().node_id,
                       .session_id = session_id_,
                       .type = type_,
                       .protocol_version = static_cast<std::uint32_t>(c.version),
                       .client_address = c.channel->remote_address()});
    arm_keep_alive();

    if (persistent_) {
        if (session_present) {
            core_.metadata().load_session_context(
                client_id_,
                [self = shared_from_this(), channel_id](result<std::optional<session_context>> r) {
                    self->post([channel_id, r = std::move(r)](client_actor& a) {
                        if (!a.conn_ || a.conn_->id != channel_id) {
                            return;
                        }
                        a.inbound_qos2_loading_ = false;
                        if (r && r.value()) {
                            a.inbound_.restore(r.value()->qos2_packet_ids);
                        }
                        a.drain_early_packets(channel_id);
                    });
                });
            // Packets wait until the ids are known: a resent QoS 2 PUBLISH handled before
            // would be published twice, its PUBREL answered 0x92 (issue 4 §5).
            inbound_qos2_loading_ = true;
        }
        inbox_dirty_ = true;
        pump_inbox();
        pump_app();
        take_group_inboxes(nullptr);
    }
    drain_early_packets(channel_id);
}

void client_actor::drain_early_packets(std::uint64_t channel_id) {
    if (inbound_qos2_loading_) {
        return;
    }
    auto early = std::move(pre_connack_);
    pre_connack_.clear();
    for (auto& packet : early) {
        if (!conn_ || conn_->id != channel_id) {
            break;
        }
        on_packet(std::move(packet));
    }
}

// ---------------------------------------------------------------------------------------------
// Packets of a connected client

void client_actor::on_packet(mqtt::packet&& p) {
    if (!held_.empty() || must_wait(p)) {
        hold_packet(std::move(p));
        return;
    }
    handle_packet(std::move(p));
}

void client_actor::handle_packet(mqtt::packet&& p) {
    std::visit(
        [this](auto&& packet) {
            using T = std::decay_t<decltype(packet)>;
            if constexpr (std::is_same_v<T, mqtt::publish>) {
                on_publish(std::move(packet));
            } else if constexpr (std::is_same_v<T, mqtt::puback>) {
                on_puback(packet.packet_id);
            } else if constexpr (std::is_same_v<T, mqtt::pubrec>) {
                on_pubrec(packet);
            } else if constexpr (std::is_same_v<T, mqtt::pubrel>) {
                on_pubrel(packet);
            } else if constexpr (std::is_same_v<T, mqtt::pubcomp>) {
                on_pubcomp(packet.packet_id);
            } else if constexpr (std::is_same_v<T, mqtt::subscribe>) {
                on_subscribe(std::move(packet));
            } else if constexpr (std::is_same_v<T, mqtt::unsubscribe>) {
                on_unsubscribe(std::move(packet));
            } else if constexpr (std::is_same_v<T, mqtt::pingreq>) {
                send_packet(mqtt::pingresp{});
            } else if constexpr (std::is_same_v<T, mqtt::disconnect>) {
                on_disconnect(packet);
            } else if constexpr (std::is_same_v<T, mqtt::connect>) {
                disconnect_with(mqtt::reason_code::protocol_error, "second CONNECT");
            } else if constexpr (std::is_same_v<T, mqtt::auth>) {
                // No enhanced authentication method was agreed in CONNECT, so AUTH is a
                // protocol error (MQTT 5.0 section 4.12).
                disconnect_with(mqtt::reason_code::protocol_error,
                                "AUTH without an authentication method");
            } else {
                disconnect_with(mqtt::reason_code::protocol_error, "unexpected packet");
            }
        },
        std::move(p));
}

void client_actor::on_publish(mqtt::publish&& p) {
    const auto& cfg = core_.cfg();
    connection_state& c = *conn_;
    // Topic alias (client → server).
    if (c.v5()) {
        if (auto refused =
                c.inbound_aliases.resolve(p.topic, p.properties.topic_alias, cfg.topic_alias_max)) {
            disconnect_with(refused->code, refused->why);
            return;
        }
    }
    if (p.topic.empty()) {
        disconnect_with(mqtt::reason_code::protocol_error, "empty topic without alias");
        return;
    }
    if (static_cast<std::uint8_t>(p.qos) > cfg.max_qos) {
        disconnect_with(mqtt::reason_code::qos_not_supported, "QoS above maximum");
        return;
    }
    if (p.retain && !cfg.retain_available) {
        disconnect_with(mqtt::reason_code::retain_not_supported, "retain not available");
        return;
    }
    core_.probe().publish_received(static_cast<std::uint8_t>(p.qos));

    if (p.qos != mqtt::qos::at_most_once) {
        // Receive Maximum is enforced for v5 only: 3.1.1 clients wait in held_ instead (see
        // must_wait). Answers decided but waiting for a store write are still owed.
        const std::size_t owed = ids_gated_counted_;
        const bool over = c.v5() && owed >= cfg.max_in_flight;
        const std::size_t limit = c.v5() && !over ? cfg.max_in_flight - owed : 0;
        const auto arrived = over ? mqtt::inbound_window::arrival::over_limit
                                  : inbound_.on_publish(p.packet_id, p.qos, limit);
        switch (arrived) {
            case mqtt::inbound_window::arrival::over_limit:
                disconnect_with(mqtt::reason_code::receive_maximum_exceeded,
                                "more unacknowledged QoS 1/2 PUBLISH than Receive Maximum");
                return;
            case mqtt::inbound_window::arrival::resent:
                // A QoS 2 PUBLISH whose PUBREC was sent, or that is still being written: it is
                // answered again (in turn), never published twice.
                flush_acks();
                return;
            case mqtt::inbound_window::arrival::accepted:
                break;
        }
    }
    if (cfg.max_topic_segments != 0 && topic_levels(p.topic) > cfg.max_topic_segments) {
        // v5 is told (0x90); a v3 QoS 1/2 PUBLISH is acknowledged (it has no negative
        // acknowledgement and would be resent forever) — either way dropped and counted.
        core_.probe().message_dropped(metrics::drop_reason::topic_levels, client_id_, p.topic);
        spdlog::debug("client {}: PUBLISH to a topic of more than {} levels dropped", client_id_,
                      cfg.max_topic_segments);
        answer_publish_now(p, mqtt::reason_code::topic_name_invalid);
        return;
    }

    if (!incoming_allowed()) {
        // Over the publisher's incoming rate limit: dropped and counted, never acknowledged as
        // accepted. As TBMQ: v5 QoS 1/2 get PUBACK/PUBREC 0x97 (Quota exceeded; 0x96 is not
        // allowed there), v5 QoS 0 nothing; v3 has no negative acknowledgement, so the client
        // is disconnected.
        core_.probe().message_dropped(metrics::drop_reason::incoming_rate, client_id_, p.topic);
        answer_refused_publish(p, mqtt::reason_code::message_rate_too_high,
                               "over the incoming publish rate limit");
        return;
    }

    if (c.rules && !c.rules->may_publish(p.topic)) {
        // Authorization: the message is dropped and counted. v5 tells the client (PUBACK /
        // PUBREC 0x87); v3 has no way to, so QoS 1/2 are still acknowledged as if accepted —
        // otherwise the client would resend the message forever.
        core_.probe().message_dropped(metrics::drop_reason::not_authorized, client_id_, p.topic);
        spdlog::debug("client {}: PUBLISH to '{}' not authorized, dropped", client_id_, p.topic);
        if (p.qos == mqtt::qos::at_most_once) {
            return;
        }
        // (A v3 QoS 2 PUBLISH so answered awaits its PUBREL like any other.)
        answer_publish_now(p,
                           c.v5() ? mqtt::reason_code::not_authorized : mqtt::reason_code::success);
        return;
    }

    if (p.retain && !p.payload.empty() &&
        !core_.retained().admits(p.topic, p.payload.size(), cfg.max_retained_messages,
                                 cfg.max_retained_bytes)) {
        core_.probe().retained_refused();
        spdlog::debug(
            "client {}: retained message on '{}' not stored: the node holds its "
            "maximum of retained messages",
            client_id_, p.topic);
        if (c.v5()) {
            // Refused whole (the client learns it was not accepted); 3.1.1 cannot be told, so
            // the message is published without being retained.
            core_.probe().message_dropped(metrics::drop_reason::retained_limit, client_id_,
                                          p.topic);
            answer_publish_now(p, mqtt::reason_code::quota_exceeded);
            return;
        }
        p.retain = false;
    }
    if (core_.quota() != nullptr && !quota_admits_publish(p)) {
        return;  // refused (answered and counted) or waiting for tokens
    }
    admit_publish(std::move(p));
}

void client_actor::admit_publish(mqtt::publish&& p) {
    const auto& cfg = core_.cfg();
    connection_state& c = *conn_;
    auto msg = std::make_shared<const app_message>(
        from_publish(p, client_id_, cfg.node_id, core_.now_ms()));
    const std::uint64_t channel_id = c.id;
    const std::uint16_t packet_id = p.qos == mqtt::qos::at_most_once ? 0 : p.packet_id;
    core_.publish(std::move(msg), bind_status([channel_id, packet_id](client_actor& a, status st) {
                      a.on_publish_written(channel_id, packet_id, st);
                  }));
}

void client_actor::on_publish_written(std::uint64_t channel_id, std::uint16_t packet_id,
                                      status st) {
    if (!conn_ || conn_->id != channel_id || packet_id == 0) {
        // The publisher is gone (a resent PUBLISH will be acknowledged on its own), or QoS 0.
        return;
    }
    mqtt::reason_code code = mqtt::reason_code::success;
    if (!st) {
        // Out of disk (the embedded log's free-space minimum, or ENOSPC itself) is a state of
        // the node, counted by the log; one line per PUBLISH would flood the log while it lasts.
        const bool disk_full = st.error() == std::errc::no_space_on_device;
        spdlog::log(disk_full ? spdlog::level::debug : spdlog::level::warn,
                    "client {}: PUBLISH {} not written to the log: {}", client_id_, packet_id,
                    st.error().message());
        if (!conn_->v5()) {
            // v3 has no negative acknowledgement: never acknowledge what was not written.
            disconnect_with(mqtt::reason_code::unspecified_error, "message log write failed");
            return;
        }
        // 0x97 Quota exceeded tells the client to back off and retry later; anything else
        // 0x80 Unspecified error.
        code = disk_full ? mqtt::reason_code::quota_exceeded : mqtt::reason_code::unspecified_error;
    }
    inbound_.decide(packet_id, code);
    flush_acks();
}

void client_actor::flush_acks() {
    // Acknowledgements leave in packet order even when the log acknowledges out of order.
    bool answered = false;
    while (conn_) {
        const auto a = inbound_.next_answer();
        if (!a) {
            break;
        }
        answered = true;
        const auto kind = a->level == mqtt::qos::at_least_once ? gated_answer::kind::puback
                                                               : gated_answer::kind::pubrec;
        send_answer(gated_answer{.type = kind, .packet_id = a->packet_id, .code = a->code},
                    a->awaiting_release_changed);
    }
    if (answered) {
        release_held();  // the window has room again
    }
}

void client_actor::on_pubrel(const mqtt::pubrel& p) {
    const mqtt::reason_code code = inbound_.on_pubrel(p.packet_id);
    send_answer(
        gated_answer{.type = gated_answer::kind::pubcomp, .packet_id = p.packet_id, .code = code},
        code == mqtt::reason_code::success);
}

void client_actor::send_answer(gated_answer a, bool changes_ids) {
    if (!persistent_) {
        send_now(a);  // nothing is stored: nothing to wait for
        return;
    }
    ids_dirty_ = ids_dirty_ || changes_ids;
    if (!ids_store_in_flight_ && !ids_dirty_ && ids_gated_.empty()) {
        send_now(a);
        return;
    }
    // A PUBREC that starts a wait for PUBREL is not owed to the client's send quota (the id
    // still counts until its PUBCOMP); every other answer held here is (on_publish).
    a.counted = !(a.type == gated_answer::kind::pubrec && changes_ids);
    ids_gated_counted_ += a.counted ? 1 : 0;
    ids_gated_.push_back(a);
    store_qos2_ids();
}

void client_actor::send_now(const gated_answer& a) {
    switch (a.type) {
        case gated_answer::kind::puback:
            send_packet(mqtt::puback{a.packet_id, a.code, {}});
            break;
        case gated_answer::kind::pubrec:
            send_packet(mqtt::pubrec{a.packet_id, a.code, {}});
            break;
        case gated_answer::kind::pubcomp:
            send_packet(mqtt::pubcomp{a.packet_id, a.code, {}});
            break;
    }
}

void client_actor::send_gated(std::size_t count) {
    for (std::size_t i = 0; i < count && !ids_gated_.empty(); ++i) {
        const gated_answer a = ids_gated_.front();
        ids_gated_.pop_front();
        ids_gated_counted_ -= a.counted ? 1 : 0;
        send_now(a);
    }
}

void client_actor::store_qos2_ids() {
    if (ids_store_in_flight_ || !ids_dirty_) {
        return;
    }
    ids_store_in_flight_ = true;
    ids_dirty_ = false;
    const std::size_t covered = ids_gated_.size();
    const std::uint64_t generation = ids_gate_generation_;
    session_context ctx;
    ctx.client_id = client_id_;
    ctx.last_updated_ms = core_.now_ms();
    ctx.qos2_packet_ids = inbound_.awaiting_release();
    core_.metadata().save_session_context(
        std::move(ctx), bind_status([generation, covered](client_actor& a, status st) {
            a.on_qos2_ids_stored(generation, covered, st);
        }));
}

void client_actor::on_qos2_ids_stored(std::uint64_t generation, std::size_t covered, status st) {
    ids_store_in_flight_ = false;
    if (!st) {
        // The message itself is in the log: answering is right; only a restart before the
        // next successful write could take the client's resend for a new message.
        spdlog::warn("client {}: QoS 2 state not stored: {}; answering anyway", client_id_,
                     st.error().message());
    }
    if (generation == ids_gate_generation_) {
        send_gated(covered);
    }
    if (ids_dirty_) {
        store_qos2_ids();  // the answers left depend on ids changed meanwhile
    } else {
        send_gated(ids_gated_.size());  // they only waited to keep their order
    }
    if (conn_) {
        release_held();  // a 3.1.1 client's window counts the answers held here
    }
}

void client_actor::drop_gated_answers() {
    ids_gated_.clear();
    ids_gated_counted_ = 0;
    ++ids_gate_generation_;
}

// ---------------------------------------------------------------------------------------------
// Outbound acknowledgements

void client_actor::on_puback(std::uint16_t packet_id) {
    if (inflight_.on_puback(packet_id)) {
        finish_outbound(packet_id);
    }
    // Else unknown or duplicate: nothing to do.
}

void client_actor::on_pubrec(const mqtt::pubrec& p) {
    using action = mqtt::outbound_window<outbound_entry>::pubrec_action;
    switch (inflight_.on_pubrec(p.packet_id, p.reason_code)) {
        case action::pubrel_not_found:
            send_packet(
                mqtt::pubrel{p.packet_id, mqtt::reason_code::packet_identifier_not_found, {}});
            return;
        case action::resend_pubrel:
            send_packet(mqtt::pubrel{p.packet_id, mqtt::reason_code::success, {}});
            return;
        case action::ignore:
            return;
        case action::finish:
            finish_outbound(p.packet_id);  // the receiver refused it: the exchange ends here
            return;
        case action::send_pubrel:
            break;
    }
    const outbound_entry& entry = *inflight_.find(p.packet_id);
    if (entry.from_app && app_) {
        app_->on_pubrec(p.packet_id);
    }
    if (entry.from_inbox) {
        core_.inbox().mark_pubrel(client_id_, p.packet_id, [id = client_id_](status st) {
            if (!st) {
                spdlog::warn("client {}: PUBREL state not stored: {}", id, st.error().message());
            }
        });
    }
    send_packet(mqtt::pubrel{p.packet_id, mqtt::reason_code::success, {}});
}

void client_actor::on_pubcomp(std::uint16_t packet_id) {
    if (inflight_.on_pubcomp(packet_id)) {
        finish_outbound(packet_id);
    }
}

void client_actor::finish_outbound(std::uint16_t packet_id) {
    const auto entry = inflight_.finish(packet_id);
    if (!entry) {
        return;
    }
    const bool from_inbox = entry->from_inbox;
    if (entry->from_app && app_) {
        app_->on_acknowledged(packet_id);
    }
    sent_before_.erase(packet_id);
    if (from_inbox) {
        remove_from_inbox(packet_id);
    }
    pump_queued();
    pump_inbox();
    pump_app();
}

void client_actor::remove_from_inbox(std::uint16_t packet_id) {
    inbox_removing_.insert(packet_id);
    inbox_to_remove_.push_back(packet_id);
    flush_inbox_removals();
}

void client_actor::flush_inbox_removals() {
    if (inbox_remove_in_flight_ || inbox_remove_retrying_ || inbox_to_remove_.empty()) {
        return;  // the removal in flight (or the retry) takes these next
    }
    inbox_remove_in_flight_ = true;
    std::vector<std::uint16_t> batch = std::move(inbox_to_remove_);
    inbox_to_remove_.clear();
    const std::uint64_t generation = inbox_generation_;
    core_.inbox().remove_batch(
        client_id_, batch, bind_status([generation, batch](client_actor& a, status st) mutable {
            if (generation != a.inbox_generation_) {
                return;  // the session's inbox was cleared meanwhile
            }
            a.inbox_remove_in_flight_ = false;
            if (!st) {
                // Never forgotten: a message whose removal failed would be read and delivered
                // again. The ids stay in inbox_removing_ until a retry succeeds.
                spdlog::warn(
                    "client {}: removing {} acknowledged messages from the inbox "
                    "failed, retrying in 1 s: {}",
                    a.client_id_, batch.size(), st.error().message());
                a.inbox_to_remove_.insert(a.inbox_to_remove_.begin(), batch.begin(), batch.end());
                a.retry_inbox_removals();
                return;
            }
            for (auto id : batch) {
                a.inbox_removing_.erase(id);
            }
            a.flush_inbox_removals();
            a.pump_inbox();
        }));
}

void client_actor::retry_inbox_removals() {
    inbox_remove_retrying_ = true;
    const std::uint64_t generation = inbox_generation_;
    std::weak_ptr<client_actor> weak = weak_from_this();
    core_.timers().schedule_after(std::chrono::seconds(1), [weak, generation] {
        if (auto self = weak.lock()) {
            self->post([generation](client_actor& a) {
                if (generation != a.inbox_generation_) {
                    return;
                }
                a.inbox_remove_retrying_ = false;
                a.flush_inbox_removals();
            });
        }
    });
}

void client_actor::forget_inbox_state() {
    // The inbox is cleared (or belongs to another node now): removals and reads in flight refer
    // to what it held before. The store runs a client's operations in order, so nothing issued
    // after the clear can see the old messages.
    ++inbox_generation_;
    drop_prefetched();
    inbox_to_remove_.clear();
    inbox_removing_.clear();
    inbox_remove_in_flight_ = false;
    inbox_remove_retrying_ = false;
}

// ---------------------------------------------------------------------------------------------
// Outbound delivery

std::size_t client_actor::window() const {
    std::size_t w = core_.cfg().max_in_flight;
    if (conn_) {
        w = std::min<std::size_t>(w, conn_->client_receive_max);
    }
    return w == 0 ? 1 : w;
}

bool client_actor::delivering() const { return conn_ && conn_->connack_sent && !conn_->closing; }

bool client_actor::channel_writable() const {
    return writable_.load(std::memory_order_relaxed) && conn_ && conn_->channel->writable();
}

std::uint16_t client_actor::next_packet_id() {
    // Skips ids in flight (including ids the inbox assigned) and those the APPLICATION
    // session's sources hold.
    const std::uint16_t id = inflight_.next_id(last_packet_id_, [this](std::uint16_t candidate) {
        return app_ && app_->reserves(candidate);
    });
    if (id != 0) {
        last_packet_id_ = id;
    }
    return id;
}

void client_actor::on_deliver(delivery&& d) {
    if (!conn_ || !conn_->connack_sent || conn_->closing) {
        core_.probe().message_dropped(metrics::drop_reason::offline, client_id_, d.msg->topic);
        return;
    }
    if (d.msg->expired(core_.now_ms())) {
        core_.probe().message_dropped(metrics::drop_reason::expired, client_id_, d.msg->topic);
        return;
    }
    if (!writable_.load(std::memory_order_relaxed)) {
        core_.probe().message_dropped(metrics::drop_reason::non_writable, client_id_, d.msg->topic);
        return;
    }
    // Only QoS 0 copies count against the outgoing limit: dropping a QoS 1/2 copy would break
    // its delivery guarantee (TBMQ's checkOutgoingLimits does the same).
    if (d.qos == mqtt::qos::at_most_once && !outgoing_allowed()) {
        core_.probe().message_dropped(metrics::drop_reason::outgoing_rate, client_id_,
                                      d.msg->topic);
        return;
    }
    auto& echoes = conn_->echoes;
    if (echoes && echoes->take_live_echo(d.msg, core_.now_ms())) {
        // The SUBSCRIBE that just sent this message as retained had it before its live copy.
        release_idle_echoes();
        return;
    }
    // Nothing stored this copy, so nothing paid for it: its send is its admission.
    if (core_.quota() != nullptr && !quota_admits_copy()) {
        return;
    }
    if (echoes) {
        echoes->live_sent(d.msg, core_.now_ms());
        release_idle_echoes();
    }
    deliver_now(std::move(d));
}

void client_actor::release_idle_echoes() {
    if (conn_ && conn_->echoes && conn_->echoes->idle(core_.now_ms())) {
        conn_->echoes.reset();
    }
}

bool client_actor::incoming_allowed() {
    const auto& limit = core_.cfg().incoming_publish_limit;
    if (limit.empty()) {
        return true;
    }
    const auto now = core_.clock().steady_now();
    if (!incoming_limit_) {
        incoming_limit_ = std::make_unique<ratelimit::token_bucket>(limit, now);
    }
    const bool ok = incoming_limit_->try_acquire(now);
    if (!ok && !incoming_throttled_) {
        spdlog::debug(
            "client {}: over the incoming publish rate limit {}; dropping its PUBLISH "
            "packets until it slows down",
            client_id_, ratelimit::to_string(limit));
    }
    incoming_throttled_ = !ok;
    return ok;
}

bool client_actor::outgoing_allowed() {
    const auto& limit = core_.cfg().outgoing_publish_limit;
    if (limit.empty()) {
        return true;
    }
    const auto now = core_.clock().steady_now();
    if (!outgoing_limit_) {
        outgoing_limit_ = std::make_unique<ratelimit::token_bucket>(limit, now);
    }
    const bool ok = outgoing_limit_->try_acquire(now);
    if (!ok && !outgoing_throttled_) {
        spdlog::debug("client {}: over the outgoing publish rate limit {}; dropping QoS 0 copies",
                      client_id_, ratelimit::to_string(limit));
    }
    outgoing_throttled_ = !ok;
    return ok;
}

void client_actor::deliver_now(delivery&& d, bool bounded) {
    if (d.qos == mqtt::qos::at_most_once) {
        send_publish(d, 0, false);
        return;
    }
    if (!inflight_.has_room(window())) {
        if (bounded && queued_.size() >= core_.cfg().outbound_queue_limit) {
            core_.probe().message_dropped(metrics::drop_reason::queue_trim, client_id_,
                                          d.msg->topic);
            return;
        }
        queued_.push_back(std::move(d));
        return;
    }
    std::uint16_t id = next_packet_id();
    if (id == 0) {
        queued_.push_back(std::move(d));
        return;
    }
    const mqtt::qos level = d.qos;
    const auto& entry = inflight_.start(id, level, outbound_entry{.d = std::move(d)});
    send_publish(entry.d, id, false);
}

void client_actor::pump_queued() {
    while (!queued_.empty() && conn_ && conn_->connack_sent && inflight_.has_room(window())) {
        delivery d = std::move(queued_.front());
        queued_.pop_front();
        if (d.msg->expired(core_.now_ms())) {
            core_.probe().message_dropped(metrics::drop_reason::expired, client_id_, d.msg->topic);
            continue;
        }
        deliver_now(std::move(d));
    }
}

void client_actor::send_publish(const delivery& d, std::uint16_t packet_id, bool dup) {
    connection_state& c = *conn_;
    const app_message& m = *d.msg;
    const std::int64_t now = core_.now_ms();

    mqtt::publish_header h;
    h.topic = m.topic;
    h.qos = d.qos;
    h.retain = d.retain;
    h.dup = dup;
    h.packet_id = packet_id;
    h.subscription_identifiers = d.subscription_ids;
    std::optional<mqtt::properties> expiring;
    if (m.expires_at_ms != 0) {
        // The remaining lifetime is forwarded, not the original interval.
        expiring = m.properties;
        expiring->message_expiry_interval = m.remaining_expiry_seconds(now);
        h.properties = &*expiring;
    } else {
        h.properties = &m.properties;
    }
    // Topic alias (server → client) for long topics, when the client allows aliases: the first
    // PUBLISH of a topic establishes one (the least recently used once all are taken), later
    // ones send the alias alone. Recorded only once the PUBLISH goes out (below).
    mqtt::outbound_topic_aliases::choice alias;
    if (c.v5() && c.outbound_aliases && m.topic.size() >= core_.cfg().min_topic_length_for_alias) {
        alias = c.outbound_aliases->choose(m.topic);
        if (alias.alias != 0) {
            h.topic_alias = alias.alias;
            if (!alias.with_topic) {
                h.topic = {};
            }
        }
    }
    if (c.client_max_packet != 0 &&
        mqtt::encoded_publish_size(c.version, h, m.payload.size()) > c.client_max_packet) {
        // Larger than the client accepts: discard as if delivered (MQTT 5.0 section 3.1.2.11.4).
        core_.probe().message_dropped(metrics::drop_reason::packet_too_large, client_id_, m.topic);
        if (packet_id != 0) {
            post([packet_id](client_actor& a) { a.finish_outbound(packet_id); });
        }
        return;
    }
    std::string out;
    mqtt::encode_publish(out, c.version, h, m.payload);
    c.channel->send(std::move(out));
    if (c.outbound_aliases) {
        c.outbound_aliases->sent(m.topic, alias);
    }
    core_.probe().publish_sent(static_cast<std::uint8_t>(d.qos));
}

void client_actor::send_packet(const mqtt::packet& p) {
    if (!conn_) {
        return;
    }
    std::string out;
    mqtt::encode(p, conn_->version, out);
    conn_->channel->send(std::move(out));
}

void client_actor::pump_inbox() {
    if (!persistent_ || !conn_ || !conn_->connack_sent || conn_->closing) {
        return;
    }
    if (resume_backoff_) {
        if (!inflight_.empty()) {
            return;  // on_resume_backoff() or the last acknowledgement resumes it
        }
        end_resume_backoff();
        inbox_dirty_ = true;  // re-read: the inbox is the truth after a stall
    }
    send_prefetched();
    if (inbox_reading_ || !inbox_dirty_ || !writable_.load(std::memory_order_relaxed)) {
        return;
    }
    if (inbox_prefetched_.size() >= window()) {
        return;  // enough read ahead to fill the window again; acknowledgements take from it
    }
    inbox_reading_ = true;
    inbox_dirty_ = false;
    const std::uint64_t channel_id = conn_->id;
    // The oldest pending messages are the ones already known (in flight, being removed, read
    // ahead): read past them to about a window of new ones.
    const std::size_t requested =
        inflight_.size() + inbox_removing_.size() + inbox_prefetched_.size() + window();
    core_.inbox().read_pending(
        client_id_, requested,
        [self = shared_from_this(), channel_id, requested](result<std::vector<inbox_message>> r) {
            self->post([channel_id, requested, r = std::move(r)](client_actor& a) mutable {
                a.on_inbox_read(channel_id, requested, std::move(r));
            });
        });
}

void client_actor::on_inbox_read(std::uint64_t channel_id, std::size_t requested,
                                 result<std::vector<inbox_message>> r) {
    inbox_reading_ = false;
    if (!conn_ || conn_->id != channel_id) {
        // Read for an earlier connection. The current one (if any) skipped its own read while
        // this was in flight, so it reads now; nothing else would wake it if the inbox is quiet.
        inbox_dirty_ = true;
        pump_inbox();
        return;
    }
    if (!r) {
        spdlog::warn("client {}: inbox read failed, retrying in 1 s: {}", client_id_,
                     r.error().message());
        inbox_dirty_ = true;
        std::weak_ptr<client_actor> weak = weak_from_this();
        core_.timers().schedule_at(core_.clock().steady_now() + std::chrono::seconds(1), [weak] {
            if (auto self = weak.lock()) {
                self->post([](client_actor& a) { a.pump_inbox(); });
            }
        });
        return;
    }
    if (r.value().size() >= requested) {
        // A full answer: more may wait behind it. Without this a backlog longer than the window
        // stopped once the first window was acknowledged, since nothing else marks the inbox
        // for reading while the client stays connected.
        inbox_dirty_ = true;
    } else {
        // A partial answer covered every pending message: once those are sent, whatever was
        // pending when the session came to this actor has been delivered once more here.
        inbox_covered_ = true;
    }
    for (auto& im : r.value()) {
        if (inflight_.contains(im.packet_id) || inbox_removing_.contains(im.packet_id) ||
            inbox_prefetched_ids_.contains(im.packet_id)) {
            continue;
        }
        inbox_prefetched_ids_.insert(im.packet_id);
        inbox_prefetched_.push_back(std::move(im));
    }
    send_prefetched();
    if (!inbox_reading_ && inbox_dirty_) {
        pump_inbox();
    }
}

void client_actor::send_prefetched() {
    if (!delivering() || !writable_.load(std::memory_order_relaxed) ||
        (resume_backoff_ && !inflight_.empty())) {
        return;
    }
    const std::int64_t now = core_.now_ms();
    // The channel's own watermark, not writable_ (that flag follows it asynchronously): a
    // window of large messages must not push the write queue past its hard limit in one go.
    while (!inbox_prefetched_.empty() && inflight_.has_room(window()) && channel_writable()) {
        inbox_message im = std::move(inbox_prefetched_.front());
        inbox_prefetched_.pop_front();
        inbox_prefetched_ids_.erase(im.packet_id);
        if (im.pubrel) {
            // An interrupted QoS 2 exchange resumes at PUBREL.
            inflight_.resume_at_pubrel(im.packet_id, outbound_entry{.from_inbox = true});
            send_packet(mqtt::pubrel{im.packet_id, mqtt::reason_code::success, {}});
            continue;
        }
        proto::persisted_msg pm;
        if (!pm.ParseFromString(im.record)) {
            spdlog::error("client {}: unreadable inbox record {} removed", client_id_,
                          im.packet_id);
            remove_from_inbox(im.packet_id);
            continue;
        }
        delivery d;
        d.msg = std::make_shared<const app_message>(from_proto(pm.msg()));
        d.qos = static_cast<mqtt::qos>(std::min<std::uint32_t>(pm.qos(), 2));
        d.retain = pm.retain();
        d.subscription_ids.assign(pm.subscription_ids().begin(), pm.subscription_ids().end());
        if (d.msg->expired(now)) {
            core_.probe().message_dropped(metrics::drop_reason::expired, client_id_, d.msg->topic);
            remove_from_inbox(im.packet_id);
            continue;
        }
        if (check_stored_deliveries_ && !authorized_for_delivery(*d.msg)) {
            // Queued for a subscription the client now connected may not have.
            core_.probe().message_dropped(metrics::drop_reason::not_authorized, client_id_,
                                          d.msg->topic);
            remove_from_inbox(im.packet_id);
            continue;
        }
        if (d.qos == mqtt::qos::at_most_once) {
            d.qos = mqtt::qos::at_least_once;
        }
        const bool dup = redeliver_all_as_dup_ || sent_before_.contains(im.packet_id);
        const mqtt::qos level = d.qos;
        const auto& entry = inflight_.start(im.packet_id, level,
                                            outbound_entry{.d = std::move(d), .from_inbox = true});
        send_publish(entry.d, im.packet_id, dup);
    }
    if (inbox_prefetched_.empty() && inbox_covered_ && redeliver_all_as_dup_) {
        // Everything that might have been sent before (by the node before a restart, or the
        // node the session came from) is in flight now and goes into sent_before_ if this
        // connection ends; newer messages are first deliveries.
        redeliver_all_as_dup_ = false;
    }
}

void client_actor::drop_prefetched() {
    inbox_prefetched_.clear();
    inbox_prefetched_ids_.clear();
    inbox_covered_ = false;
}

// ---------------------------------------------------------------------------------------------
// SUBSCRIBE / UNSUBSCRIBE

void client_actor::on_subscribe(mqtt::subscribe&& s) {
    const auto& cfg = core_.cfg();
    const bool v5 = conn_->v5();
    std::optional<std::uint32_t> sub_id;
    if (!s.properties.subscription_identifiers.empty()) {
        sub_id = s.properties.subscription_identifiers.front();
    }
    std::vector<mqtt::reason_code> codes;
    codes.reserve(s.subscriptions.size());
    std::vector<std::pair<stored_subscription, bool>> retained_candidates;  // sub, existed
    std::vector<stored_subscription> new_shared;  // this client joins these groups
    std::vector<std::string> granted_filters;     // for the SUBSCRIBED lifecycle event
    const bool want_subscribed =
        core_.integrations().wants_event(integration::lifecycle_event::subscribed);
    for (auto& req : s.subscriptions) {
        std::string_view filter = req.filter;
        std::string_view group;
        if (mqtt::validate_topic_filter(filter) != mqtt::reason_code::success) {
            codes.push_back(v5 ? mqtt::reason_code::topic_filter_invalid
                               : mqtt::reason_code::unspecified_error);
            continue;
        }
        if (mqtt::is_shared(filter)) {
            auto shared = mqtt::parse_shared(filter);
            if (!shared) {
                codes.push_back(v5 ? mqtt::reason_code::topic_filter_invalid
                                   : mqtt::reason_code::unspecified_error);
                continue;
            }
            if (v5 && req.options.no_local) {
                disconnect_with(mqtt::reason_code::protocol_error,
                                "No Local on a shared subscription");
                return;
            }
            group = shared->group;
            filter = shared->filter;
        }
        if ((!cfg.allow_root_multi_level_wildcard && filter == "#") ||
            (cfg.max_topic_segments != 0 && topic_levels(filter) > cfg.max_topic_segments)) {
            codes.push_back(v5 ? mqtt::reason_code::topic_filter_invalid
                               : mqtt::reason_code::unspecified_error);
            continue;
        }
        if (conn_->rules && !conn_->rules->may_subscribe(req.filter)) {
            // Authorization is checked on the filter as the client wrote it ($share/... too),
            // as TBMQ does.
            spdlog::debug("client {}: SUBSCRIBE to '{}' not authorized", client_id_, req.filter);
            codes.push_back(v5 ? mqtt::reason_code::not_authorized
                               : mqtt::reason_code::unspecified_error);
            continue;
        }
        auto granted = static_cast<mqtt::qos>(
            std::min<std::uint8_t>(static_cast<std::uint8_t>(req.options.qos), cfg.max_qos));
        stored_subscription sub{.filter = std::string(filter),
                                .share_group = std::string(group),
                                .options = req.options,
                                .subscription_id = sub_id};
        sub.options.qos = granted;
        auto key = subscription_records::entry_key(group, filter);
        const bool existed = subscriptions_.contains(key);
        if (!existed && cfg.max_subscriptions_per_client != 0 &&
            subscriptions_.size() >= cfg.max_subscriptions_per_client) {
            core_.probe().subscription_refused();
            spdlog::debug("client {}: SUBSCRIBE to '{}' refused: {} subscriptions already",
                          client_id_, req.filter, subscriptions_.size());
            codes.push_back(v5 ? mqtt::reason_code::quota_exceeded
                               : mqtt::reason_code::unspecified_error);
            continue;
        }
        subscriptions_.insert_or_assign(key, sub);
        core_.trie().subscribe(
            sub.filter, routing::subscription{
                            .client_id = client_id_,
                            .options = {.qos = static_cast<std::uint8_t>(granted),
                                        .no_local = sub.options.no_local,
                                        .retain_as_published = sub.options.retain_as_published,
                                        .retain_handling =
                                            static_cast<std::uint8_t>(sub.options.retain_handling)},
                            .subscription_identifier = sub_id,
                            .share_group = sub.share_group});
        codes.push_back(static_cast<mqtt::reason_code>(granted));
        if (want_subscribed) {
            granted_filters.push_back(req.filter);
        }
        if (group.empty()) {
            retained_candidates.emplace_back(std::move(sub), existed);
        } else if (!existed) {
            new_shared.push_back(std::move(sub));
        }
    }
    app_sync_shared();
    const bool sends_retained = std::any_of(
        retained_candidates.begin(), retained_candidates.end(),
        [](const auto& candidate) { return wants_retained(candidate.first, candidate.second); });
    // Subscriptions this SUBSCRIBE adds: the client was not subscribed through them before.
    std::vector<std::string> fresh_keys;
    if (sends_retained) {
        for (const auto& [sub, existed] : retained_candidates) {
            if (!existed) {
                fresh_keys.push_back(subscription_records::entry_key(sub.share_group, sub.filter));
            }
        }
        for (const auto& sub : new_shared) {
            fresh_keys.push_back(subscription_records::entry_key(sub.share_group, sub.filter));
        }
        if (!conn_->echoes) {
            conn_->echoes = std::make_unique<retained_echoes>();
        }
        conn_->echoes->subscribe_started();
    }
    const std::uint64_t channel_id = conn_->id;
    const std::uint16_t packet_id = s.packet_id;
    write_subscriptions(bind_status(
        [channel_id, packet_id, codes = std::move(codes),
         retained_candidates = std::move(retained_candidates), new_shared = std::move(new_shared),
         granted_filters = std::move(granted_filters), sends_retained,
         fresh_keys = std::move(fresh_keys)](client_actor& a, status st) mutable {
            if (!a.conn_ || a.conn_->id != channel_id) {
                return;  // the connection's echoes went with it
            }
            // Whatever happens below, this SUBSCRIBE stops collecting live copies.
            struct finish_echoes {
                client_actor& a;
                bool started;
                ~finish_echoes() {
                    if (started && a.conn_ && a.conn_->echoes) {
                        a.conn_->echoes->subscribe_finished();
                        a.release_idle_echoes();
                    }
                }
            } finish{a, sends_retained};
            if (!st) {
                for (auto& code : codes) {
                    code = a.conn_->v5() ? mqtt::reason_code::unspecified_error
                                         : mqtt::reason_code::unspecified_error;
                }
            }
            a.send_packet(mqtt::suback{packet_id, codes, {}});
            if (!st) {
                return;
            }
            if (!granted_filters.empty()) {
                a.emit_event(integration::lifecycle_event::subscribed, {},
                             std::move(granted_filters));
            }
            for (auto& [sub, existed] : retained_candidates) {
                if (wants_retained(sub, existed)) {
                    a.deliver_retained(sub, fresh_keys);
                }
            }
            for (const auto& sub : new_shared) {
                a.take_group_inboxes(&sub);
            }
        }));
}

bool client_actor::subscribed_before(std::string_view topic,
                                     const std::vector<std::string>& fresh_keys) const {
    for (const auto& [key, sub] : subscriptions_) {
        if (mqtt::topic_matches(sub.filter, topic) &&
            std::find(fresh_keys.begin(), fresh_keys.end(), key) == fresh_keys.end()) {
            return true;
        }
    }
    return false;
}

void client_actor::deliver_retained(const stored_subscription& sub,
                                    const std::vector<std::string>& fresh_keys) {
    const std::int64_t now = core_.now_ms();
    std::vector<message_ptr> found;
    core_.retained().match(sub.filter, now, [&](const message_ptr& msg) { found.push_back(msg); });
    for (auto& msg : found) {
        if (auto& echoes = conn_->echoes) {
            // A subscription that existed before (this one when it is replaced) owes the topic's
            // live copies: not watched.
            const bool watch =
                retained_echoes::recent(*msg, now) && !subscribed_before(msg->topic, fresh_keys);
            if (!echoes->admit_retained(msg, now, watch)) {
                continue;  // the same or a newer message reached the client live meanwhile
            }
        }
        // A new outgoing packet nothing has paid for yet: charged now (the SUBACK is sent).
        if (core_.quota() != nullptr && !quota_admits_copy()) {
            continue;
        }
        delivery d;
        d.qos = static_cast<mqtt::qos>(std::min(static_cast<std::uint8_t>(msg->qos),
                                                static_cast<std::uint8_t>(sub.options.qos)));
        d.retain = true;  // retained messages sent on subscribe always carry the flag
        if (sub.subscription_id) {
            d.subscription_ids.push_back(*sub.subscription_id);
        }
        d.msg = std::move(msg);
        // Not bounded by outbound_queue_limit: the retained set is already in memory (the
        // queue holds pointers to it) and every matching message was asked for.
        deliver_now(std::move(d), /*bounded=*/false);
    }
}

void client_actor::emit_event(integration::lifecycle_event e, std::string_view reason,
                              std::vector<std::string> topic_filters, const connection_state* c) {
    if (c == nullptr) {
        c = conn_.get();
    }
    lifecycle_facts facts{
        .client_id = client_id_, .reason = reason, .topic_filters = std::move(topic_filters)};
    if (c != nullptr) {
        facts.address = c->channel->remote_address();
        facts.protocol_version = mqtt::to_string(c->version);
    }
    emit_lifecycle_event(core_, e, facts);
}

void client_actor::on_unsubscribe(mqtt::unsubscribe&& u) {
    std::vector<mqtt::reason_code> codes;
    codes.reserve(u.filters.size());
    std::vector<std::string> removed_filters;  // for the UNSUBSCRIBED lifecycle event
    const bool want_unsubscribed =
        core_.integrations().wants_event(integration::lifecycle_event::unsubscribed);
    for (const auto& raw : u.filters) {
        std::string_view filter = raw;
        std::string_view group;
        if (auto shared = mqtt::parse_shared(filter)) {
            group = shared->group;
            filter = shared->filter;
        }
        auto it = subscriptions_.find(subscription_records::entry_key(group, filter));
        if (it == subscriptions_.end()) {
            codes.push_back(mqtt::reason_code::no_subscription_existed);
            continue;
        }
        core_.trie().unsubscribe(it->second.filter, client_id_, it->second.share_group);
        subscriptions_.erase(it);
        codes.push_back(mqtt::reason_code::success);
        if (want_unsubscribed) {
            removed_filters.push_back(raw);
        }
    }
    if (!removed_filters.empty()) {
        emit_event(integration::lifecycle_event::unsubscribed, {}, std::move(removed_filters));
    }
    app_sync_shared();
    const std::uint64_t channel_id = conn_->id;
    const std::uint16_t packet_id = u.packet_id;
    write_subscriptions(
        bind_status([channel_id, packet_id, codes = std::move(codes)](client_actor& a, status) {
            if (a.conn_ && a.conn_->id == channel_id) {
                a.send_packet(mqtt::unsuback{packet_id, codes, {}});
            }
        }));
}

void client_actor::write_subscriptions(std::function<void(status)> done) {
    auto records = subscriptions_journal_.records_for(client_id_, subscriptions_);
    core_.write_subscription_records(
        client_id_, std::move(records),
        [self = shared_from_this(), done = std::move(done)](status st) {
            if (!st) {
                // The log may hold part of what the journal counts as written: the next write
                // starts a new generation, whole.
                spdlog::warn("client {}: writing its subscriptions failed: {}", self->client_id_,
                             st.error().message());
                self->post([](client_actor& a) { a.subscriptions_journal_.restart(); });
            }
            done(st);
        });
}

// ---------------------------------------------------------------------------------------------
// DISCONNECT, close, keep-alive, will, session expiry

void client_actor::on_disconnect(const mqtt::disconnect& d) {
    connection_state& c = *conn_;
    if (c.v5()) {
        if (auto expiry = d.properties.session_expiry_interval) {
            if (session_expiry_ == 0 && *expiry != 0) {
                // Setting a non-zero expiry on DISCONNECT after CONNECT had 0 is a protocol
                // error (MQTT 5.0 section 3.14.2.2.2).
                disconnect_with(mqtt::reason_code::protocol_error,
                                "session expiry set on DISCONNECT after 0 in CONNECT");
                return;
            }
            // 0 ends the session with this connection (end_connection).
            session_expiry_ = std::min(*expiry, core_.cfg().max_session_expiry);
        }
    }
    // 0x04 (Disconnect with Will Message) keeps the will; everything else suppresses it.
    c.will_suppressed = d.reason_code != mqtt::reason_code::disconnect_with_will_message;
    c.closing = true;
    c.channel->close();
    end_connection(metrics::disconnect_reason::client, "client DISCONNECT");
}

void client_actor::on_closed(client_msg::closed&& m) {
    if (!conn_ || conn_->id != m.channel_id) {
        return;
    }
    if (defers_close(m)) {
        return;  // the packets before the close wait (quota tokens, a full window): they go first
    }
    if (m.protocol_error) {
        disconnect_with(*m.protocol_error, m.reason);
        return;
    }
    conn_->closing = true;
    conn_->channel->close();
    end_connection(metrics::disconnect_reason::connection_lost,
                   m.reason.empty() ? "connection closed" : m.reason);
}

void client_actor::disconnect_with(mqtt::reason_code code, std::string_view why) {
    if (!conn_) {
        return;
    }
    connection_state& c = *conn_;
    spdlog::info("client {}: disconnecting with {} ({})", client_id_, mqtt::to_string(code), why);
    if (c.v5()) {
        mqtt::disconnect d;
        d.reason_code = code;
        // A Reason String is always allowed on DISCONNECT; besides helping the operator, it
        // makes clients that ignore a bare reason code (paho-mqtt 2.x) see the code.
        d.properties.reason_string = std::string(why);
        if (c.connack_sent) {
            send_packet(d);
        } else {
            mqtt::connack ack;
            ack.reason_code = code;
            send_packet(ack);
        }
    }
    c.closing = true;
    c.channel->close();
    end_connection(disconnect_reason_of(code), mqtt::to_string(code));
}

void client_actor::on_writability(const client_msg::writability& w) {
    if (!conn_ || conn_->id != w.channel_id) {
        return;
    }
    const bool was = writable_.exchange(w.writable, std::memory_order_acq_rel);
    if (was != w.writable) {
        core_.probe().non_writable_clients(w.writable ? -1 : 1);
    }
    if (!w.writable) {
        end_resume_backoff();  // pump_inbox() stops on the non-writable channel by itself
        return;
    }
    if (!was && persistent_ && type_ == client_type::device && !inflight_.empty()) {
        start_resume_backoff();
    }
    pump_queued();
    pump_inbox();
    pump_app();
    if (!was) {
        take_group_inboxes(nullptr);
    }
}

void client_actor::take_group_inboxes(const stored_subscription* only) {
    // Only persistent DEVICE members take over waiting copies: they have an inbox to keep them
    // in. A congested member leaves them for one that can deliver now.
    if (!persistent_ || type_ != client_type::device || !delivering() ||
        !writable_.load(std::memory_order_relaxed)) {
        return;
    }
    const auto take = [this](const stored_subscription& sub) {
        if (sub.share_group.empty() || sub.options.qos == mqtt::qos::at_most_once) {
            return;
        }
        std::weak_ptr<client_actor> weak = weak_from_this();
        move_group_inbox(core_, client_id_, sub, [weak](std::size_t moved) {
            if (moved == 0) {
                return;
            }
            if (auto self = weak.lock()) {
                self->tell_control(client_msg::inbox_signal{});
            }
        });
    };
    if (only != nullptr) {
        take(*only);
        return;
    }
    for (const auto& [key, sub] : subscriptions_) {
        take(sub);
    }
}

void client_actor::start_resume_backoff() {
    if (core_.cfg().writable_resume_backoff.empty()) {
        return;
    }
    resume_backoff_ = true;
    resume_step_ = 0;
    spdlog::debug(
        "client {}: channel writable again with {} messages in flight; inbox delivery "
        "waits for their acknowledgements",
        client_id_, inflight_.size());
    arm_resume_backoff();
}

void client_actor::arm_resume_backoff() {
    const auto& cfg = core_.cfg();
    auto delay = cfg.writable_resume_backoff[resume_step_];
    if (cfg.writable_resume_jitter.count() > 0) {
        // Jitter spreads the retries of many clients that went writable together (one
        // congested network path); its quality does not matter.
        thread_local std::minstd_rand jitter_rng{std::random_device{}()};
        std::uniform_int_distribution<std::int64_t> jitter(0, cfg.writable_resume_jitter.count());
        delay += std::chrono::milliseconds(jitter(jitter_rng));
    }
    core_.timers().cancel(resume_timer_);
    const std::uint64_t generation = ++resume_generation_;
    const std::uint64_t channel_id = conn_->id;
    std::weak_ptr<client_actor> weak = weak_from_this();
    resume_timer_ = core_.timers().schedule_after(delay, [weak, channel_id, generation] {
        if (auto self = weak.lock()) {
            self->post([channel_id, generation](client_actor& a) {
                a.on_resume_backoff(channel_id, generation);
            });
        }
    });
}

void client_actor::on_resume_backoff(std::uint64_t channel_id, std::uint64_t generation) {
    if (!resume_backoff_ || generation != resume_generation_ || !conn_ || conn_->id != channel_id) {
        return;
    }
    if (!inflight_.empty() && resume_step_ + 1 < core_.cfg().writable_resume_backoff.size()) {
        ++resume_step_;
        arm_resume_backoff();
        return;
    }
    if (!inflight_.empty()) {
        spdlog::debug(
            "client {}: {} messages still unacknowledged after the resume backoff; "
            "delivering from the inbox again",
            client_id_, inflight_.size());
    }
    end_resume_backoff();
    inbox_dirty_ = true;  // re-read the inbox: it is the truth, whatever arrived meanwhile
    pump_inbox();
}

void client_actor::end_resume_backoff() {
    if (!resume_backoff_) {
        return;
    }
    resume_backoff_ = false;
    ++resume_generation_;
    core_.timers().cancel(resume_timer_);
    resume_timer_ = {};
}

void client_actor::arm_keep_alive() {
    const auto deadline = conn_ ? conn_->keep_alive.deadline() : std::nullopt;
    if (!deadline) {
        return;
    }
    const std::uint64_t channel_id = conn_->id;
    std::weak_ptr<client_actor> weak = weak_from_this();
    conn_->keep_alive_timer = core_.timers().schedule_at(*deadline, [weak, channel_id] {
        if (auto self = weak.lock()) {
            self->post([channel_id](client_actor& a) { a.on_keep_alive_timer(channel_id); });
        }
    });
}

void client_actor::on_keep_alive_timer(std::uint64_t channel_id) {
    if (!conn_ || conn_->id != channel_id || conn_->closing) {
        return;
    }
    if (conn_->keep_alive.expired(core_.clock().steady_now())) {
        disconnect_with(mqtt::reason_code::keep_alive_timeout, "keep-alive expired");
        return;
    }
    arm_keep_alive();
}

void client_actor::end_connection(metrics::disconnect_reason cause, std::string_view reason) {
    if (!conn_) {
        return;
    }
    std::unique_ptr<connection_state> c = std::move(conn_);
    conn_.reset();
    core_.timers().cancel(c->keep_alive_timer);
    const bool was_connected = c->connack_sent;
    end_resume_backoff();
    connected_.store(false, std::memory_order_release);
    if (!writable_.exchange(true, std::memory_order_acq_rel)) {
        core_.probe().non_writable_clients(-1);  // derived from live state: never leaks
    }
    pre_connack_.clear();
    drop_held();
    inbound_.connection_ended();
    drop_gated_answers();
    if (!was_connected) {
        if (!session_exists_ || !persistent_) {
            end_session();
        }
        return;
    }
    core_.probe().client_disconnected();
    core_.probe().disconnect_counted(cause);
    spdlog::info("client disconnected: id={} address={} version={} reason={}", client_id_,
                 c->channel->remote_address(), version_name(c->version), reason);
    emit_event(integration::lifecycle_event::disconnected, reason, {}, c.get());

    // Will: published after the will delay or when the session ends, whichever comes first.
    if (c->will && !c->will_suppressed) {
        std::uint32_t delay = c->will->properties.will_delay_interval.value_or(0);
        if (persistent_ && session_expiry_ != session_never_expires) {
            delay = std::min(delay, session_expiry_);
        }
        if (delay == 0 || !persistent_) {
            publish_will(*c->will);
        } else {
            pending_will_ = std::move(c->will);  // the connection is ending
            std::weak_ptr<client_actor> weak = weak_from_this();
            will_timer_ = core_.timers().schedule_after(std::chrono::seconds(delay), [weak] {
                if (auto self = weak.lock()) {
                    self->post([](client_actor& a) {
                        a.will_timer_ = {};
                        if (a.pending_will_ && !a.conn_) {
                            auto will = std::move(a.pending_will_);
                            a.publish_will(*will);
                        }
                    });
                }
            });
        }
    }

    if (!persistent_ || session_expiry_ == 0) {
        end_session();
        return;
    }
    for (const auto& [id, slot] : inflight_) {
        if (slot.entry.from_inbox) {
            sent_before_.insert(id);
        }
    }
    inflight_.clear();
    queued_.clear();
    drop_prefetched();  // still in the inbox: the next connection reads them again
    if (app_) {
        app_->disconnect();
    }
    const std::int64_t now = core_.now_ms();
    if (auto* coordinator = core_.coordinator(); coordinator != nullptr) {
        // Cluster: the session-event handler is the only writer of client.session.
        coordinator->notify_disconnected(client_id_, session_id_, session_expiry_,
                                         !sent_before_.empty());
    } else {
        write_session_record(false, [id = client_id_](status st) {
            if (!st) {
                spdlog::warn("client {}: session record not written: {}", id, st.error().message());
            }
        });
    }
    // The connection's address and protocol stay in the record for the management API.
    auto last = core_.sessions().find_session(client_id_);
    core_.sessions().put_session(
        session_record{.client_id = client_id_,
                       .persistent = true,
                       .connected = false,
                       .session_expiry_interval = session_expiry_,
                       .connected_at_ms = last ? last->connected_at_ms : 0,
                       .disconnected_at_ms = now,
                       .node_id = core_.cfg().node_id,
                       .session_id = session_id_,
                       .type = type_,
                       .unacknowledged = !sent_before_.empty(),
                       .protocol_version = last ? last->protocol_version : 0,
                       .client_address = last ? last->client_address : std::string()});
    arm_session_expiry(now);
}

void client_actor::arm_session_expiry(std::int64_t disconnected_at_ms) {
    if (session_expiry_ == session_never_expires) {
        return;
    }
    const std::int64_t at_ms =
        disconnected_at_ms + static_cast<std::int64_t>(session_expiry_) * 1000;
    const std::int64_t delay_ms = std::max<std::int64_t>(0, at_ms - core_.now_ms());
    const std::uint64_t generation = ++expiry_generation_;
    std::weak_ptr<client_actor> weak = weak_from_this();
    expiry_timer_ =
        core_.timers().schedule_after(std::chrono::milliseconds(delay_ms), [weak, generation] {
            if (auto self = weak.lock()) {
                self->post([generation](client_actor& a) {
                    if (a.expiry_generation_ != generation || a.conn_) {
                        return;  // reconnected since
                    }
                    a.expiry_timer_ = {};
                    spdlog::info("client {}: session expired", a.client_id_);
                    a.end_session();
                });
            }
        });
}

void client_actor::publish_will(const mqtt::will_message& will) {
    mqtt::publish p;
    p.topic = will.topic;
    p.payload = will.payload;
    p.qos = will.qos;
    p.retain = will.retain;
    p.properties = will.properties;
    p.properties.will_delay_interval.reset();
    // A will is a PUBLISH of the client's: the limits of its PUBLISHes apply (QoS, retain and
    // levels were checked at CONNECT).
    if (!incoming_allowed()) {
        core_.probe().message_dropped(metrics::drop_reason::incoming_rate, client_id_, p.topic);
        spdlog::info("client {}: will not published: over the incoming publish rate limit",
                     client_id_);
        return;
    }
    if (p.retain && !p.payload.empty() &&
        !core_.retained().admits(p.topic, p.payload.size(), core_.cfg().max_retained_messages,
                                 core_.cfg().max_retained_bytes)) {
        core_.probe().retained_refused();
        p.retain = false;
    }
    if (core_.quota() != nullptr) {
        const std::int64_t cost = publish_cost(p);
        const auto v = core_.quota()->charge_now(cost);
        quota_report(v, cost);
        if (!ratelimit::is_admitted(v)) {
            core_.probe().message_dropped(metrics::drop_reason::quota, client_id_, p.topic);
            spdlog::info("client {}: will not published: over the throughput quota", client_id_);
            return;
        }
    }
    auto msg = std::make_shared<const app_message>(
        from_publish(p, client_id_, core_.cfg().node_id, core_.now_ms()));
    core_.publish(std::move(msg), [id = client_id_](status st) {
        if (!st) {
            spdlog::warn("client {}: will not published: {}", id, st.error().message());
        }
    });
}

void client_actor::clear_session_state() {
    for (const auto& [key, sub] : subscriptions_) {
        core_.trie().unsubscribe(sub.filter, client_id_, sub.share_group);
    }
    const bool had_subscriptions = !subscriptions_.empty();
    subscriptions_.clear();
    inflight_.clear();
    queued_.clear();
    sent_before_.clear();
    inbound_.clear();
    drop_gated_answers();
    redeliver_all_as_dup_ = false;
    check_stored_deliveries_ = false;
    if (had_subscriptions) {
        write_subscriptions([](status) {});
    }
    if (persistent_ || session_exists_) {
        forget_inbox_state();
        core_.inbox().clear(client_id_, [](status) {});
        core_.metadata().delete_session_context(client_id_, [](status) {});
    }
}

void client_actor::end_session() {
    if (pending_will_) {
        // The session ends before the will delay passed: the will goes now.
        auto will = std::move(pending_will_);
        core_.timers().cancel(will_timer_);
        will_timer_ = {};
        publish_will(*will);
    }
    const bool had_persistent_state = persistent_;
    remove_subscriptions();
    inflight_.clear();
    queued_.clear();
    // Before the record goes: after a restart it is what says the session was an APPLICATION's.
    app_on_session_end();
    core_.sessions().erase_session(client_id_);
    if (auto* coordinator = core_.coordinator(); coordinator != nullptr) {
        if (!session_id_.empty()) {
            coordinator->notify_session_ended(client_id_, session_id_);
        }
        session_id_.clear();
    } else {
        core_.delete_session(client_id_, [](status) {});
    }
    write_subscriptions([](status) {});  // subscriptions_ is empty now: ends the set
    if (had_persistent_state) {
        forget_inbox_state();
        core_.inbox().clear(client_id_, [](status) {});
        core_.metadata().delete_session_context(client_id_, [](status) {});
    }
    session_exists_ = false;
    persistent_ = false;
    check_stored_deliveries_ = false;
    limits_release();
    retire();
}

void client_actor::retire() {
    // The actor outlives its session for a grace period (actors.client.wait-before-*-actor-
    // stop-seconds) so a client that reconnects at once finds it instead of a fresh one.
    const auto grace =
        generated_id_ ? core_.cfg().generated_actor_grace : core_.cfg().named_actor_grace;
    if (grace.count() <= 0 || core_.stopping()) {
        stop_actor();
        return;
    }
    const std::uint64_t generation = ++retire_generation_;
    std::weak_ptr<client_actor> weak = weak_from_this();
    retire_timer_ = core_.timers().schedule_after(grace, [weak, generation] {
        if (auto self = weak.lock()) {
            self->post([generation](client_actor& a) {
                if (a.retire_generation_ == generation && !a.conn_ && !a.session_exists_) {
                    a.stop_actor();
                }
            });
        }
    });
}

void client_actor::stop_actor() {
    if (stopped_) {
        return;
    }
    stopped_ = true;
    if (!session_exists_) {
        limits_release();  // a CONNECT that reserved a unit and never got its session
    }
    core_.timers().cancel(expiry_timer_);
    core_.sessions().remove_actor(client_id_, this);
    // Messages already queued still run (a CONNECT that raced with the stop is forwarded to
    // the next actor by on_connect); deliveries to a stopped actor are dropped.
}

void client_actor::write_session_record(bool connected, std::function<void(status)> done) {
    session_record r{.client_id = client_id_,
                     .persistent = persistent_,
                     .connected = connected,
                     .session_expiry_interval = session_expiry_,
                     .connected_at_ms = connected ? core_.now_ms() : 0,
                     .disconnected_at_ms = connected ? 0 : core_.now_ms(),
                     .node_id = core_.cfg().node_id,
                     .type = type_,
                     .unacknowledged = !connected && !sent_before_.empty()};
    if (conn_) {
        r.protocol_version = static_cast<std::uint32_t>(conn_->version);
        r.client_address = conn_->channel->remote_address();
    } else if (auto last = core_.sessions().find_session(client_id_)) {
        r.protocol_version = last->protocol_version;
        r.client_address = last->client_address;
    }
    core_.write_session(r, std::move(done));
}

void client_actor::restore_offline_session(std::uint32_t session_expiry_interval,
                                           std::int64_t disconnected_at_ms,
                                           std::vector<stored_subscription> subscriptions,
                                           bool may_have_sent, std::function<void()> restored,
                                           std::string session_id,
                                           std::uint64_t subscriptions_generation) {
    post([=, subs = std::move(subscriptions), restored = std::move(restored),
          session_id = std::move(session_id)](client_actor& a) mutable {
        a.session_id_ = std::move(session_id);
        a.persistent_ = true;
        a.session_exists_ = true;
        a.session_expiry_ = session_expiry_interval;
        // Which messages were sent before the node went down is known only in memory: if the
        // session was connected (a crash) or its last connection left some unacknowledged,
        // every pending one goes with DUP, as it might be a re-delivery (MQTT-3.3.1-1).
        a.redeliver_all_as_dup_ = may_have_sent;
        for (auto& sub : subs) {
            a.add_subscription(std::move(sub));
        }
        // This node's own records: later changes continue their generation.
        a.subscriptions_journal_.adopt(subscriptions_generation, a.subscriptions_);
        a.limits_on_restored();
        const bool expired =
            session_expiry_interval != session_never_expires &&
            disconnected_at_ms + static_cast<std::int64_t>(session_expiry_interval) * 1000 <=
                a.core_.now_ms();
        if (expired) {
            // Expiry 0 (a session that was to end with its connection) or an interval that
            // passed while the node was down: it ends before any CONNECT can resume it.
            spdlog::info("client {}: session expired while the node was down", a.client_id_);
            a.end_session();
        } else {
            a.arm_session_expiry(disconnected_at_ms);
        }
        if (restored) {
            restored();
        }
    });
}

void client_actor::leave_connection(mqtt::reason_code code, std::string_view why,
                                    std::string server_reference,
                                    metrics::disconnect_reason reason) {
    connection_state& c = *conn_;
    if (c.v5() && c.connack_sent) {
        mqtt::disconnect d;
        d.reason_code = code;
        d.properties.reason_string = std::string(why);
        if (!server_reference.empty()) {
            d.properties.server_reference = std::move(server_reference);
        }
        send_packet(d);
    }
    c.will_suppressed = true;  // the server is leaving, not the client
    c.closing = true;
    c.channel->close();
    end_connection(reason, why);
}

void client_actor::drain_disconnect(std::string server_reference, std::function<void(bool)> done) {
    auto shared_done = std::make_shared<std::function<void(bool)>>(std::move(done));
    const bool posted = post_admin(
        [server_reference = std::move(server_reference), shared_done](client_actor& a) mutable {
            const bool acted = !a.stopped_ && a.conn_ && a.conn_->connack_sent && !a.conn_->closing;
            if (acted) {
                spdlog::debug("client {}: disconnected, the node drains", a.client_id_);
                const auto code = server_reference.empty() ? mqtt::reason_code::server_shutting_down
                                                           : mqtt::reason_code::use_another_server;
                a.leave_connection(code, "the node is draining", std::move(server_reference),
                                   metrics::disconnect_reason::drained);
            }
            if (*shared_done) {
                (*shared_done)(acted);
            }
        });
    if (!posted && *shared_done) {
        (*shared_done)(false);
    }
}

void client_actor::on_shutdown(client_msg::shutdown&& m) {
    if (conn_) {
        leave_connection(mqtt::reason_code::server_shutting_down, "server shutting down", {},
                         metrics::disconnect_reason::server_shutdown);
    }
    if (!m.done) {
        return;
    }
    if (app_) {
        // The APPLICATION context's last save must reach the store before the node stops.
        app_->when_saved(std::move(m.done));
        return;
    }
    m.done();
}

// ---------------------------------------------------------------------------------------------
// Throughput quota (mqtt.rate-limits.total; docs/backpressure.md "Throughput quota")

std::int64_t client_actor::publish_cost(const mqtt::publish& p) const {
    // Every actor dispatcher thread matches the trie here; registration nests and lives until
    // the thread exits.
    thread_local routing::rcu_reader_registration rcu_reader;
    // The fan-out as the router will see it: one per persistent subscriber that gets a stored
    // copy (QoS > 0 publish, QoS > 0 subscription, persistent session) and one per shared
    // group, computed now whether or not those subscribers are online.
    thread_local std::vector<std::string> stored;
    thread_local std::vector<std::string> groups;
    stored.clear();
    groups.clear();
    const bool qos0 = p.qos == mqtt::qos::at_most_once;
    core_.trie().match(p.topic, [&](std::string_view filter, const routing::subscription& s) {
        if (!s.share_group.empty()) {
            std::string key(s.share_group);
            key.push_back('\0');
            key.append(filter);
            groups.push_back(std::move(key));
            return;
        }
        if (qos0 || s.options.qos == 0 || (s.options.no_local && s.client_id == client_id_)) {
            return;
        }
        stored.emplace_back(s.client_id);
    });
    std::sort(stored.begin(), stored.end());
    stored.erase(std::unique(stored.begin(), stored.end()), stored.end());
    std::sort(groups.begin(), groups.end());
    groups.erase(std::unique(groups.begin(), groups.end()), groups.end());
    std::int64_t fan_out = static_cast<std::int64_t>(groups.size());
    for (const auto& id : stored) {
        auto session = core_.sessions().find_session(id);
        if (session && session->persistent) {
            ++fan_out;
        }
    }
    return 1 + fan_out;
}

void client_actor::quota_report(ratelimit::quota_verdict v, std::int64_t cost) {
    switch (v) {
        case ratelimit::quota_verdict::admitted:
            core_.probe().quota_charged(cost);
            break;
        case ratelimit::quota_verdict::admitted_in_grace:
            core_.probe().quota_admitted_in_grace(cost);
            break;
        case ratelimit::quota_verdict::refused:
            core_.probe().quota_refused();
            core_.probe().message_dropped(metrics::drop_reason::quota);
            break;
        case ratelimit::quota_verdict::degraded:
            core_.probe().quota_degraded();
            core_.probe().message_dropped(metrics::drop_reason::quota);
            break;
    }
}

bool client_actor::quota_admits_publish(mqtt::publish& p) {
    const std::int64_t cost = publish_cost(p);
    const std::uint64_t seq = ++quota_seq_;
    auto v = core_.quota()->charge(
        cost, [self = shared_from_this(), seq, cost](ratelimit::quota_verdict verdict) {
            self->post(
                [seq, cost, verdict](client_actor& a) { a.on_quota_verdict(seq, cost, verdict); });
        });
    if (!v) {
        quota_charging_ = std::make_unique<mqtt::publish>(std::move(p));
        quota_channel_ = conn_->id;
        core_.probe().quota_waiting(1);
        core_.probe().quota_charge_waited();
        return false;
    }
    quota_report(*v, cost);
    if (ratelimit::is_admitted(*v)) {
        return true;
    }
    refuse_publish(p, *v);
    return false;
}

void client_actor::refuse_publish(const mqtt::publish& p, ratelimit::quota_verdict v) {
    // As the incoming rate limit (TBMQ): v5 QoS 1/2 get PUBACK/PUBREC 0x97 Quota exceeded, v5
    // QoS 0 nothing; v3 has no negative acknowledgement, so the client is disconnected. Only
    // this not-yet-acknowledged PUBLISH is refused; nothing already accepted is discarded.
    spdlog::debug(
        "client {}: PUBLISH to '{}' refused by the throughput quota ({})", client_id_, p.topic,
        v == ratelimit::quota_verdict::degraded ? "shared bucket unreachable" : "budget spent");
    answer_refused_publish(p, mqtt::reason_code::quota_exceeded,
                           "over the cluster throughput quota");
}

void client_actor::answer_refused_publish(const mqtt::publish& p, mqtt::reason_code v3_reason,
                                          std::string_view why) {
    if (!conn_->v5()) {
        disconnect_with(v3_reason, why);
        return;
    }
    answer_publish_now(p, mqtt::reason_code::quota_exceeded);
}

void client_actor::answer_publish_now(const mqtt::publish& p, mqtt::reason_code code) {
    if (p.qos == mqtt::qos::at_most_once) {
        return;
    }
    // Sent behind the acknowledgements still waiting for the log, so PUBACKs leave in the
    // order the PUBLISHes came.
    inbound_.decide(p.packet_id, code);
    flush_acks();
}

void client_actor::on_quota_verdict(std::uint64_t seq, std::int64_t cost,
                                    ratelimit::quota_verdict v) {
    quota_report(v, cost);
    if (seq != quota_seq_ || !quota_charging_) {
        return;  // its connection ended meanwhile
    }
    mqtt::publish p = std::move(*quota_charging_);
    quota_charging_.reset();
    core_.probe().quota_waiting(-1);
    if (!conn_ || conn_->id != quota_channel_) {
        drop_held();
        return;
    }
    if (ratelimit::is_admitted(v)) {
        admit_publish(std::move(p));
    } else {
        refuse_publish(p, v);
    }
    release_held();  // the packets that arrived meanwhile, in order
}

void client_actor::quota_forget_charge() {
    if (quota_charging_) {
        quota_charging_.reset();
        core_.probe().quota_waiting(-1);
    }
}

// ---------------------------------------------------------------------------------------------
// Inbound flow control (client_actor.h, held_)

namespace {
// Packets held behind a PUBLISH waiting for quota tokens. The wait is one store round trip (at
// most the lease's answer timeout), so a well-behaved client never comes near it; a client that
// floods during a Redis stall is disconnected (0x97) rather than held without bound.
constexpr std::size_t quota_hold_limit = 1000;

bool is_acknowledged_publish(const mqtt::packet& p) {
    const auto* publish = std::get_if<mqtt::publish>(&p);
    return publish != nullptr && publish->qos != mqtt::qos::at_most_once;
}
}  // namespace

bool client_actor::must_wait(const mqtt::packet& p) const {
    if (quota_charging_) {
        return true;
    }
    // Subscriptions of a session taken over from another node are still being adopted: a
    // SUBSCRIBE / UNSUBSCRIBE waits for them, or it would change (and write) a set that does
    // not hold them yet — an UNSUBSCRIBE would then be undone by the adoption.
    if (adopting_subscriptions_ && (std::holds_alternative<mqtt::subscribe>(p) ||
                                    std::holds_alternative<mqtt::unsubscribe>(p))) {
        return true;
    }
    // At 3.1.1 the window counts the PUBLISHes not answered yet (PUBACK / PUBREC: the log
    // writes in progress). A QoS 2 exchange whose PUBREC went out no longer counts: the client
    // may well wait for every PUBREC before it sends any PUBREL.
    return !conn_->v5() && is_acknowledged_publish(p) &&
           inbound_.unsent() + ids_gated_.size() >= core_.cfg().max_in_flight;
}

void client_actor::hold_packet(mqtt::packet&& p) {
    const bool for_quota = quota_charging_ != nullptr;
    // The connection stops reading while packets wait, so what is held is bounded by what was
    // already read: its mailbox (settings::mailbox_capacity) and one read's worth.
    const std::size_t limit =
        for_quota ? quota_hold_limit : core_.cfg().mailbox_capacity + pre_connack_limit;
    if (held_.size() >= limit) {
        if (for_quota) {
            disconnect_with(mqtt::reason_code::quota_exceeded,
                            "too many packets behind a PUBLISH waiting for quota tokens");
        } else {
            disconnect_with(mqtt::reason_code::receive_maximum_exceeded,
                            "too many packets behind a full inbound window or a session "
                            "being adopted");
        }
        return;
    }
    if (held_.empty()) {
        conn_->channel->hold_reading(true);
    }
    if (for_quota) {
        core_.probe().quota_waiting(1);
    }
    held_.push_back(held_packet{.packet = std::move(p), .for_quota = for_quota});
}

void client_actor::release_held() {
    if (releasing_held_) {
        return;  // a packet being handled below freed the window: the loop goes on by itself
    }
    releasing_held_ = true;
    const std::uint64_t channel = conn_ ? conn_->id : 0;
    while (!held_.empty() && conn_ && conn_->id == channel && !must_wait(held_.front().packet)) {
        held_packet next = std::move(held_.front());
        held_.pop_front();
        if (next.for_quota) {
            core_.probe().quota_waiting(-1);
        }
        handle_packet(std::move(next.packet));
    }
    releasing_held_ = false;
    if (!conn_ || conn_->id != channel) {
        return;
    }
    if (held_.empty()) {
        conn_->channel->hold_reading(false);
        if (!quota_charging_ && deferred_close_) {
            client_msg::closed closed = std::move(*deferred_close_);
            deferred_close_.reset();
            on_closed(std::move(closed));
        }
    }
}

bool client_actor::defers_close(client_msg::closed& m) {
    if ((held_.empty() && !quota_charging_) || !conn_ || conn_->id != m.channel_id ||
        m.protocol_error) {
        return false;
    }
    deferred_close_ = std::make_unique<client_msg::closed>(std::move(m));
    return true;
}

void client_actor::drop_held() {
    std::int64_t for_quota = 0;
    for (const auto& h : held_) {
        for_quota += h.for_quota ? 1 : 0;
    }
    if (for_quota != 0) {
        core_.probe().quota_waiting(-for_quota);
    }
    held_.clear();
    deferred_close_.reset();
    quota_forget_charge();
}

bool client_actor::quota_admits_copy() {
    const auto v = core_.quota()->charge_now(1);
    quota_report(v, 1);
    return ratelimit::is_admitted(v);
}

}  // namespace starling::broker
