#pragma once

// Metadata-store port (docs/architecture.md §2): client credentials, per-client session contexts
// (inbound QoS 2 packet ids awaiting PUBREL; APPLICATION in-flight packet id ↔ offset maps),
// the unauthorized-client log and key/value settings. Tables follow TBMQ's schema (versioned
// SQL migrations, the same for SQLite and PostgreSQL).
//
// Adapters: SQLite (embedded default) and PostgreSQL. Both pass tests/contract/metadata_store/.
// Every call is asynchronous: blocking database work runs on the adapter's own bounded pool,
// never on an I/O or actor thread. Callbacks run once on that pool and must not block.

#include "base/result.h"

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace starling {

enum class client_type : std::uint8_t { device, application };

// A row of mqtt_client_credentials. credentials_value is the provider's JSON document.
struct client_credentials {
    std::string id;  // uuid text
    std::int64_t created_time_ms = 0;
    std::string name;
    client_type type = client_type::device;
    std::string credentials_id;    // lookup key, e.g. "username|alice"
    std::string credentials_type;  // MQTT_BASIC, X_509, SCRAM
    std::string credentials_value;
};

// generic_client_session_ctx: inbound QoS 2 packet ids a persistent client still owes a
// PUBREL for, so a resumed handshake neither loses nor duplicates the message.
struct session_context {
    std::string client_id;
    std::int64_t last_updated_ms = 0;
    std::vector<std::uint16_t> qos2_packet_ids;
};

// application_session_ctx: what an APPLICATION client has in flight, by packet id.
struct application_session_context {
    std::string client_id;
    std::int64_t last_updated_ms = 0;
    std::vector<std::pair<std::uint16_t, std::int64_t>> publish_offsets;  // packet id, offset
    std::vector<std::pair<std::uint16_t, std::int64_t>> pubrel_offsets;
};

// application_shared_subscription: an operator's definition of an APPLICATION shared
// subscription's topic (msg.app.shared.<filter>): how many partitions it gets when Starling
// creates it, so several members of a share can split the stream.
struct application_shared_subscription {
    std::string id;
    std::int64_t created_time_ms = 0;
    std::string topic_filter;  // column `topic`, unique
    std::int32_t partitions = 1;
    std::string name;
};

// A row of the unauthorized-client log, written for every refused CONNECT. Its fields come from
// whoever connected (a client id may be 64 KiB long), so every adapter bounds the log:
//   - client_id and username are stored cut to unauthorized_max_id_bytes, reason to
//     unauthorized_max_reason_bytes, each at a UTF-8 character boundary (ids that agree on
//     their first unauthorized_max_id_bytes share one row);
//   - at most a configured number of rows are kept, the oldest deleted first;
//   - rows are written at a bounded rate per IP address and overall; the others are dropped —
//     record_unauthorized still reports success for them — and counted by the adapter.
inline constexpr std::size_t unauthorized_max_id_bytes = 256;
inline constexpr std::size_t unauthorized_max_reason_bytes = 1024;

struct unauthorized_client {
    std::string client_id;
    std::string ip_address;
    std::int64_t ts_ms = 0;
    std::string username;
    bool password_provided = false;
    bool tls_used = false;
    std::string reason;
};

// Which rows of the unauthorized-client log a listing returns: newest first (ties by client
// id), rows older than the log's TTL left out.
struct unauthorized_query {
    std::size_t limit = 100;
    std::size_t offset = 0;
    // Rows whose client id contains this text, compared case-insensitively (ASCII letters on
    // every adapter; PostgreSQL folds other letters too) — TBMQ's textSearch; empty = all.
    std::string client_id_contains;
};

struct unauthorized_page {
    std::vector<unauthorized_client> rows;
    std::size_t total = 0;  // rows matching the query over all pages
};

// ts_kv: the statistics series a dashboard draws (GET /api/timeseries). Each node writes one
// point per key per sampling interval under its own node id (entity_id); the cluster-wide
// series is computed when read. Keys are TBMQ's names; ts_kv stores them as the fixed integer
// ids below (rows of ts_kv_dictionary, written by the adapters), so a key's id never changes
// and no two nodes can race to assign one.
struct stats_key_id {
    std::string_view key;
    std::int32_t id;
    // The value is a cluster-wide state every node reads from its own mirror (the same number
    // on each), not the node's share: the cluster's series takes the largest, not the sum.
    bool mirrored = false;
};
inline constexpr std::array<stats_key_id, 6> stats_keys{{
    {"incomingMsgs", 1},         // PUBLISH packets received in the interval
    {"outgoingMsgs", 2},         // PUBLISH packets sent in the interval
    {"droppedMsgs", 3},          // message copies dropped in the interval, every reason
    {"sessions", 4},             // sessions connected to the node at the sample
    {"subscriptions", 5, true},  // subscriptions in the cluster at the sample
    {"retainedMsgs", 6, true},   // retained messages in the cluster at the sample
}};
// The id of a key; nullopt for a key that is not one of stats_keys.
inline std::optional<std::int32_t> stats_key_to_id(std::string_view key) {
    for (const auto& k : stats_keys) {
        if (k.key == key) {
            return k.id;
        }
    }
    return std::nullopt;
}

// The key of an id; empty for an id that is not one of stats_keys.
inline std::string_view stats_key_from_id(std::int32_t id) {
    for (const auto& k : stats_keys) {
        if (k.id == id) {
            return k.key;
        }
    }
    return {};
}

struct stats_point {
    std::string entity_id;  // the node's id (service.id)
    std::string key;        // one of stats_keys
    std::int64_t ts_ms = 0;
    std::int64_t value = 0;

    friend bool operator==(const stats_point&, const stats_point&) = default;
};

struct stats_query {
    std::vector<std::string> keys;  // keys not in stats_keys match nothing
    std::string entity_id;          // empty = every node
    std::int64_t start_ms = 0;      // inclusive
    std::int64_t end_ms = 0;        // inclusive
    std::size_t limit = 100000;     // points at most; the earliest are returned
};

// A row of `integration`: one Integration Executor target (HTTP, MQTT, KAFKA). The store keeps
// the configuration as the JSON document the API received; integration/definition.h parses and
// validates it. Rows are few (an operator's handful), so they are listed whole.
struct integration_row {
    std::string id;  // uuid text
    std::int64_t created_time_ms = 0;
    std::string name;
    std::string type;  // HTTP, MQTT or KAFKA
    bool enabled = true;
    std::string configuration;    // JSON document
    std::string additional_info;  // JSON document, may be empty

    friend bool operator==(const integration_row&, const integration_row&) = default;
};

class metadata_store {
  public:
    template <class T>
    using callback = std::function<void(result<T>)>;
    using done_callback = std::function<void(status)>;

    virtual ~metadata_store() = default;

    // Credentials.
    virtual void save_credentials(client_credentials c, done_callback done) = 0;
    virtual void delete_credentials(std::string credentials_id, done_callback done) = 0;
    virtual void find_credentials(std::vector<std::string> credentials_ids,
                                  callback<std::vector<client_credentials>> done) = 0;
    virtual void list_credentials(std::size_t limit, std::size_t offset,
                                  callback<std::vector<client_credentials>> done) = 0;
    // How many rows there are (for the API's totalPages / totalElements).
    virtual void count_credentials(callback<std::size_t> done) = 0;

    // Inbound QoS 2 state of persistent clients.
    virtual void save_session_context(session_context ctx, done_callback done) = 0;
    virtual void load_session_context(std::string client_id,
                                      callback<std::optional<session_context>> done) = 0;
    virtual void delete_session_context(std::string client_id, done_callback done) = 0;

    // APPLICATION in-flight maps.
    virtual void save_application_context(application_session_context ctx, done_callback done) = 0;
    virtual void load_application_context(
        std::string client_id, callback<std::optional<application_session_context>> done) = 0;
    virtual void delete_application_context(std::string client_id, done_callback done) = 0;

    // APPLICATION shared-subscription entities, by topic filter (an existing filter is updated).
    virtual void save_application_shared_subscription(application_shared_subscription entity,
                                                      done_callback done) = 0;
    virtual void find_application_shared_subscription(
        std::string topic_filter,
        callback<std::optional<application_shared_subscription>> done) = 0;
    // Every entity, ordered by topic filter (operators define a handful; the API pages them).
    virtual void list_application_shared_subscriptions(
        callback<std::vector<application_shared_subscription>> done) = 0;
    // Deletes the entity with this id; false when there was none.
    virtual void delete_application_shared_subscription(std::string id, callback<bool> done) = 0;

    // Integrations, by id. save_integration inserts a new id or replaces every column of an
    // existing one except created_time_ms, which keeps its first value. list_integrations
    // answers every row ordered by created_time_ms, then id. delete_integration: false when
    // there was none.
    virtual void save_integration(integration_row row, done_callback done) = 0;
    virtual void list_integrations(callback<std::vector<integration_row>> done) = 0;
    virtual void delete_integration(std::string id, callback<bool> done) = 0;

    // Failed authentications (kept for operators; expired by TTL; bounded as described at
    // unauthorized_client). A row dropped by the rate limits still completes with success.
    virtual void record_unauthorized(unauthorized_client entry, done_callback done) = 0;
    virtual void list_unauthorized(unauthorized_query query, callback<unauthorized_page> done) = 0;
    // One row by its stored (clamped) client id; nullopt when absent or expired.
    virtual void find_unauthorized(std::string client_id,
                                   callback<std::optional<unauthorized_client>> done) = 0;
    // Removes one row; false when there was none.
    virtual void delete_unauthorized(std::string client_id, callback<bool> done) = 0;
    // Removes every row; completes with how many there were.
    virtual void clear_unauthorized(callback<std::size_t> done) = 0;

    // Statistics series. save_stats writes points (a point already stored for the same
    // entity, key and ts is replaced); a key not in stats_keys fails the whole call with
    // invalid_argument. (ts_kv_latest stays unused: the latest point is the newest row of
    // ts_kv, one indexed look-up away, and a second table per write buys nothing.) read_stats
    // answers
    // the query's points ordered by key, ts, entity. delete_stats_before removes the points
    // older than ts_ms (the retention sweep) and completes with how many there were.
    virtual void save_stats(std::vector<stats_point> points, done_callback done) = 0;
    virtual void read_stats(stats_query query, callback<std::vector<stats_point>> done) = 0;
    virtual void delete_stats_before(std::int64_t ts_ms, callback<std::size_t> done) = 0;

    // admin_settings: JSON documents by key.
    virtual void put_setting(std::string key, std::string json_value, done_callback done) = 0;
    virtual void get_setting(std::string key, callback<std::optional<std::string>> done) = 0;

    virtual bool healthy() const = 0;
};

}  // namespace starling
