#include "integration/mqtt_target_sender.h"

#include "starling/clock.h"

#include "integration/http_payload.h"
#include <MQTTAsync.h>
#include <spdlog/spdlog.h>

#include <vector>

namespace starling::integration {
namespace {

using clock = std::chrono::steady_clock;
constexpr std::chrono::milliseconds max_backoff{10'000};

std::string reason_of(int code, const char* message) {
    std::string out = message != nullptr ? message : MQTTAsync_strerror(code);
    return out + " (" + std::to_string(code) + ")";
}

// --- Paho callbacks: context = the sender, or an attempt_context ---------------------------
void connected_cb(void* context, char* /*cause*/) {
    static_cast<mqtt_target_sender*>(context)->on_connected();
}
void connect_succeeded_cb(void* context, MQTTAsync_successData*) {
    static_cast<mqtt_target_sender*>(context)->on_connected();
}
void connect_succeeded5_cb(void* context, MQTTAsync_successData5*) {
    static_cast<mqtt_target_sender*>(context)->on_connected();
}
void connect_failed_cb(void* context, MQTTAsync_failureData* r) {
    static_cast<mqtt_target_sender*>(context)->on_connect_failed(
        r != nullptr ? reason_of(r->code, r->message) : "connect failed");
}
void connect_failed5_cb(void* context, MQTTAsync_failureData5* r) {
    static_cast<mqtt_target_sender*>(context)->on_connect_failed(
        r != nullptr ? reason_of(r->code, r->message) + " reason code " +
                           std::to_string(static_cast<int>(r->reasonCode))
                     : "connect failed");
}
void connection_lost_cb(void* context, char* cause) {
    static_cast<mqtt_target_sender*>(context)->on_connection_lost(
        cause != nullptr ? cause : "connection lost");
}
int message_arrived_cb(void*, char* topic, int, MQTTAsync_message* message) {
    // Nothing is subscribed; a broker that sends anyway is ignored.
    MQTTAsync_freeMessage(&message);
    MQTTAsync_free(topic);
    return 1;
}
void sent_cb(void* context, MQTTAsync_successData*) {
    auto* ctx = static_cast<mqtt_target_sender::attempt_context*>(context);
    ctx->self->on_attempt_done(ctx, {true, {}});
}
void sent5_cb(void* context, MQTTAsync_successData5* r) {
    auto* ctx = static_cast<mqtt_target_sender::attempt_context*>(context);
    // MQTT 5: a PUBACK / PUBREC with a reason code of 0x80 or more is a refusal.
    if (r != nullptr && r->reasonCode >= 0x80) {
        ctx->self->on_attempt_done(ctx,
                                   {false, "MQTT: the broker refused the PUBLISH, reason code " +
                                               std::to_string(static_cast<int>(r->reasonCode))});
        return;
    }
    ctx->self->on_attempt_done(ctx, {true, {}});
}
void send_failed_cb(void* context, MQTTAsync_failureData* r) {
    auto* ctx = static_cast<mqtt_target_sender::attempt_context*>(context);
    ctx->self->on_attempt_done(
        ctx, {false, "MQTT: " + (r != nullptr ? reason_of(r->code, r->message) : "send failed")});
}
void send_failed5_cb(void* context, MQTTAsync_failureData5* r) {
    auto* ctx = static_cast<mqtt_target_sender::attempt_context*>(context);
    ctx->self->on_attempt_done(
        ctx, {false, "MQTT: " + (r != nullptr ? reason_of(r->code, r->message) + " reason code " +
                                                    std::to_string(static_cast<int>(r->reasonCode))
                                              : "send failed")});
}

void add_string(MQTTProperties& props, MQTTPropertyCodes code, const std::string& value) {
    MQTTProperty p{};
    p.identifier = code;
    p.value.data.data = const_cast<char*>(value.data());
    p.value.data.len = static_cast<int>(value.size());
    MQTTProperties_add(&props, &p);  // copies
}

// The message's MQTT 5 properties that a subscriber of the far side should see.
MQTTProperties forwarded_properties(const broker::app_message& msg, std::int64_t now_ms) {
    MQTTProperties props = MQTTProperties_initializer;
    const auto& p = msg.properties;
    if (p.payload_format_indicator) {
        MQTTProperty f{};
        f.identifier = MQTTPROPERTY_CODE_PAYLOAD_FORMAT_INDICATOR;
        f.value.byte = *p.payload_format_indicator;
        MQTTProperties_add(&props, &f);
    }
    if (msg.expires_at_ms != 0) {
        MQTTProperty e{};
        e.identifier = MQTTPROPERTY_CODE_MESSAGE_EXPIRY_INTERVAL;
        e.value.integer4 = msg.remaining_expiry_seconds(now_ms);
        MQTTProperties_add(&props, &e);
    }
    if (p.content_type) {
        add_string(props, MQTTPROPERTY_CODE_CONTENT_TYPE, *p.content_type);
    }
    if (p.response_topic) {
        add_string(props, MQTTPROPERTY_CODE_RESPONSE_TOPIC, *p.response_topic);
    }
    if (p.correlation_data) {
        add_string(props, MQTTPROPERTY_CODE_CORRELATION_DATA, *p.correlation_data);
    }
    for (const auto& [key, value] : p.user_properties) {
        MQTTProperty u{};
        u.identifier = MQTTPROPERTY_CODE_USER_PROPERTY;
        u.value.data.data = const_cast<char*>(key.data());
        u.value.data.len = static_cast<int>(key.size());
        u.value.value.data = const_cast<char*>(value.data());
        u.value.value.len = static_cast<int>(value.size());
        MQTTProperties_add(&props, &u);
    }
    return props;
}

}  // namespace

mqtt_target_sender::mqtt_target_sender(const definition& d)
    : target_(d.mqtt), payload_(d.payload), integration_id_(d.id) {
    const bool v6 = target_.host.find(':') != std::string::npos;
    uri_ = std::string(target_.tls ? "ssl://" : "tcp://") + (v6 ? "[" : "") + target_.host +
           (v6 ? "]" : "") + ":" + std::to_string(target_.port);
}

mqtt_target_sender::~mqtt_target_sender() {
    stop();
    if (supervisor_.joinable()) {
        supervisor_.request_stop();
        supervisor_.join();
    }
    if (client_ != nullptr) {
        MQTTAsync handle = client_;
        MQTTAsync_destroy(&handle);  // no callback comes after this
        client_ = nullptr;
    }
}

status mqtt_target_sender::start() {
    MQTTAsync_createOptions create = MQTTAsync_createOptions_initializer;
    if (target_.mqtt_version == 5) {
        create.MQTTVersion = MQTTVERSION_5;
    }
    create.sendWhileDisconnected = 0;
    MQTTAsync handle = nullptr;
    int rc = MQTTAsync_createWithOptions(&handle, uri_.c_str(), target_.client_id.c_str(),
                                         MQTTCLIENT_PERSISTENCE_NONE, nullptr, &create);
    if (rc != MQTTASYNC_SUCCESS) {
        spdlog::error("integration {}: MQTT client for {} not created: {}", integration_id_, uri_,
                      MQTTAsync_strerror(rc));
        return make_error_code(std::errc::invalid_argument);
    }
    client_ = handle;
    MQTTAsync_setCallbacks(handle, this, connection_lost_cb, message_arrived_cb, nullptr);
    MQTTAsync_setConnected(handle, this, connected_cb);
    supervisor_ = std::jthread([this](std::stop_token stop) { supervise(stop); });
    return {};
}

void mqtt_target_sender::owner_changed(bool owner) {
    {
        std::lock_guard lock(mutex_);
        wanted_ = owner;
        next_connect_ = clock::now();
        backoff_ = std::chrono::milliseconds(100);
    }
    wake_.notify_all();
}

void mqtt_target_sender::supervise(std::stop_token stop) {
    std::unique_lock lock(mutex_);
    while (!stop.stop_requested() && !stopping_) {
        const auto now = clock::now();
        // Attempts past their deadline fail (a broker that never acknowledges).
        std::vector<std::function<void(send_outcome)>> expired;
        for (auto it = in_flight_.begin(); it != in_flight_.end();) {
            if (it->second.deadline <= now) {
                expired.push_back(std::move(it->second.done));
                it = in_flight_.erase(it);
            } else {
                ++it;
            }
        }
        const bool connect_now = wanted_ && !connected_ && !connecting_ && now >= next_connect_;
        const bool disconnect_now = !wanted_ && (connected_ || connecting_);
        if (connect_now) {
            connecting_ = true;
        }
        if (disconnect_now) {
            connected_ = false;
            connecting_ = false;
        }
        lock.unlock();
        for (auto& done : expired) {
            done({false, "MQTT: no acknowledgement within " +
                             std::to_string(target_.delivery_timeout.count()) + " ms"});
        }
        if (disconnect_now) {
            MQTTAsync_disconnectOptions opts = MQTTAsync_disconnectOptions_initializer;
            opts.timeout = 1000;
            MQTTAsync_disconnect(client_, &opts);
            spdlog::info("integration {}: another node sends now; disconnected from {}",
                         integration_id_, uri_);
            fail_all("MQTT: disconnected (another node sends now)");
        }
        if (connect_now) {
            const bool v5 = target_.mqtt_version == 5;
            MQTTAsync_connectOptions opts = MQTTAsync_connectOptions_initializer;
            if (v5) {
                opts = MQTTAsync_connectOptions_initializer5;
            }
            opts.keepAliveInterval = static_cast<int>(target_.keep_alive.count());
            opts.connectTimeout = static_cast<int>((target_.connect_timeout.count() + 999) / 1000);
            opts.automaticReconnect = 0;  // the supervisor reconnects, only while wanted
            opts.context = this;
            MQTTProperties props = MQTTProperties_initializer;
            if (v5) {
                opts.cleanstart = target_.clean_start ? 1 : 0;
                opts.onSuccess5 = connect_succeeded5_cb;
                opts.onFailure5 = connect_failed5_cb;
                if (target_.session_expiry != 0) {
                    MQTTProperty p{};
                    p.identifier = MQTTPROPERTY_CODE_SESSION_EXPIRY_INTERVAL;
                    p.value.integer4 = target_.session_expiry;
                    MQTTProperties_add(&props, &p);
                    opts.connectProperties = &props;
                }
            } else {
                opts.cleansession = target_.clean_start ? 1 : 0;
                opts.onSuccess = connect_succeeded_cb;
                opts.onFailure = connect_failed_cb;
            }
            if (!target_.username.empty()) {
                opts.username = target_.username.c_str();
                opts.password = target_.password.c_str();
            }
            MQTTAsync_SSLOptions ssl = MQTTAsync_SSLOptions_initializer;
            if (target_.tls) {
                ssl.trustStore = target_.ca_file.empty() ? nullptr : target_.ca_file.c_str();
                ssl.enableServerCertAuth = target_.verify_tls ? 1 : 0;
                ssl.verify = target_.verify_tls ? 1 : 0;
                opts.ssl = &ssl;
            }
            const int rc = MQTTAsync_connect(client_, &opts);
            MQTTProperties_free(&props);
            if (rc != MQTTASYNC_SUCCESS) {
                on_connect_failed(reason_of(rc, nullptr));
            }
        }
        lock.lock();
        wake_.wait_for(lock, stop, std::chrono::milliseconds(100), [this] {
            return stopping_ ||
                   (wanted_ && !connected_ && !connecting_ && clock::now() >= next_connect_);
        });
    }
}

void mqtt_target_sender::on_connected() {
    {
        std::lock_guard lock(mutex_);
        if (connected_) {
            return;  // both the connect's onSuccess and the connected callback report it
        }
        connected_ = true;
        connecting_ = false;
        // The backoff is reset by the first acknowledged PUBLISH, not here: a broker that
        // accepts and then drops the connection at once is retried with a growing delay.
        last_error_.clear();
    }
    spdlog::info("integration {}: connected to {} as {}", integration_id_, uri_, target_.client_id);
}

void mqtt_target_sender::on_connect_failed(std::string reason) {
    {
        std::lock_guard lock(mutex_);
        connecting_ = false;
        connected_ = false;
        if (reason != last_error_) {
            spdlog::warn("integration {}: cannot connect to {}: {}", integration_id_, uri_, reason);
        }
        last_error_ = std::move(reason);
        next_connect_ = clock::now() + backoff_;
        backoff_ = std::min(backoff_ * 2, max_backoff);
    }
    wake_.notify_all();
}

void mqtt_target_sender::on_connection_lost(std::string reason) {
    {
        std::lock_guard lock(mutex_);
        connected_ = false;
        connecting_ = false;
        last_error_ = "connection lost: " + reason;
        next_connect_ = clock::now() + backoff_;
        backoff_ = std::min(backoff_ * 2, max_backoff);
    }
    spdlog::warn("integration {}: connection to {} lost: {}", integration_id_, uri_, reason);
    fail_all("MQTT: connection to " + uri_ + " lost");
    wake_.notify_all();
}

void mqtt_target_sender::on_attempt_done(attempt_context* ctx, send_outcome outcome) {
    std::function<void(send_outcome)> done;
    {
        std::lock_guard lock(mutex_);
        if (auto it = in_flight_.find(ctx->id); it != in_flight_.end()) {
            done = std::move(it->second.done);
            in_flight_.erase(it);
        }
        if (outcome.ok) {
            backoff_ = std::chrono::milliseconds(100);  // the connection works
        }
        contexts_.erase(ctx);  // Paho is done with it
    }
    if (done) {
        done(std::move(outcome));
    }
}

void mqtt_target_sender::fail_all(const std::string& reason) {
    std::map<std::uint64_t, attempt> failed;
    {
        std::lock_guard lock(mutex_);
        failed.swap(in_flight_);
    }
    for (auto& [id, a] : failed) {
        a.done({false, reason});
    }
}

void mqtt_target_sender::send(const broker::app_message& msg,
                              std::function<void(send_outcome)> done) {
    const http_body body = make_http_body(msg, payload_);
    MQTTProperties props = MQTTProperties_initializer;
    if (target_.mqtt_version == 5) {
        props = forwarded_properties(msg, system_clock::instance().epoch_ms());
    }
    publish(expand_template(target_.topic_template, msg.topic, msg.publisher_id), body.body, &props,
            std::move(done));
    MQTTProperties_free(&props);
}

void mqtt_target_sender::send_event(std::string_view /*event*/, const std::string& client_id,
                                    const std::string& json,
                                    std::function<void(send_outcome)> done) {
    MQTTProperties props = MQTTProperties_initializer;
    if (target_.mqtt_version == 5) {
        add_string(props, MQTTPROPERTY_CODE_CONTENT_TYPE, "application/json");
    }
    publish(expand_template(target_.event_topic_template, "", client_id), json, &props,
            std::move(done));
    MQTTProperties_free(&props);
}

void mqtt_target_sender::publish(const std::string& topic, const std::string& payload,
                                 MQTTProperties* properties,
                                 std::function<void(send_outcome)> done) {
    const bool v5 = target_.mqtt_version == 5;
    attempt_context* ctx = nullptr;
    std::string refusal;
    {
        std::lock_guard lock(mutex_);
        if (stopping_) {
            refusal = "stopping";
        } else if (!connected_) {
            refusal = "MQTT: not connected to " + uri_ +
                      (last_error_.empty() ? std::string() : " (" + last_error_ + ")");
        } else {
            auto owned = std::make_unique<attempt_context>(attempt_context{this, ++next_id_});
            ctx = owned.get();
            contexts_.emplace(ctx, std::move(owned));
            in_flight_.emplace(ctx->id,
                               attempt{std::move(done), clock::now() + target_.delivery_timeout});
        }
    }
    if (ctx == nullptr) {
        done({false, std::move(refusal)});  // outside the lock: it may wake the executor
        return;
    }
    MQTTAsync_message m = MQTTAsync_message_initializer;
    m.payload = const_cast<char*>(payload.data());
    m.payloadlen = static_cast<int>(payload.size());
    m.qos = target_.qos;
    m.retained = target_.retain ? 1 : 0;
    if (v5 && properties != nullptr) {
        m.properties = *properties;  // sendMessage copies them; the caller frees its own
    }
    MQTTAsync_responseOptions opts = MQTTAsync_responseOptions_initializer;
    opts.context = ctx;
    if (v5) {
        opts.onSuccess5 = sent5_cb;
        opts.onFailure5 = send_failed5_cb;
    } else {
        opts.onSuccess = sent_cb;
        opts.onFailure = send_failed_cb;
    }
    const int rc = MQTTAsync_sendMessage(client_, topic.c_str(), &m, &opts);  // copies it
    if (rc != MQTTASYNC_SUCCESS) {
        // Not queued: no callback will come for this context.
        on_attempt_done(ctx, {false, "MQTT: " + reason_of(rc, nullptr)});
    }
}

void mqtt_target_sender::stop() {
    {
        std::lock_guard lock(mutex_);
        if (stopping_) {
            return;
        }
        stopping_ = true;
        wanted_ = false;
    }
    wake_.notify_all();
    if (supervisor_.joinable()) {
        supervisor_.request_stop();
        supervisor_.join();
    }
    fail_all("stopping");
    if (client_ != nullptr && MQTTAsync_isConnected(client_) != 0) {
        MQTTAsync_disconnectOptions opts = MQTTAsync_disconnectOptions_initializer;
        opts.timeout = 1000;
        MQTTAsync_disconnect(client_, &opts);
    }
}

}  // namespace starling::integration
