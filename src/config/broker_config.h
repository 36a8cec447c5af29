#pragma once

// The broker's configuration as the rest of the daemon sees it: plain structs, one per YAML
// section, filled by load_config() (loader.h) from config/starling.yml and the environment.
//
// Naming rule: a field's path mirrors its YAML key with '-' turned into '_'
// (`mqtt.keep-alive.max-keep-alive` -> `mqtt.keep_alive.max_keep_alive`), except that a unit
// suffix in the key (`_sec`, `-ms`, `-seconds`, `-minutes`) is dropped because the field's type
// carries the unit:
//   - every duration is a std::chrono type;
//   - every size is in bytes, even where the YAML value is in KB (as TBMQ's is).
// Values are *effective* ones: "0 = number of cores" and "empty = hostname" are already
// resolved, so no consumer has to know those conventions.
//
// Members have no default initialisers on purpose: the defaults live in one table in
// loader.cpp (and, checked by a test, in config/starling.yml). Use default_config() for a
// configuration with every default applied. Every struct compares with == (member-wise).

#include "config/postgres_metadata_config.h"
#include "starling/shared_counters.h"

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace starling::config {

enum class run_mode : std::uint8_t { embedded, cluster };

// When the embedded message log calls fdatasync. Acknowledged data survives a process kill in
// every mode (it is written before the ack); the policy only decides what survives power loss.
enum class fsync_policy : std::uint8_t { none, interval, always };

enum class shared_subscription_processing : std::uint8_t { round_robin };

// The lowest TLS version a listener accepts (TBMQ's names: "TLSv1.2" allows 1.2 and 1.3,
// "TLSv1.3" only 1.3).
enum class tls_protocol_version : std::uint8_t { tls_v1_2, tls_v1_3 };

// Client certificates on a TLS listener: not asked for, asked for (optional), or required.
enum class client_auth_type : std::uint8_t { none, requested, required };

std::string_view to_string(run_mode mode);
std::string_view to_string(fsync_policy policy);
std::string_view to_string(shared_subscription_processing type);
std::string_view to_string(tls_protocol_version version);
std::string_view to_string(client_auth_type type);

struct starling_section {
    run_mode mode{};
    std::filesystem::path data_dir;
    std::string log_level;   // one of trace, debug, info, warn, error, critical, off
    std::string log_format;  // "text" or "json" (base::log_format)
    std::chrono::seconds shutdown_timeout{};
    // POST /api/app/drain: connections closed per second, and the MQTT 5 Server Reference
    // they are sent to (empty: DISCONNECT 0x8B Server shutting down, no reference).
    std::uint32_t drain_rate{};
    std::string drain_server_reference;

    friend bool operator==(const starling_section&, const starling_section&) = default;
};

struct service_section {
    std::string id;  // never empty after loading: defaults to the host name
    // How often the node writes its heartbeat to sys.nodes (cluster mode; /api/app/cluster-info).
    std::chrono::milliseconds heartbeat_interval{};

    friend bool operator==(const service_section&, const service_section&) = default;
};

struct server_section {
    std::string address;   // IPv4 or IPv6 literal
    std::uint16_t port{};  // 0 = any free port
    // server.api.*: a listener of its own for /api/**; unset port = /api on `port`.
    std::string api_address;  // resolved: never empty (defaults to `address`)
    std::optional<std::uint16_t> api_port;
    std::uint32_t max_connections{};              // per HTTP server
    std::uint32_t max_connections_per_address{};  // 0 = unlimited
    std::uint32_t health_reserved_connections{};  // health-only slots beyond max_connections

    friend bool operator==(const server_section&, const server_section&) = default;
};

struct netty_section {
    std::uint32_t max_payload_size{};  // bytes: the largest MQTT packet accepted
    std::chrono::seconds shutdown_timeout{};
    bool so_keep_alive{};  // TCP keep-alive on accepted sockets

    friend bool operator==(const netty_section&, const netty_section&) = default;
};

// netty section of the ws and wss listeners.
struct ws_netty_section {
    std::uint32_t max_payload_size{};  // bytes: the largest MQTT packet / WebSocket message
    std::chrono::seconds shutdown_timeout{};
    std::string sub_protocols;  // comma-separated, e.g. "mqttv3.1,mqtt"; never empty
    bool so_keep_alive{};       // TCP keep-alive on accepted sockets

    friend bool operator==(const ws_netty_section&, const ws_netty_section&) = default;
};

struct pem_credentials_section {
    std::string cert_file;  // PEM certificate chain, server certificate first
    std::string key_file;   // PEM private key
    std::string key_password;

    friend bool operator==(const pem_credentials_section&,
                           const pem_credentials_section&) = default;
};

struct tls_credentials_section {
    pem_credentials_section pem;

    friend bool operator==(const tls_credentials_section&,
                           const tls_credentials_section&) = default;
};

// `config` section of the ssl and wss listeners. Checked at load when the listener is enabled:
// the files exist, and a trust store is set when client_auth is not none.
struct tls_config_section {
    tls_protocol_version protocol{};
    std::string enabled_cipher_suites;  // comma-separated; empty = OpenSSL defaults
    tls_credentials_section credentials;
    client_auth_type client_auth{};
    std::string trust_store;                 // PEM CA bundle for client certificates
    std::chrono::seconds reload_interval{};  // credential files checked this often; 0 = never

    friend bool operator==(const tls_config_section&, const tls_config_section&) = default;
};

struct tcp_listener_section {
    bool enabled{};
    std::string bind_address;
    std::uint16_t bind_port{};  // 0 = any free port
    // Overrides listener.proxy_enabled for this listener; unset = inherit.
    std::optional<bool> proxy_enabled;
    std::uint32_t max_connections{};  // sockets held at once (handshaking or connected)
    netty_section netty;

    friend bool operator==(const tcp_listener_section&, const tcp_listener_section&) = default;
};

struct ssl_listener_section {
    bool enabled{};
    std::string bind_address;
    std::uint16_t bind_port{};
    std::optional<bool> proxy_enabled;
    std::uint32_t max_connections{};
    netty_section netty;
    tls_config_section config;

    friend bool operator==(const ssl_listener_section&, const ssl_listener_section&) = default;
};

struct ws_listener_section {
    bool enabled{};
    std::string bind_address;
    std::uint16_t bind_port{};
    std::optional<bool> proxy_enabled;
    std::uint32_t max_connections{};
    ws_netty_section netty;

    friend bool operator==(const ws_listener_section&, const ws_listener_section&) = default;
};

struct wss_listener_section {
    bool enabled{};
    std::string bind_address;
    std::uint16_t bind_port{};
    std::optional<bool> proxy_enabled;
    std::uint32_t max_connections{};
    ws_netty_section netty;
    tls_config_section config;

    friend bool operator==(const wss_listener_section&, const wss_listener_section&) = default;
};

struct listener_section {
    std::uint64_t write_buffer_high_water_mark{};  // bytes
    std::uint64_t write_buffer_low_water_mark{};   // bytes, always < high
    std::uint64_t so_receive_buffer{};             // bytes, 0 = OS default
    std::uint32_t io_threads{};                    // resolved: >= 1
    bool proxy_enabled{};  // PROXY protocol v1/v2 on every listener unless overridden
    // Hostile-client limits (src/net/admission.h): from accept to a complete CONNECT.
    std::chrono::milliseconds connect_timeout{};
    std::uint32_t max_connections_per_address{};      // over every listener; 0 = unlimited
    std::vector<bandwidth> connect_rate_per_address;  // empty = unlimited
    std::uint32_t fd_reserve{};                       // descriptors kept free; 0 = none
    std::chrono::seconds so_keep_alive_idle{};        // TCP_KEEPIDLE
    std::chrono::seconds so_keep_alive_interval{};    // TCP_KEEPINTVL
    std::uint32_t so_keep_alive_count{};              // TCP_KEEPCNT
    tcp_listener_section tcp;
    ssl_listener_section ssl;
    ws_listener_section ws;
    wss_listener_section wss;

    friend bool operator==(const listener_section&, const listener_section&) = default;
};

struct msg_all_queue_section {
    std::uint32_t consumers_count{};
    std::chrono::milliseconds poll_interval{};

    friend bool operator==(const msg_all_queue_section&, const msg_all_queue_section&) = default;
};

// Extra Kafka client or topic properties, parsed from TBMQ's "key:value;key:value" strings.
using kafka_properties = std::map<std::string, std::string>;

struct kafka_topic_section {
    std::uint32_t partitions{};
    std::chrono::milliseconds retention{};  // -1 ms = keep forever
    kafka_properties topic_properties;      // extra topic configs at creation
    kafka_properties additional_consumer_config;

    friend bool operator==(const kafka_topic_section&, const kafka_topic_section&) = default;
};

struct kafka_downlink_section {
    std::uint32_t partitions{};  // of each msg.downlink.basic/persisted.<node> topic

    friend bool operator==(const kafka_downlink_section&, const kafka_downlink_section&) = default;
};

struct kafka_consumer_defaults_section {
    kafka_properties config;
    std::chrono::milliseconds session_timeout{};
    std::chrono::milliseconds heartbeat_interval{};
    std::chrono::milliseconds max_poll_interval{};

    friend bool operator==(const kafka_consumer_defaults_section&,
                           const kafka_consumer_defaults_section&) = default;
};

struct kafka_producer_defaults_section {
    kafka_properties config;
    std::string acks;                        // "0", "1" or "all"
    std::optional<bool> enable_idempotence;  // unset: on exactly when acks=all
    std::uint32_t batch_size{};              // bytes
    std::chrono::milliseconds linger{};
    std::string compression_type;  // none, gzip, snappy, lz4, zstd
    std::chrono::milliseconds delivery_timeout{};

    friend bool operator==(const kafka_producer_defaults_section&,
                           const kafka_producer_defaults_section&) = default;
};

struct kafka_defaults_section {
    kafka_properties config;  // every client
    kafka_consumer_defaults_section consumer;
    kafka_producer_defaults_section producer;

    friend bool operator==(const kafka_defaults_section&, const kafka_defaults_section&) = default;
};

struct kafka_application_section {
    std::chrono::milliseconds retention{};  // -1 ms = keep forever
    std::int64_t retention_bytes{};         // per topic; -1 = unbounded
    // msg.app.shared.<filter> topics: partitions when no application_shared_subscription
    // entity names the filter, and retention.
    std::int32_t shared_topic_partitions{};
    std::chrono::milliseconds shared_topic_retention{};  // -1 ms = keep forever

    friend bool operator==(const kafka_application_section&,
                           const kafka_application_section&) = default;
};

struct kafka_section {
    std::string bootstrap_servers;
    std::uint16_t replication_factor{};
    std::chrono::seconds admin_command_timeout{};
    kafka_defaults_section defaults;  // queue.kafka.default.*
    std::string kafka_prefix;         // topic names are <prefix>.<name>; empty = no prefix
    kafka_topic_section msg_all;
    kafka_downlink_section downlink;
    std::uint32_t client_session_event_partitions{};  // client.session.event.request
    // msg.app.<clientId>: one topic per persistent APPLICATION client.
    kafka_application_section application_persisted_msg;

    friend bool operator==(const kafka_section&, const kafka_section&) = default;
};

struct embedded_queue_section {
    fsync_policy fsync{};
    std::chrono::milliseconds fsync_interval{};
    std::uint64_t segment_bytes{};
    std::int64_t retention_bytes{};        // per partition, topics without a bound; -1 = none
    std::uint64_t disk_min_free_bytes{};   // below: publishes refused; 0 = off
    std::uint64_t disk_slow_free_bytes{};  // below: log writes slowed; 0 = off
    std::uint64_t disk_slow_rate{};        // bytes/s while slowed

    friend bool operator==(const embedded_queue_section&, const embedded_queue_section&) = default;
};

struct application_queue_section {
    // Threads that run every persistent APPLICATION client's log consumers (consumer_pool).
    std::uint32_t consumer_threads{};

    friend bool operator==(const application_queue_section&,
                           const application_queue_section&) = default;
};

struct queue_section {
    msg_all_queue_section msg_all;
    application_queue_section application_persisted_msg;
    kafka_section kafka;
    embedded_queue_section embedded;
    // Cluster: how long a CONNECT waits for the session-event handler's reply.
    std::chrono::milliseconds client_session_event_max_request_timeout{};

    friend bool operator==(const queue_section&, const queue_section&) = default;
};

struct actor_system_section {
    std::uint32_t throughput{};  // messages per actor per turn

    friend bool operator==(const actor_system_section&, const actor_system_section&) = default;
};

struct client_actors_section {
    std::uint32_t dispatcher_pool_size{};  // resolved: >= 1
    std::uint32_t mailbox_capacity{};
    std::uint64_t mailbox_bytes{};  // bytes (the file says KB)
    std::chrono::seconds wait_before_generated_actor_stop{};
    std::chrono::seconds wait_before_named_actor_stop{};

    friend bool operator==(const client_actors_section&, const client_actors_section&) = default;
};

struct persisted_device_actors_section {
    std::uint32_t dispatcher_pool_size{};  // resolved: >= 1
    std::chrono::minutes wait_before_actor_stop{};

    friend bool operator==(const persisted_device_actors_section&,
                           const persisted_device_actors_section&) = default;
};

struct actors_section {
    actor_system_section system;
    client_actors_section client;
    persisted_device_actors_section persisted_device;

    friend bool operator==(const actors_section&, const actors_section&) = default;
};

struct keep_alive_section {
    std::chrono::seconds max_keep_alive{};

    friend bool operator==(const keep_alive_section&, const keep_alive_section&) = default;
};

struct topic_section {
    std::uint32_t max_segments_count{};  // 0 = unlimited
    std::uint16_t alias_max{};           // 0 = topic aliases disabled
    std::uint32_t min_length_for_alias_replacement{};

    friend bool operator==(const topic_section&, const topic_section&) = default;
};

struct subscription_section {
    bool allow_root_multi_level_wildcard{};
    std::uint32_t max_per_client{};  // 0 = unlimited

    friend bool operator==(const subscription_section&, const subscription_section&) = default;
};

// How much the node keeps as retained messages (every node mirrors all of them).
struct retained_messages_section {
    std::uint64_t max_count{};  // 0 = unlimited
    std::uint64_t max_bytes{};  // topic + payload bytes; 0 = unlimited

    friend bool operator==(const retained_messages_section&,
                           const retained_messages_section&) = default;
};

struct shared_subscriptions_section {
    shared_subscription_processing processing_type{};

    friend bool operator==(const shared_subscriptions_section&,
                           const shared_subscriptions_section&) = default;
};

struct client_session_expiry_section {
    std::chrono::seconds max_expiry_interval{};

    friend bool operator==(const client_session_expiry_section&,
                           const client_session_expiry_section&) = default;
};

struct version_3_1_section {
    std::uint16_t max_client_id_length{};

    friend bool operator==(const version_3_1_section&, const version_3_1_section&) = default;
};

struct persisted_messages_section {
    std::uint16_t limit{};  // the device inbox hands out 16-bit packet ids
    std::chrono::seconds ttl{};

    friend bool operator==(const persisted_messages_section&,
                           const persisted_messages_section&) = default;
};

struct device_persistent_session_section {
    persisted_messages_section persisted_messages;

    friend bool operator==(const device_persistent_session_section&,
                           const device_persistent_session_section&) = default;
};

struct persistent_session_section {
    device_persistent_session_section device;

    friend bool operator==(const persistent_session_section&,
                           const persistent_session_section&) = default;
};

// mqtt.rate-limits.*: TBMQ's rate limits, each a list of "limit:seconds" windows that must all
// hold (src/ratelimit/bandwidth_spec.h, docs/backpressure.md). Per-client limits are
// node-local; device-persisted-messages is one bucket for the whole cluster.
struct rate_limit_section {
    bool enabled{};
    std::vector<bandwidth> config;  // never empty after loading

    friend bool operator==(const rate_limit_section&, const rate_limit_section&) = default;
};

// mqtt.rate-limits.total: the cluster-wide throughput quota (ratelimit/quota_lease.h).
struct total_rate_limit_section {
    bool enabled{};
    std::vector<bandwidth> config;             // never empty after loading
    std::int64_t block_size{};                 // tokens per draw; 0 = max(1, sustained rate / 10)
    std::chrono::milliseconds lease_return{};  // 0 = unused tokens are never returned

    friend bool operator==(const total_rate_limit_section&,
                           const total_rate_limit_section&) = default;
};

struct rate_limits_section {
    rate_limit_section incoming_publish;           // per publisher
    rate_limit_section outgoing_publish;           // per subscriber, QoS 0 copies only
    rate_limit_section device_persisted_messages;  // cluster-wide, persistent DEVICE inboxes
    total_rate_limit_section total;                // cluster-wide throughput quota

    friend bool operator==(const rate_limits_section&, const rate_limits_section&) = default;
};

struct mqtt_section {
    std::uint16_t max_in_flight_msgs{};
    keep_alive_section keep_alive;
    topic_section topic;
    subscription_section subscription;
    shared_subscriptions_section shared_subscriptions;
    client_session_expiry_section client_session_expiry;
    version_3_1_section version_3_1;
    persistent_session_section persistent_session;
    std::string response_info;
    bool retain_available{};
    retained_messages_section retained_messages;
    std::uint16_t max_user_properties{};  // per packet; 0 = unlimited
    std::uint8_t max_qos{};
    rate_limits_section rate_limits;
    // Cluster-wide session limits (TBMQ's keys); 0 = off.
    std::int64_t sessions_limit{};
    std::int64_t application_clients_limit{};

    friend bool operator==(const mqtt_section&, const mqtt_section&) = default;
};

enum class basic_auth_strategy : std::uint8_t { both, client_id, username };

std::string_view to_string(basic_auth_strategy strategy);

struct basic_auth_section {
    bool enabled{};
    basic_auth_strategy auth_strategy{};
    std::uint32_t verify_threads{};  // bcrypt workers

    friend bool operator==(const basic_auth_section&, const basic_auth_section&) = default;
};

struct ssl_auth_section {
    bool enabled{};
    std::vector<std::filesystem::path> trust_store;  // PEM CA files; empty = listener's check
    bool skip_validity_check_for_client_cert{};

    friend bool operator==(const ssl_auth_section&, const ssl_auth_section&) = default;
};

struct circuit_breaker_section {
    std::uint32_t failure_threshold{};
    std::chrono::milliseconds cool_down{};

    friend bool operator==(const circuit_breaker_section&,
                           const circuit_breaker_section&) = default;
};

// One entry of security.mqtt.credentials (a YAML list, upserted into the metadata store at
// start-up). Checked while loading: type, credentials-type, and which fields each type needs.
struct credentials_entry {
    std::string name;
    std::string type;              // DEVICE or APPLICATION
    std::string credentials_type;  // MQTT_BASIC or X_509
    std::optional<std::string> client_id;
    std::optional<std::string> username;
    std::optional<std::string> password;  // plain (hashed at start-up) or a $2b$ bcrypt hash
    std::optional<std::string> cert_cn;   // X_509: exact CN, or a regex with cert_cn_is_regex
    bool cert_cn_is_regex{};
    std::optional<std::vector<std::string>> pub;  // publish patterns; absent = allow all
    std::optional<std::vector<std::string>> sub;  // subscribe patterns; absent = allow all
    // The client ids these credentials may connect with (RE2, whole string); absent = any.
    std::optional<std::string> client_id_pattern;

    friend bool operator==(const credentials_entry&, const credentials_entry&) = default;
};

// One entry of security.mqtt.blocked-clients (YAML list).
struct blocked_client_entry {
    std::string type;  // CLIENT_ID, USERNAME, IP_ADDRESS or REGEX
    std::string value;
    std::string regex_match_target;     // REGEX only: CLIENT_ID, USERNAME or IP_ADDRESS
    std::int64_t expiration_time_ms{};  // epoch ms; 0 = never expires
    std::string description;

    friend bool operator==(const blocked_client_entry&, const blocked_client_entry&) = default;
};

// security.mqtt.jwt.auth-rules / security.mqtt.http.auth-rules: topic regexes (YAML lists).
struct auth_rules_section {
    std::vector<std::string> pub{".*"};
    std::vector<std::string> sub{".*"};

    friend bool operator==(const auth_rules_section&, const auth_rules_section&) = default;
};

// security.mqtt.jwt.* (TBMQ's JWT provider). Enumerations stay text here: the provider's
// options own the meaning, and security.cpp maps them (the loader has already checked them).
struct jwt_auth_section {
    bool enabled{};
    std::string default_client_type;  // DEVICE or APPLICATION
    std::string verifier;             // ALGORITHM_BASED or JWKS
    std::string algorithm;            // HMAC_BASED or PEM_KEY
    std::string secret;
    std::string public_pem_key;  // inline PEM ("-----BEGIN ...") or a file path
    std::string jwks_endpoint;
    std::map<std::string, std::string> jwks_headers;
    std::chrono::seconds jwks_refresh_interval{};
    std::map<std::string, std::string> auth_claims;
    std::map<std::string, std::string> client_type_claims;
    std::string pub_auth_rule_claim;
    std::string sub_auth_rule_claim;
    auth_rules_section auth_rules;
    bool allow_tokens_without_exp{};  // Starling's: accept a token with no exp claim

    friend bool operator==(const jwt_auth_section&, const jwt_auth_section&) = default;
};

// security.mqtt.http.* (TBMQ's HTTP provider).
struct http_auth_section {
    bool enabled{};
    std::string endpoint;
    std::string method;
    std::map<std::string, std::string> headers;
    std::string request_body;
    std::chrono::milliseconds read_timeout{};
    std::uint32_t max_parallel_requests{};
    std::string default_client_type;
    std::string username;  // basic credentials of the endpoint; empty = anonymous
    std::string password;
    auth_rules_section auth_rules;

    friend bool operator==(const http_auth_section&, const http_auth_section&) = default;
};

// security.mqtt.unauthorized-clients.*: bounds of the unauthorized-client log.
struct unauthorized_clients_section {
    std::uint32_t max_rows{};
    std::uint32_t rows_per_address_per_minute{};  // 0 = unlimited
    std::uint32_t rows_per_second{};              // over every address; 0 = unlimited

    friend bool operator==(const unauthorized_clients_section&,
                           const unauthorized_clients_section&) = default;
};

struct mqtt_security_section {
    bool allow_anonymous{};
    std::vector<std::string> auth_providers;  // in order: MQTT_BASIC, X_509, JWT, HTTP
    basic_auth_section basic;
    ssl_auth_section ssl;
    jwt_auth_section jwt;
    http_auth_section http;
    std::chrono::milliseconds auth_cache_ttl{};  // 0 = no cache
    std::chrono::milliseconds provider_timeout{};
    circuit_breaker_section circuit_breaker;
    std::vector<bandwidth> failed_auth_per_address;  // empty = unlimited
    unauthorized_clients_section unauthorized_clients;
    std::vector<credentials_entry> credentials;
    std::vector<blocked_client_entry> blocked_clients;

    friend bool operator==(const mqtt_security_section&, const mqtt_security_section&) = default;
};

// security.admin.*: the management API's admin users (POST /api/auth/login).
struct admin_login_section {
    bool enabled{};        // false: only security.admin-token opens /api
    std::string username;  // the first admin, created when the store has none
    std::string password;  // its password; empty = no first admin is created
    std::vector<bandwidth> failed_logins_per_address;  // empty = unlimited

    friend bool operator==(const admin_login_section&, const admin_login_section&) = default;
};

// security.jwt.*: the admin users' tokens (TBMQ's names).
struct api_jwt_section {
    std::string token_signing_key;  // empty = generated once and kept in the metadata store
    std::string token_issuer;
    std::chrono::seconds token_expiration_time{};
    std::chrono::seconds refresh_token_exp_time{};

    friend bool operator==(const api_jwt_section&, const api_jwt_section&) = default;
};

struct security_section {
    mqtt_security_section mqtt;
    std::string admin_token;  // static bearer token of /api (a service account); may be empty
    admin_login_section admin;
    api_jwt_section jwt;

    friend bool operator==(const security_section&, const security_section&) = default;
};

// redis.*: the Redis the cluster-mode device inbox uses (src/adapters/redis). TBMQ's keys.
struct redis_standalone_section {
    std::string host;
    std::uint16_t port{};
    std::chrono::milliseconds connect_timeout{};
    std::chrono::milliseconds read_timeout{};  // bounds every command

    friend bool operator==(const redis_standalone_section&,
                           const redis_standalone_section&) = default;
};

// redis.sentinel.*: Redis Sentinel (connection type "sentinel").
struct redis_sentinel_section {
    std::string master;                                            // the monitored master's name
    std::vector<std::pair<std::string, std::uint16_t>> sentinels;  // host, port
    std::string password;                                          // AUTH to the sentinels

    friend bool operator==(const redis_sentinel_section&, const redis_sentinel_section&) = default;
};

// redis.cluster.*: Redis Cluster (connection type "cluster").
struct redis_cluster_section {
    std::vector<std::pair<std::string, std::uint16_t>> nodes;  // seed nodes: host, port
    std::uint32_t max_redirects{};                             // MOVED/ASK hops per command
    std::chrono::seconds topology_refresh_period{};            // 0: only on MOVED and failures

    friend bool operator==(const redis_cluster_section&, const redis_cluster_section&) = default;
};

// redis.ssl.*: TLS to Redis (TBMQ's keys).
struct redis_ssl_section {
    bool enabled{};
    std::string cert_file;       // CA certificate(s) the server's chain must lead to
    std::string user_cert_file;  // client certificate (mutual TLS)
    std::string user_key_file;   // its key

    friend bool operator==(const redis_ssl_section&, const redis_ssl_section&) = default;
};

struct redis_section {
    std::string connection_type;  // "standalone", "sentinel" or "cluster"
    redis_standalone_section standalone;
    redis_sentinel_section sentinel;
    redis_cluster_section cluster;
    redis_ssl_section ssl;
    std::uint32_t db{};
    std::string username;
    std::string password;
    // Device inbox writes wait for this many replicas (Redis WAIT), at most wait_timeout; fewer
    // fail the write, which is retried. 0 = no wait.
    std::uint32_t wait_replicas{};
    std::chrono::milliseconds wait_timeout{};

    friend bool operator==(const redis_section&, const redis_section&) = default;
};

// spring.datasource: the PostgreSQL metadata store of the cluster mode (TBMQ's keys). The
// connection fields (host, port, database, schema, sslmode, and credentials given in the URL)
// are resolved from spring.datasource.url.
struct spring_section {
    postgres_metadata_config datasource;

    friend bool operator==(const spring_section&, const spring_section&) = default;
};

// The whole configuration. A plain value: copy it freely; nothing in it changes after
// loading.
// historical-data-report.*: the statistics series of /api/timeseries (broker/stats_history.h).
struct historical_data_report_section {
    bool enabled{};
    std::chrono::minutes interval{};  // between samples
    std::chrono::seconds ttl{};       // points older than this are deleted

    friend bool operator==(const historical_data_report_section&,
                           const historical_data_report_section&) = default;
};

struct integrations_section {
    // Whether this node runs integration executors (integration/README.md). false: they run in
    // starling-ie processes; the node still routes copies to msg.ie.<id> and serves the API.
    bool executor_enabled{};
    // How often the integrations' definitions are read from the metadata store again: the
    // reconciliation behind the change notices on ie.downlink.*.
    std::chrono::milliseconds refresh_interval{};

    friend bool operator==(const integrations_section&, const integrations_section&) = default;
};

struct broker_config {
    starling_section starling;
    service_section service;
    integrations_section integrations;
    server_section server;
    listener_section listener;
    queue_section queue;
    actors_section actors;
    mqtt_section mqtt;
    security_section security;
    redis_section redis;
    spring_section spring;
    historical_data_report_section historical_data_report;

    friend bool operator==(const broker_config&, const broker_config&) = default;
};

}  // namespace starling::config
