#pragma once

// What the MQTT side of the broker reports: sessions, subscriptions, retained messages,
// publishes in and out, and every message it drops, by reason.
//
// Lifecycle: owned by metrics::registry and handed out by reference; it lives as long as the
// registry. Concurrency: every method may be called from any thread at once; each is one or
// two atomic operations inside prometheus-cpp, cheap enough for the per-message path.

#include <array>
#include <cstdint>
#include <memory>
#include <string_view>

namespace prometheus {
class Counter;
class Gauge;
class Registry;
}  // namespace prometheus

namespace starling::metrics {

// Why a message copy was not delivered. Every value is exported as a `reason` label of
// droppedMsgs_total from the start, so a dashboard sees 0 rather than a missing series.
enum class drop_reason : std::uint8_t {
    non_writable,             // non-persistent subscriber's channel over its high water mark
    incoming_rate,            // publisher over its incoming rate limit
    outgoing_rate,            // QoS 0 subscriber over its outgoing rate limit
    device_persisted_limit,   // cluster-wide device-persisted-messages rate limit
    quota,                    // cluster-wide throughput quota exhausted
    queue_trim,               // device inbox trimmed to persisted-messages.limit
    expired,                  // message expiry interval or inbox TTL passed
    no_usable_shared_member,  // shared subscription group had no member able to take it
    offline,                  // non-persistent subscriber not connected
    packet_too_large,         // over the subscriber's Maximum Packet Size
    mailbox_full,             // the receiving actor's mailbox was full
    not_authorized,           // publish refused by authorization
    topic_levels,             // topic deeper than mqtt.topic.max-segments-count
    retained_limit,           // v5 retained publish beyond mqtt.retained-messages.*
    integration_event,        // a client lifecycle event the log refused for an integration
};

inline constexpr std::size_t drop_reason_count = 15;

std::string_view to_string(drop_reason reason);
// Sets `out` to the reason whose to_string is `name`; false when there is none.
bool drop_reason_from_string(std::string_view name, drop_reason& out);

// Why a connected client's connection ended, for clientDisconnects_total{reason} (every value
// exported from the start).
enum class disconnect_reason : std::uint8_t {
    client,              // the client sent DISCONNECT
    connection_lost,     // the socket closed or failed without a DISCONNECT
    keep_alive_timeout,  // nothing received within 1.5 × keep-alive
    taken_over,          // a new connection with the same client id took the session
    server_shutdown,     // the node is stopping (SIGTERM)
    admin,               // closed through the API (administrative action)
    protocol_error,      // malformed packet or protocol violation
    policy,              // any other refusal: limits, quotas, authorization, packet size
    drained,             // the node is draining (POST /api/app/drain) and moved the client away
};

inline constexpr std::size_t disconnect_reason_count = 9;

std::string_view to_string(disconnect_reason reason);

class drop_log;

class broker_probe {
  public:
    explicit broker_probe(prometheus::Registry& registry);
    ~broker_probe();

    broker_probe(const broker_probe&) = delete;
    broker_probe& operator=(const broker_probe&) = delete;

