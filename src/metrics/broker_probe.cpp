#include "metrics/broker_probe.h"

#include "base/assert.h"
#include "metrics/drop_log.h"
#include "starling/clock.h"

#include <prometheus/counter.h>
#include <prometheus/gauge.h>
#include <prometheus/registry.h>

#include <map>
#include <string>

namespace starling::metrics {
namespace {

constexpr std::array<std::string_view, drop_reason_count> drop_reason_names{
    "non_writable", "incoming_rate",    "outgoing_rate",     "device_persisted_limit",
    "quota",        "queue_trim",       "expired",           "no_usable_shared_member",
    "offline",      "packet_too_large", "mailbox_full",      "not_authorized",
    "topic_levels", "retained_limit",   "integration_event",
};
static_assert(static_cast<std::size_t>(drop_reason::integration_event) + 1 == drop_reason_count);

prometheus::Gauge& gauge(prometheus::Registry& registry, const std::string& name,
                         const std::string& help) {
    return prometheus::BuildGauge().Name(name).Help(help).Register(registry).Add({});
}

// One counter per QoS level, all registered up front so each series starts at 0.
std::array<prometheus::Counter*, 3> per_qos(prometheus::Registry& registry, const std::string& name,
                                            const std::string& help) {
    auto& family = prometheus::BuildCounter().Name(name).Help(help).Register(registry);
    return {&family.Add({{"qos", "0"}}), &family.Add({{"qos", "1"}}), &family.Add({{"qos", "2"}})};
}

}  // namespace

constexpr std::array<std::string_view, disconnect_reason_count> disconnect_reason_names{
    "client",         "connection_lost", "keep_alive_timeout",
    "taken_over",     "server_shutdown", "admin",
    "protocol_error", "policy",          "drained"};
static_assert(static_cast<std::size_t>(disconnect_reason::drained) + 1 == disconnect_reason_count);

std::string_view to_string(disconnect_reason reason) {
    return disconnect_reason_names[static_cast<std::size_t>(reason)];
}

std::string_view to_string(drop_reason reason) {
    return drop_reason_names[static_cast<std::size_t>(reason)];
}

bool drop_reason_from_string(std::string_view name, drop_reason& out) {
    for (std::size_t i = 0; i < drop_reason_count; ++i) {
        if (drop_reason_names[i] == name) {
            out = static_cast<drop_reason>(i);
            return true;
        }
    }
    return false;
}

broker_probe::broker_probe(prometheus::Registry& registry)
    : connected_(gauge(registry, "connectedSessions", "MQTT clients connected to this node")),
      sessions_(gauge(registry, "allClientSessions",
                      "Client sessions known to the cluster, connected or not")),
      subscriptions_(
          gauge(registry, "clientSubscriptions", "Topic subscriptions of all client sessions")),
      retained_(gauge(registry, "retainedMessages", "Retained messages stored")),
      last_will_clients_(
          gauge(registry, "lastWillClients", "Connected clients that registered a will message")),
      non_writable_clients_(gauge(registry, "nonWritableClients",
                                  "Connections over their write-buffer high water mark")),
      received_(per_qos(registry, "incomingPublishMsgs_total",
                        "PUBLISH packets received from clients, by QoS")),
      sent_(per_qos(registry, "outgoingPublishMsgs_total",
                    "PUBLISH packets sent to clients, by QoS")) {
    auto& dropped = prometheus::BuildCounter()
                        .Name("droppedMsgs_total")
                        .Help("Message copies not delivered, by reason")
                        .Register(registry);
    for (std::size_t i = 0; i < drop_reason_count; ++i) {
        dropped_[i] = &dropped.Add({{"reason", std::string(drop_reason_names[i])}});
    }
    auto& disconnects = prometheus::BuildCounter()
                            .Name("clientDisconnects_total")
                            .Help("Connections of connected clients that ended, by reason")
                            .Register(registry);
    for (std::size_t i = 0; i < disconnect_reason_count; ++i) {
        disconnects_[i] = &disconnects.Add({{"reason", std::string(disconnect_reason_names[i])}});
    }
    session_request_timeouts_ =
        &prometheus::BuildCounter()
             .Name("clusterSessionRequestTimeouts_total")
             .Help(
                 "CONNECTs refused because the cluster's session-event handler did not reply "
                 "in time")
             .Register(registry)
             .Add({});
    rate_limit_store_errors_ =
        &prometheus::BuildCounter()
             .Name("rateLimitStoreErrors_total")
             .Help(
                 "Calls to a cluster-wide rate-limit bucket that failed (store unreachable); "
                 "the copies they covered were let through")
             .Register(registry)
             .Add({});
    subscriptions_refused_ = &prometheus::BuildCounter()
                                  .Name("subscriptionsRefused_total")
                                  .Help(
                                      "SUBSCRIBE filters refused because the session holds "
                                      "mqtt.subscription.max-per-client subscriptions")
                                  .Register(registry)
                                  .Add({});
    retained_refused_ = &prometheus::BuildCounter()
                             .Name("retainedMsgsRefused_total")
                             .Help(
                                 "Retained messages not stored because the node holds "
                                 "mqtt.retained-messages.max-count / max-bytes")
                             .Register(registry)
                             .Add({});
    drops_ = std::make_unique<drop_log>(system_clock::instance());
    auto& keys =
        prometheus::BuildGauge()
            .Name("dropLogKeys")
            .Help("Client ids / topics held by the recent-drops breakdown (GET /api/drops)")
            .Register(registry);
    auto& evictions =
        prometheus::BuildCounter()
            .Name("dropLogEvictions_total")
            .Help(
                "Keys with recent drops evicted from the recent-drops breakdown because it was "
                "full")
            .Register(registry);
    for (std::size_t i = 0; i < 2; ++i) {
        const std::map<std::string, std::string> labels{{"by", i == 0 ? "client" : "topic"}};
        drop_log_keys_[i] = &keys.Add(labels);
        drop_log_evictions_[i] = &evictions.Add(labels);
    }
    cluster_sessions_ =
        &gauge(registry, "clusterSessionsCount",
               "Sessions counted cluster-wide for mqtt.sessions-limit (last value read)");
    cluster_application_clients_ = &gauge(
        registry, "clusterApplicationClientsCount",
        "APPLICATION sessions counted cluster-wide for mqtt.application-clients-limit (last value "
        "read)");
    auto& refusals = prometheus::BuildCounter()
                         .Name("sessionLimitRefusals_total")
                         .Help("CONNECTs refused because a session limit was reached, by limit")
                         .Register(registry);
    session_limit_refusals_ = {&refusals.Add({{"limit", "sessions"}}),
                               &refusals.Add({{"limit", "application_clients"}})};
    const auto counter = [&](const std::string& name, const std::string& help) {
        return &prometheus::BuildCounter().Name(name).Help(help).Register(registry).Add({});
    };
    quota_charged_ = counter("throughputQuotaCharged_total",
                             "Tokens charged against the cluster-wide throughput quota");
    quota_grace_admitted_ = counter(
        "throughputQuotaGraceAdmitted_total",
        "Tokens admitted uncounted while the quota's shared bucket was unreachable (grace)");
    quota_refused_ = counter("throughputQuotaRefused_total",
                             "Packets refused because the throughput quota was spent");
    quota_degraded_ =
        counter("throughputQuotaDegraded_total",
                "Packets refused because the quota's shared bucket was unreachable past the grace");
    quota_waiting_ = &gauge(registry, "throughputQuotaWaitingPackets",
                            "Packets held behind a publish waiting for quota tokens");
    quota_waits_ = counter("throughputQuotaChargeWaits_total",
                           "Publishes whose quota charge waited for a draw from the shared bucket");
    quota_balance_ = &gauge(registry, "throughputQuotaLocalBalance",
                            "Quota tokens this node holds (drawn, not yet charged or returned)");
    quota_reached_ = &gauge(registry, "throughputQuotaReached",
                            "1 while the throughput quota reached indicator is raised");
}

broker_probe::~broker_probe() = default;

void broker_probe::message_dropped(drop_reason reason, std::string_view client_id,
                                   std::string_view topic, std::uint64_t count) {
    message_dropped(reason, count);
    drops_->record(reason, client_id, topic, count);
}

void broker_probe::refresh_drop_log() {
    for (std::size_t i = 0; i < 2; ++i) {
        const auto kind = i == 0 ? drop_key_kind::client : drop_key_kind::topic;
        drop_log_keys_[i]->Set(static_cast<double>(drops_->keys(kind)));
        const auto evicted = drops_->evictions(kind);
        drop_log_evictions_[i]->Increment(
            static_cast<double>(evicted - drop_log_evictions_exported_[i]));
        drop_log_evictions_exported_[i] = evicted;
    }
}

void broker_probe::session_limit_counts(std::int64_t sessions, std::int64_t application_clients) {
    cluster_sessions_->Set(static_cast<double>(sessions));
    cluster_application_clients_->Set(static_cast<double>(application_clients));
}

void broker_probe::session_limit_refused(bool application_limit) {
    session_limit_refusals_[application_limit ? 1 : 0]->Increment();
}

void broker_probe::rate_limit_store_failed() { rate_limit_store_errors_->Increment(); }

void broker_probe::subscription_refused() { subscriptions_refused_->Increment(); }

void broker_probe::retained_refused() { retained_refused_->Increment(); }

void broker_probe::quota_charged(std::int64_t tokens) {
    quota_charged_->Increment(static_cast<double>(tokens));
}
void broker_probe::quota_admitted_in_grace(std::int64_t tokens) {
    quota_grace_admitted_->Increment(static_cast<double>(tokens));
}
void broker_probe::quota_refused() { quota_refused_->Increment(); }
void broker_probe::quota_degraded() { quota_degraded_->Increment(); }
void broker_probe::quota_waiting(std::int64_t delta) {
    quota_waiting_->Increment(static_cast<double>(delta));
}
void broker_probe::quota_charge_waited() { quota_waits_->Increment(); }
void broker_probe::quota_state(std::int64_t balance, bool reached) {
    quota_balance_->Set(static_cast<double>(balance));
    quota_reached_->Set(reached ? 1.0 : 0.0);
}

void broker_probe::session_request_timed_out() { session_request_timeouts_->Increment(); }

void broker_probe::client_connected() { connected_.Increment(); }
std::int64_t broker_probe::connected() const {
    return static_cast<std::int64_t>(connected_.Value());
}

void broker_probe::client_disconnected() { connected_.Decrement(); }
void broker_probe::sessions(std::int64_t count) { sessions_.Set(static_cast<double>(count)); }
void broker_probe::subscriptions(std::int64_t count) {
    subscriptions_.Set(static_cast<double>(count));
}
void broker_probe::retained(std::int64_t count) { retained_.Set(static_cast<double>(count)); }
void broker_probe::last_will_clients(std::int64_t count) {
    last_will_clients_.Set(static_cast<double>(count));
}

namespace {
template <std::size_t N>
std::uint64_t total_of(const std::array<prometheus::Counter*, N>& counters) {
    double total = 0;
    for (const auto* c : counters) {
        total += c->Value();
    }
    return static_cast<std::uint64_t>(total);
}
}  // namespace

std::uint64_t broker_probe::publishes_received() const { return total_of(received_); }
std::uint64_t broker_probe::publishes_sent() const { return total_of(sent_); }
std::uint64_t broker_probe::messages_dropped() const { return total_of(dropped_); }

void broker_probe::publish_received(std::uint8_t qos) {
    // The codec rejects QoS 3 before a packet gets this far.
    STARLING_BUG(qos <= 2, "publish_received with QoS > 2");
    if (qos <= 2) {
        received_[qos]->Increment();
    }
}

void broker_probe::publish_sent(std::uint8_t qos) {
    STARLING_BUG(qos <= 2, "publish_sent with QoS > 2");
    if (qos <= 2) {
        sent_[qos]->Increment();
    }
}

void broker_probe::disconnect_counted(disconnect_reason reason) {
    disconnects_[static_cast<std::size_t>(reason)]->Increment();
}

void broker_probe::message_dropped(drop_reason reason, std::uint64_t count) {
    dropped_[static_cast<std::size_t>(reason)]->Increment(static_cast<double>(count));
}

void broker_probe::non_writable_clients(std::int64_t delta) {
    non_writable_clients_.Increment(static_cast<double>(delta));
}

}  // namespace starling::metrics