    void client_connected();                            // connectedSessions + 1
    void client_disconnected();                         // connectedSessions - 1
    void disconnect_counted(disconnect_reason reason);  // clientDisconnects_total{reason}
    std::int64_t connected() const;                     // connectedSessions now
    void sessions(std::int64_t count);                  // allClientSessions
    void subscriptions(std::int64_t count);             // clientSubscriptions
    void retained(std::int64_t count);                  // retainedMessages
    void last_will_clients(std::int64_t count);         // lastWillClients
    // Totals since start, every QoS and reason together (the statistics series).
    std::uint64_t publishes_received() const;
    std::uint64_t publishes_sent() const;
    std::uint64_t messages_dropped() const;
    void publish_received(std::uint8_t qos);  // incomingPublishMsgs_total{qos}
    void publish_sent(std::uint8_t qos);      // outgoingPublishMsgs_total{qos}
    void message_dropped(drop_reason reason, std::uint64_t count = 1);  // droppedMsgs_total
    // The same, and records who was dropped in drops() (GET /api/drops): pass the client id
    // and the topic where the call site knows them (either may be empty). Prefer this form at
    // every drop site so the counter and the breakdown cannot diverge.
    void message_dropped(drop_reason reason, std::string_view client_id, std::string_view topic,
                         std::uint64_t count = 1);
    // Recent drops by client and by topic (sliding window, bounded; see drop_log.h).
    drop_log& drops() { return *drops_; }
    const drop_log& drops() const { return *drops_; }
    // Sets the drop log's gauges (dropLogKeys, dropLogEvictions_total); run by each scrape.
    void refresh_drop_log();
    void non_writable_clients(std::int64_t delta);  // nonWritableClients
    // Cluster: a CONNECT got no session-event reply in time (clusterSessionRequestTimeouts_total).
    void session_request_timed_out();
    // A cluster-wide rate-limit bucket could not be reached and the copies were let through
    // (fail open; rateLimitStoreErrors_total).
    void rate_limit_store_failed();
    // Session limits (mqtt.sessions-limit, mqtt.application-clients-limit): the cluster-wide
    // counts last read from the shared counters (clusterSessionsCount,
    // clusterApplicationClientsCount) and the CONNECTs refused over a limit
    // (sessionLimitRefusals_total{limit="sessions|application_clients"}).
    void session_limit_counts(std::int64_t sessions, std::int64_t application_clients);
    void session_limit_refused(bool application_limit);
    // State limits (docs/security.md, Limits): a SUBSCRIBE filter refused over
    // mqtt.subscription.max-per-client (subscriptionsRefused_total), a retained message not
    // stored over mqtt.retained-messages.* (retainedMsgsRefused_total).
    void subscription_refused();
    void retained_refused();
    // The cluster-wide throughput quota (ratelimit/quota_lease.h).
    void quota_charged(std::int64_t tokens);            // throughputQuotaCharged_total
    void quota_admitted_in_grace(std::int64_t tokens);  // throughputQuotaGraceAdmitted_total
    void quota_refused();                               // throughputQuotaRefused_total
    void quota_degraded();                              // throughputQuotaDegraded_total
    void quota_waiting(std::int64_t delta);             // throughputQuotaWaitingPackets
    void quota_charge_waited();                         // throughputQuotaChargeWaits_total
    // Set from live state before each scrape: throughputQuotaLocalBalance, ..Reached (0/1).
    void quota_state(std::int64_t balance, bool reached);

  private:
    prometheus::Gauge& connected_;
    prometheus::Gauge& sessions_;
    prometheus::Gauge& subscriptions_;
    prometheus::Gauge& retained_;
    prometheus::Gauge& last_will_clients_;
    prometheus::Gauge& non_writable_clients_;
    std::array<prometheus::Counter*, 3> received_{};
    std::array<prometheus::Counter*, 3> sent_{};
    std::array<prometheus::Counter*, drop_reason_count> dropped_{};
    std::array<prometheus::Counter*, disconnect_reason_count> disconnects_{};
    prometheus::Counter* session_request_timeouts_ = nullptr;
    prometheus::Counter* rate_limit_store_errors_ = nullptr;
    prometheus::Gauge* cluster_sessions_ = nullptr;
    prometheus::Gauge* cluster_application_clients_ = nullptr;
    std::array<prometheus::Counter*, 2> session_limit_refusals_{};  // sessions, application
    prometheus::Counter* subscriptions_refused_ = nullptr;
    prometheus::Counter* retained_refused_ = nullptr;
    std::unique_ptr<drop_log> drops_;
    std::array<prometheus::Gauge*, 2> drop_log_keys_{};         // client, topic
    std::array<prometheus::Counter*, 2> drop_log_evictions_{};  // client, topic
    std::array<std::uint64_t, 2> drop_log_evictions_exported_{};
    prometheus::Counter* quota_charged_ = nullptr;
    prometheus::Counter* quota_grace_admitted_ = nullptr;
    prometheus::Counter* quota_refused_ = nullptr;
    prometheus::Counter* quota_degraded_ = nullptr;
    prometheus::Gauge* quota_waiting_ = nullptr;
    prometheus::Counter* quota_waits_ = nullptr;
    prometheus::Gauge* quota_balance_ = nullptr;
    prometheus::Gauge* quota_reached_ = nullptr;
};

}  // namespace starling::metrics
