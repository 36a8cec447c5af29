#include "app/daemon.h"

#include "adapters/embedded/device_inbox.h"
#include "adapters/embedded/message_log.h"
#include "adapters/embedded/shared_counters.h"
#include "adapters/embedded/sqlite_metadata_store.h"
#include "adapters/kafka/kafka_message_log.h"
#include "adapters/postgres/postgres_metadata_store.h"
#include "adapters/redis/redis_device_inbox.h"
#include "adapters/redis/redis_shared_counters.h"
#include "app/admin_login.h"
#include "app/client_session_admin.h"
#include "app/publish_admin.h"
#include "app/retained_admin.h"
#include "app/security.h"
#include "app/startup.h"
#include "broker/blocked_clients_log.h"
#include "broker/loop_watch.h"
#include "broker/mqtt_connection.h"
#include "broker/node.h"
#include "broker/node_directory.h"
#include "broker/node_drain.h"
#include "broker/session_admin.h"
#include "broker/stats_history.h"
#include "broker/topics.h"
#include "config/cli.h"
#include "http/actuator.h"
#include "http/app_shared_subs_api.h"
#include "http/auth_api.h"
#include "http/blocked_client_api.h"
#include "http/client_session_api.h"
#include "http/cluster_info_api.h"
#include "http/credentials_api.h"
#include "http/drain_api.h"
#include "http/drops_api.h"
#include "http/health.h"
#include "http/log_level_api.h"
#include "http/openapi_api.h"
#include "http/publish_api.h"
#include "http/quota_api.h"
#include "http/server.h"
#include "http/timeseries_api.h"
#include "http/ui_api.h"
#include "http/unauthorized_client_api.h"
#include "metrics/registry.h"
#include "net/admission.h"
#include "net/io_pool.h"
#include "net/proxy_handshake.h"
#include "net/tcp_listener.h"
#include "net/tls_context.h"
#include "net/tls_transport.h"
#include "net/ws_transport.h"

#include "integration/integration_api.h"
#include "integration/integration_service.h"
#include <fmt/format.h>
#include <signal.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <optional>
#include <stdexcept>
#include <string>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

namespace starling::app {

namespace {

broker::settings broker_settings(const config::broker_config& c) {
    broker::settings s;
    s.node_id = c.service.id;
    s.cluster = c.starling.mode == config::run_mode::cluster;
    s.shared_inbox = s.cluster;  // cluster mode keeps device inboxes in Redis
    s.topic_prefix = c.queue.kafka.kafka_prefix;
    s.max_in_flight = c.mqtt.max_in_flight_msgs;
    s.max_packet_size = c.listener.tcp.netty.max_payload_size;
    s.max_keep_alive = static_cast<std::uint16_t>(
        std::min<std::int64_t>(c.mqtt.keep_alive.max_keep_alive.count(), 65535));
    s.topic_alias_max = c.mqtt.topic.alias_max;
    s.min_topic_length_for_alias = c.mqtt.topic.min_length_for_alias_replacement;
    s.max_topic_segments = c.mqtt.topic.max_segments_count;
    s.allow_root_multi_level_wildcard = c.mqtt.subscription.allow_root_multi_level_wildcard;
    s.max_subscriptions_per_client = c.mqtt.subscription.max_per_client;
    s.retain_available = c.mqtt.retain_available;
    s.max_retained_messages = c.mqtt.retained_messages.max_count;
    s.max_retained_bytes = c.mqtt.retained_messages.max_bytes;
    s.max_user_properties = c.mqtt.max_user_properties;
    s.max_qos = c.mqtt.max_qos;
    s.max_session_expiry =
        static_cast<std::uint32_t>(c.mqtt.client_session_expiry.max_expiry_interval.count());
    s.max_client_id_length_v31 = c.mqtt.version_3_1.max_client_id_length;
    s.response_information = c.mqtt.response_info;
    s.persisted_messages_limit = c.mqtt.persistent_session.device.persisted_messages.limit;
    s.persisted_messages_ttl =
        static_cast<std::uint32_t>(c.mqtt.persistent_session.device.persisted_messages.ttl.count());
    s.mailbox_capacity = c.actors.client.mailbox_capacity;
    s.mailbox_bytes = c.actors.client.mailbox_bytes;
    s.throughput = c.actors.system.throughput;
    s.named_actor_grace = c.actors.client.wait_before_named_actor_stop;
    s.generated_actor_grace = c.actors.client.wait_before_generated_actor_stop;
    s.msg_all_partitions = static_cast<std::int32_t>(c.queue.kafka.msg_all.partitions);
    s.msg_all_retention_ms = c.queue.kafka.msg_all.retention.count();
    s.app_msg_retention_ms = c.queue.kafka.application_persisted_msg.retention.count();
    const auto& limits = c.mqtt.rate_limits;
    if (limits.incoming_publish.enabled) {
        s.incoming_publish_limit = limits.incoming_publish.config;
    }
    if (limits.outgoing_publish.enabled) {
        s.outgoing_publish_limit = limits.outgoing_publish.config;
    }
    if (limits.device_persisted_messages.enabled) {
        s.device_persisted_limit = limits.device_persisted_messages.config;
    }
    s.app_msg_retention_bytes = c.queue.kafka.application_persisted_msg.retention_bytes;
    s.app_consumer_threads = c.queue.application_persisted_msg.consumer_threads;
    s.app_shared_partitions = c.queue.kafka.application_persisted_msg.shared_topic_partitions;
    s.app_shared_retention_ms =
        c.queue.kafka.application_persisted_msg.shared_topic_retention.count();
    s.msg_all_consumers = static_cast<std::int32_t>(c.queue.msg_all.consumers_count);
    s.poll_interval = c.queue.msg_all.poll_interval;
    s.downlink_partitions = static_cast<std::int32_t>(c.queue.kafka.downlink.partitions);
    s.session_event_partitions =
        static_cast<std::int32_t>(c.queue.kafka.client_session_event_partitions);
    s.session_request_timeout = c.queue.client_session_event_max_request_timeout;
    s.sessions_limit = c.mqtt.sessions_limit;
    s.application_clients_limit = c.mqtt.application_clients_limit;
    return s;
}

adapters::embedded::fsync_policy to_adapter(config::fsync_policy p) {
    switch (p) {
        case config::fsync_policy::none:
            return adapters::embedded::fsync_policy::none;
        case config::fsync_policy::always:
            return adapters::embedded::fsync_policy::always;
        case config::fsync_policy::interval:
            break;
    }
    return adapters::embedded::fsync_policy::interval;
}

// Written once the listeners are open, atomically (rename), so tools and tests that started the
// daemon with port 0 learn the ports and know it is ready. "mqtt_tcp" is always written (0 when
// that listener is disabled); the other listeners only when enabled.
void write_listeners_file(const std::filesystem::path& data_dir,
                          const std::vector<std::pair<std::string, std::uint16_t>>& mqtt_ports,
                          std::uint16_t http_port, std::optional<std::uint16_t> http_api_port) {
    auto tmp = data_dir / "listeners.json.tmp";
    {
        std::ofstream out(tmp, std::ios::trunc);
        std::uint16_t tcp_port = 0;
        for (const auto& [name, port] : mqtt_ports) {
            if (name == "tcp") {
                tcp_port = port;
            }
        }
        out << "{\"mqtt_tcp\": " << tcp_port;
        for (const auto& [name, port] : mqtt_ports) {
            if (name != "tcp") {
                out << ", \"mqtt_" << name << "\": " << port;
            }
        }
        out << ", \"http\": " << http_port;
        if (http_api_port) {
            out << ", \"http_api\": " << *http_api_port;
        }
        out << "}\n";
    }
    std::filesystem::rename(tmp, data_dir / "listeners.json");
}

net::tls_options tls_options_of(std::string_view name, const config::tls_config_section& c) {
    net::tls_options o;
    o.listener = std::string(name);
    o.cert_file = c.credentials.pem.cert_file;
    o.key_file = c.credentials.pem.key_file;
    o.key_password = c.credentials.pem.key_password;
    o.min_protocol = c.protocol == config::tls_protocol_version::tls_v1_3
                         ? net::tls_protocol::tls_1_3
                         : net::tls_protocol::tls_1_2;
    o.cipher_suites = c.enabled_cipher_suites;
    switch (c.client_auth) {
        case config::client_auth_type::none:
            o.client_auth = net::client_auth_mode::none;
            break;
        case config::client_auth_type::requested:
            o.client_auth = net::client_auth_mode::requested;
            break;
        case config::client_auth_type::required:
            o.client_auth = net::client_auth_mode::required;
            break;
    }
    o.trust_store = c.trust_store;
    o.reload_interval = c.reload_interval;
    return o;
}

std::vector<std::string> split_list(const std::string& text) {
    std::vector<std::string> out;
    std::size_t pos = 0;
    while (pos <= text.size()) {
        auto comma = text.find(',', pos);
        if (comma == std::string::npos) {
            comma = text.size();
        }
        auto item = text.substr(pos, comma - pos);
        item.erase(0, item.find_first_not_of(" \t"));
        item.erase(item.find_last_not_of(" \t") + 1);
        if (!item.empty()) {
            out.push_back(item);
        }
        pos = comma + 1;
    }
    return out;
}

// The embedded log's health with its reason when DOWN (a write error, or low disk space).
http::component_health embedded_log_health(const adapters::embedded::embedded_message_log& log) {
    auto h = health_of(log.healthy());
    const auto s = log.log_status();
    if (s.write_error) {
        h.details["error"] = s.write_error.message();
    }
    if (s.disk == adapters::embedded::disk_state::refusing) {
        h.details["reason"] = "free disk space below queue.embedded.disk.min-free-bytes";
    }
    return h;
}

http::disk_space_reading disk_reading(const adapters::embedded::embedded_log_status& s,
                                      std::string path) {
    return {.path = std::move(path),
            .total_bytes = s.space.total_bytes,
            .free_bytes = s.space.free_bytes,
            .threshold_bytes = s.min_free_bytes,
            .slow_threshold_bytes = s.slow_free_bytes,
            .refusing = s.disk == adapters::embedded::disk_state::refusing,
            .slowed = s.disk == adapters::embedded::disk_state::slowed};
}

// Where the Redis of the configuration is, for log lines and start-up errors (naming the keys).
std::string redis_description(const config::redis_section& redis) {
    if (redis.connection_type == "cluster") {
        std::string nodes;
        for (const auto& [host, port] : redis.cluster.nodes) {
            nodes += fmt::format("{}{}:{}", nodes.empty() ? "" : ",", host, port);
        }
        return fmt::format("redis.cluster: nodes {}", nodes);
    }
    if (redis.connection_type == "sentinel") {
        std::string sentinels;
        for (const auto& [host, port] : redis.sentinel.sentinels) {
            sentinels += fmt::format("{}{}:{}", sentinels.empty() ? "" : ",", host, port);
        }
        return fmt::format("redis.sentinel: master \"{}\" through sentinels {}",
                           redis.sentinel.master, sentinels);
    }
    return fmt::format("redis.standalone: {}:{}", redis.standalone.host, redis.standalone.port);
}

}  // namespace

struct daemon::parts {
    metrics::registry metrics;
    http::health_registry health;
    metrics::refresher_handle health_gauges;  // healthStatus; goes before the registry above
    // Exactly one of the two logs is open: embedded mode or cluster mode (Kafka).
    std::unique_ptr<adapters::embedded::embedded_message_log> log;
    std::unique_ptr<adapters::kafka::kafka_message_log> kafka_log;
    message_log* log_port = nullptr;
    // Embedded mode: the SQLite inbox and metadata store; cluster mode: Redis and PostgreSQL.
    std::unique_ptr<adapters::embedded::embedded_device_inbox> inbox;
    std::unique_ptr<adapters::embedded::sqlite_metadata_store> metadata;
    std::unique_ptr<adapters::redis::redis_device_inbox> redis_inbox;
    std::unique_ptr<adapters::postgres::postgres_metadata_store> postgres_metadata;
    device_inbox* inbox_port = nullptr;
    metadata_store* metadata_port = nullptr;
    // Cluster-wide rate-limit buckets: in process (embedded) or in Redis (cluster).
    std::unique_ptr<shared_counters> counters;
    // The throughput quota's lease on this node (mqtt.rate-limits.total); null when disabled.
    // Shared: the counters' callbacks keep it alive until the counters stopped.
    std::shared_ptr<ratelimit::quota_lease> quota;
    metrics::refresher_handle quota_gauges;
    metrics::refresher_handle log_gauges;  // embedded log state; reset before the log goes
    // Outlives the security parts: the JWT and HTTP providers hold its executor.
    std::unique_ptr<net::io_pool> io;
    security_parts security;  // outlives the node, which admits clients with it
    // Admin users and their tokens (/api/auth/*); their checks run on security.pool.
    admin_login_parts admin;
    // Blocked-client rules changed at runtime (/api/blockedClient), in client.blocked. Goes
    // after the node (its follower applies records to it) and before the list it fills.
    std::unique_ptr<broker::blocked_clients_log> blocked_log;
    std::unique_ptr<broker::node> node;
    // Integrations (/api/integration): definitions, the router's matcher in the node's core,
    // and their executors. Started after the node, stopped before it (destroyed first).
    std::unique_ptr<integration::integration_service> integrations;
    // Liveness of the node's timer thread and client dispatcher (/actuator/health/liveness);
    // stopped before the node (and destroyed before it: declared after it).
    std::unique_ptr<broker::loop_watch> loops;
    // The statistics series of /api/timeseries; stopped before the node whose timers it uses.
    std::unique_ptr<broker::stats_recorder> stats;
    // /api/client-session's view of and actions on the node's sessions; after the node, before
    // the HTTP servers whose routes use it.
    std::unique_ptr<broker::session_admin> session_admin;
    // POST /api/app/drain: closes the listeners below and the node's connections at a bounded
    // rate. Stopped first in stop(); declared before the listeners it closes, so destroyed
    // after them.
    std::unique_ptr<broker::node_drain> drain;
    // The cluster's nodes for /api/app/cluster-info (started in cluster mode only: embedded,
    // it answers with this node alone). Stopped before the node, so its tombstone reaches the
    // log.
    std::unique_ptr<broker::node_directory> nodes;
    // Every enabled MQTT listener ("tcp", "ssl", "ws", "wss"), in start order.
    std::vector<std::pair<std::string, std::unique_ptr<net::tcp_listener>>> mqtt;
    std::vector<std::shared_ptr<net::tls_context_provider>> tls_contexts;
    std::unique_ptr<http::server> http;
    std::unique_ptr<http::server> http_api;     // server.api.port set: /api/** served there
    metrics::refresher_handle listener_gauges;  // listenerConnections, unauthorized drops
};

daemon::daemon(config::broker_config cfg)
    : cfg_(std::move(cfg)), parts_(std::make_unique<parts>()) {}

daemon::~daemon() = default;

void daemon::start() {
    auto& p = *parts_;
    const auto& data_dir = cfg_.starling.data_dir;
    std::filesystem::create_directories(data_dir);
    // Before anything opens files: the soft descriptor limit up to the hard one (the default
    // 1024 is far below what a broker needs), then a reserve of it kept for the stores.
    const std::size_t descriptor_limit = net::raise_descriptor_limit();
    std::size_t fd_reserve = cfg_.listener.fd_reserve;
    if (fd_reserve > descriptor_limit / 4) {
        fd_reserve = descriptor_limit / 4;
        spdlog::warn(
            "listener.fd_reserve: {} is more than a quarter of the descriptor limit "
            "({}); keeping {} free instead",
            cfg_.listener.fd_reserve, descriptor_limit, fd_reserve);
    }
    spdlog::info("file descriptors: limit {}, {} kept free for the stores", descriptor_limit,
                 fd_reserve);

    // HTTP first, with the health endpoints alone: while the node waits for its stores and
    // loads its state, probes get answers — liveness UP, readiness OUT_OF_SERVICE with the
    // reason — instead of a refused connection. The full table replaces it once the node runs.
    p.io = std::make_unique<net::io_pool>("io", cfg_.listener.io_threads);
    p.io->start();
    auto& listener_probe = p.metrics.listener();
    auto http_options = [&](std::string name) {
        http::server_options o;
        o.name = name;
        o.max_connections = cfg_.server.max_connections;
        o.max_connections_per_address = cfg_.server.max_connections_per_address;
        o.reserved_health_connections = cfg_.server.health_reserved_connections;
        o.on_refused = [&listener_probe, name](std::string_view reason) {
            listener_probe.http_connection_refused(name, reason);
        };
        return o;
    };
    p.metrics.process().set_version(config::version());
    p.health_gauges = report_health(p.metrics, p.health);
    {
        http::router health_only;
        http::add_actuator_routes(health_only, p.health, p.metrics);
        p.http = std::make_unique<http::server>(p.io->context(), std::move(health_only),
                                                http_options("http"));
        if (auto st = p.http->start(cfg_.server.address, cfg_.server.port); !st) {
            throw std::runtime_error("server.port: cannot listen on " + cfg_.server.address + ":" +
                                     std::to_string(cfg_.server.port) + ": " +
                                     st.error().message());
        }
    }

    const bool cluster = cfg_.starling.mode == config::run_mode::cluster;
    if (cluster) {
        // Cluster mode: the log is Kafka, device inboxes are in Redis, metadata in PostgreSQL.
        spdlog::info("starting node {} in cluster mode, Kafka at {}, Redis: {}", cfg_.service.id,
                     cfg_.queue.kafka.bootstrap_servers, redis_description(cfg_.redis));
        p.kafka_log = open_kafka_log(cfg_, p.health);
        p.log_port = p.kafka_log.get();
    } else {
        spdlog::info("starting node {} in embedded mode, data in {}", cfg_.service.id,
                     data_dir.string());

        // Ports: embedded adapters under data_dir.
        adapters::embedded::embedded_log_config log_cfg;
        log_cfg.data_dir = data_dir;  // the adapter keeps its files in data_dir/log/
        log_cfg.fsync = to_adapter(cfg_.queue.embedded.fsync);
        log_cfg.fsync_interval = cfg_.queue.embedded.fsync_interval;
        log_cfg.segment_bytes = cfg_.queue.embedded.segment_bytes;
        log_cfg.default_retention_bytes = cfg_.queue.embedded.retention_bytes;
        log_cfg.min_free_bytes = cfg_.queue.embedded.disk_min_free_bytes;
        log_cfg.slow_free_bytes = cfg_.queue.embedded.disk_slow_free_bytes;
        log_cfg.slow_write_rate = cfg_.queue.embedded.disk_slow_rate;
        auto log = adapters::embedded::embedded_message_log::open(log_cfg);
        if (!log) {
            throw std::runtime_error("embedded message log in " + log_cfg.data_dir.string() + ": " +
                                     log.error().message());
        }
        p.log = std::move(log.value());
        p.log_port = p.log.get();
        // Only now that this process holds the data directory (the log locks it) may it
        // replace a previous run's listeners file; a second instance on the same directory
        // fails above.
        std::filesystem::remove(data_dir / "listeners.json");
    }

    if (cluster) {
        open_cluster_stores();
    } else {
        open_embedded_stores();
    }

    if (p.log) {
        // Embedded: the reason with the status, free space as Spring's diskSpace, and metrics.
        p.health.add("messageLog", [log = p.log.get()] { return embedded_log_health(*log); });
        p.health.add("diskSpace", [log = p.log.get(), dir = data_dir.string()] {
            return http::disk_space_health(disk_reading(log->log_status(), dir));
        });
        p.log_gauges = p.metrics.add_refresher([log = p.log.get(), &probe = p.metrics.log()] {
            const auto s = log->log_status();
            probe.embedded_status({.disk_state = static_cast<int>(s.disk),
                                   .free_bytes = s.space.free_bytes,
                                   .disk_refusals = s.disk_refused_records,
                                   .write_errors = s.write_errors,
                                   .quarantined_segments = s.quarantined_segments});
        });
    } else {
        p.health.add("messageLog", [log = p.log_port] { return health_of(log->healthy()); });
    }
    p.health.add("deviceInbox", [inbox = p.inbox_port] { return health_of(inbox->healthy()); });
    p.health.add("metadataStore",
                 [metadata = p.metadata_port] { return health_of(metadata->healthy()); });

    if (const auto& total = cfg_.mqtt.rate_limits.total; total.enabled) {
        ratelimit::quota_options quota;
        quota.limits = total.config;
        quota.block_size = total.block_size;
        quota.lease_return = total.lease_return;
        p.quota =
            ratelimit::quota_lease::create(*p.counters, system_clock::instance(), std::move(quota));
        p.quota_gauges = p.metrics.add_refresher([quota = p.quota, &probe = p.metrics.broker()] {
            const auto s = quota->state();
            probe.quota_state(s.balance, s.reached);
        });
    }

    // Authentication: credentials upserted, providers and blocked clients ready before the node
    // that admits clients with them, and so before any listener opens.
    // The I/O pool (started first of all, below the descriptor limit) also runs the JWT (JWKS)
    // and HTTP providers' requests.
    p.security =
        build_security(cfg_, *p.metadata_port, p.metrics.auth(), p.io->context().get_executor());
    if (p.security.jwt != nullptr) {
        p.security.jwt->start();  // JWKS: first fetch and the refresh timer
    }

    // The broker: loads its state from the log before any listener opens.
    p.node = std::make_unique<broker::node>(
        broker_settings(cfg_), *p.log_port, *p.inbox_port, *p.metadata_port, p.metrics,
        cfg_.actors.client.dispatcher_pool_size, system_clock::instance(),
        broker::admission_services{.authenticator = p.security.authenticator.get(),
                                   .blocked = p.security.blocked.get(),
                                   .counters = p.counters.get(),
                                   .quota = p.quota.get()});
    // Integrations before the node: its router must find them when it routes again what was
    // acknowledged before a crash (integration_service.h).
    p.integrations = std::make_unique<integration::integration_service>(
        *p.metadata_port, *p.log_port, p.node->core().topics(), p.node->core().integrations(),
        p.metrics.integration(),
        integration::integration_service::options{
            .refresh_period = cfg_.integrations.refresh_interval,
            .run_executors = cfg_.integrations.executor_enabled,
            .service_id = cfg_.service.id,
            .status_period = cfg_.service.heartbeat_interval});
    p.integrations->start();
    p.node->start();
    if (p.quota) {
        p.quota->start();
    }
    auto& node_core = p.node->core();
    p.loops = std::make_unique<broker::loop_watch>(node_core.timers(), node_core.dispatcher(),
                                                   system_clock::instance());
    p.loops->start();
    p.health.add_liveness("eventLoops", [loops = p.loops.get()] {
        http::component_health h;
        for (const auto& loop : loops->check()) {
            h.details[loop.name] = {{"sinceBeatMs", loop.since_beat.count()},
                                    {"stalled", loop.stalled}};
            if (loop.stalled) {
                h.status = http::health_status::down;
            }
        }
        return h;
    });
    if (cfg_.historical_data_report.enabled) {
        p.stats = std::make_unique<broker::stats_recorder>(
            broker::stats_recorder_options{.node_id = cfg_.service.id,
                                           .interval = cfg_.historical_data_report.interval,
                                           .retention = cfg_.historical_data_report.ttl},
            *p.metadata_port, node_core.timers(), system_clock::instance(),
            [&core = node_core] { return core.stats_now(); });
        p.stats->start();
    }
    p.nodes = std::make_unique<broker::node_directory>(
        node_core.log(), node_core.topics().sys_nodes(),
        node_core.topics().group(cfg_.service.id + "-nodes"),
        [&core = node_core, &health = p.health, id = cfg_.service.id,
         started = system_clock::instance().epoch_ms()] {
            return broker::node_status{.node_id = id,
                                       .version = std::string(config::version()),
                                       .started_at_ms = started,
                                       .connected_sessions = core.probe().connected(),
                                       .health = std::string(to_string(health.evaluate().status))};
        },
        cfg_.service.heartbeat_interval, [] { return system_clock::instance().epoch_ms(); });
    if (cluster) {
        if (auto st = p.nodes->start(); !st) {
            throw std::runtime_error("sys.nodes: cannot follow the cluster's nodes: " +
                                     st.error().message());
        }
    }

    // The rules of /api/blockedClient, on top of security.mqtt.blocked-clients (which are
    // applied again at every start): in embedded mode read from client.blocked here; in
    // cluster mode the state follower reads the topic from its start and keeps applying what
    // any node writes, so a rule takes effect cluster-wide within the follower's lag.
    p.blocked_log = std::make_unique<broker::blocked_clients_log>(
        *p.log_port, p.node->core().topics().client_blocked(), *p.security.blocked);
    if (p.kafka_log) {
        p.node->follow_blocked(p.blocked_log.get());
    } else {
        if (auto st = p.blocked_log->create_topic(); !st) {
            throw std::runtime_error("client.blocked: cannot create the topic: " +
                                     st.error().message());
        }
        auto loaded = p.blocked_log->load(
            p.node->core().topics().group(cfg_.service.id + "-blocked-" +
                                          std::to_string(system_clock::instance().epoch_ms())),
            std::chrono::seconds(30), system_clock::instance().epoch_ms());
        if (!loaded) {
            throw std::runtime_error("client.blocked: cannot load the rules: " +
                                     loaded.error().message());
        }
        spdlog::info("blocked clients: {} rules loaded from client.blocked", loaded.value());
    }

    // HTTP and MQTT listeners on the same I/O pool. With server.api.port the management API
    // gets a server (and connection slots) of its own; health and metrics stay on server.port.
    http::router routes;
    http::router api_routes;
    auto& api = cfg_.server.api_port ? api_routes : routes;
    p.admin = build_admin_login(cfg_, *p.metadata_port, *p.security.pool);
    const http::api_access& access = p.admin.access;
    if (p.admin.users) {
        http::add_auth_routes(
            api, http::auth_api{.users = *p.admin.users,
                                .tokens = *p.admin.tokens,
                                .now_s = [] { return system_clock::instance().epoch_ms() / 1000; },
                                .access = access});
    }
    http::add_actuator_routes(routes, p.health, p.metrics);
    http::add_credentials_routes(api, *p.metadata_port, *p.security.pool,
                                 p.security.authenticator.get(), access);
    http::add_drops_routes(api, p.metrics.broker().drops(), access);
    http::add_quota_routes(api, p.quota, access);
    http::add_log_level_routes(api, access);
    http::add_unauthorized_client_routes(api, *p.metadata_port, access);
    http::add_app_shared_subs_routes(api, *p.metadata_port, access);
    integration::add_integration_routes(api, *p.metadata_port, *p.integrations, access);
    http::add_timeseries_routes(api, *p.metadata_port, access);
    http::add_openapi_routes(api, access);
    http::add_ui_routes(api, access);
    http::add_retained_msg_routes(api, retained_admin(p.node->core(), access));
    p.session_admin = std::make_unique<broker::session_admin>(p.node->core());
    http::add_client_session_routes(api, client_session_admin(*p.session_admin, access));
    http::add_subscription_routes(api,
                                  subscription_admin(*p.session_admin, p.node->core(), access));
    http::add_publish_routes(api, publish_admin(p.node->core(), access));
    add_drain(api);
    http::add_cluster_info_routes(
        api, http::cluster_info_api{.nodes =
                                        [d = p.nodes.get()] {
                                            std::vector<http::cluster_node_view> out;
                                            for (const auto& n : d->nodes()) {
                                                out.push_back(
                                                    {.node_id = n.node_id,
                                                     .version = n.version,
                                                     .started_at_ms = n.started_at_ms,
                                                     .last_seen_ms = n.heartbeat_at_ms,
                                                     .connected_sessions = n.connected_sessions,
                                                     .health = n.health,
                                                     .self = n.self,
                                                     .reachable = n.reachable});
                                            }
                                            return out;
                                        },
                                    .now_ms = [] { return system_clock::instance().epoch_ms(); },
                                    .access = access});
    http::add_blocked_client_routes(
        api, http::blocked_client_api{
                 .list = *p.security.blocked,
                 .put =
                     [log = p.blocked_log.get()](auth::blocked_entry e,
                                                 std::function<void(status)> done) {
                         log->put(std::move(e), std::move(done));
                     },
                 .erase =
                     [log = p.blocked_log.get()](auth::block_type type, std::string value,
                                                 std::function<void(result<bool>)> done) {
                         log->erase(type, value, std::move(done));
                     },
                 .now_ms = [] { return system_clock::instance().epoch_ms(); },
                 .access = access});
    p.http->replace_routes(std::move(routes));
    if (cfg_.server.api_port) {
        p.http_api = std::make_unique<http::server>(p.io->context(), std::move(api_routes),
                                                    http_options("api"));
        if (auto st = p.http_api->start(cfg_.server.api_address, *cfg_.server.api_port); !st) {
            throw std::runtime_error(
                "server.api.port: cannot listen on " + cfg_.server.api_address + ":" +
                std::to_string(*cfg_.server.api_port) + ": " + st.error().message());
        }
        spdlog::info("HTTP API (/api) on {}:{}", cfg_.server.api_address, p.http_api->local_port());
    }

    std::vector<std::pair<std::string, std::uint16_t>> mqtt_ports;
    auto& core = p.node->core();
    // Admission (net/admission.h): per-address limits and the descriptor reserve over every
    // MQTT listener; each listener adds its own cap.
    auto admission = net::admission_control::create(
        {.max_connections_per_address = cfg_.listener.max_connections_per_address,
         .connect_rate_per_address = cfg_.listener.connect_rate_per_address,
         .max_tracked_addresses = 65536,
         .descriptor_reserve = fd_reserve});
    auto handshake_options = [&listener_probe, this](std::string name) {
        net::handshake_options h;
        h.timeout = cfg_.listener.connect_timeout;  // the listener's deadline from accept rules
        h.on_failure = [&listener_probe, name](std::string_view reason) {
            listener_probe.handshake_failed(name, reason);
        };
        return h;
    };
    // One listener: the plain TCP accept path plus the listener's handshake, if any.
    auto open_listener = [&](std::string name, const std::string& bind_address,
                             std::uint16_t bind_port, std::optional<bool> proxy_enabled,
                             std::chrono::seconds shutdown_timeout, std::uint32_t max_connections,
                             bool so_keep_alive, std::shared_ptr<net::handshaker> handshake) {
        const bool proxied = proxy_enabled.value_or(cfg_.listener.proxy_enabled);
        if (proxied) {
            // The PROXY header comes first on the wire, before any TLS or HTTP byte.
            handshake = std::make_shared<net::proxy_handshaker>(name, std::move(handshake),
                                                                handshake_options(name));
            spdlog::info("listener.{}: PROXY protocol v1/v2 header required", name);
        }
        net::listener_options opts;
        opts.bind_address = bind_address;
        opts.port = bind_port;
        opts.so_receive_buffer = cfg_.listener.so_receive_buffer;
        opts.connection.write_buffer_high_water_mark = cfg_.listener.write_buffer_high_water_mark;
        opts.connection.write_buffer_low_water_mark = cfg_.listener.write_buffer_low_water_mark;
        opts.connection.close_timeout = shutdown_timeout;
        opts.handshake = std::move(handshake);
        opts.name = name;
        opts.admission = admission;
        opts.max_connections = max_connections;
        opts.address_from_proxy_header = proxied;
        opts.connect_timeout = cfg_.listener.connect_timeout;
        opts.keepalive = {.enabled = so_keep_alive,
                          .idle = cfg_.listener.so_keep_alive_idle,
                          .interval = cfg_.listener.so_keep_alive_interval,
                          .count = static_cast<int>(cfg_.listener.so_keep_alive_count)};
        opts.on_refused = [&listener_probe, name](net::refusal why) {
            listener_probe.connection_refused(name, net::to_string(why));
        };
        opts.on_connect_timeout = [&listener_probe, name] {
            listener_probe.connect_timed_out(name);
        };
        auto listener = std::make_unique<net::tcp_listener>(*p.io, opts);
        auto st = listener->start([&core](std::shared_ptr<net::connection> conn) {
            auto handler = std::make_shared<broker::mqtt_connection>(core, conn);
            conn->start(handler);
        });
        if (!st) {
            throw std::runtime_error("listener." + name + ".bind_port: cannot listen on " +
                                     opts.bind_address + ":" + std::to_string(opts.port) + ": " +
                                     st.error().message());
        }
        spdlog::info("MQTT {} listener on {}:{}", name, opts.bind_address, listener->local_port());
        mqtt_ports.emplace_back(name, listener->local_port());
        p.mqtt.emplace_back(std::move(name), std::move(listener));
    };
    auto tls_contexts = [&](std::string name, const config::tls_config_section& c) {
        auto options = tls_options_of(name, c);
        options.on_reload = [&listener_probe, name](bool ok) {
            listener_probe.credentials_reloaded(name, ok);
        };
        std::shared_ptr<net::tls_context_provider> provider;
        try {
            provider = net::tls_context_provider::create(p.io->context(), std::move(options));
        } catch (const std::exception& e) {
            throw std::runtime_error("listener." + name + ".config: " + e.what());
        }
        provider->start();
        p.tls_contexts.push_back(provider);
        return provider;
    };
    auto ws_options_of = [&](std::string name, const config::ws_netty_section& netty) {
        net::ws_options o;
        o.listener = name;
        o.sub_protocols = split_list(netty.sub_protocols);
        o.max_message_size = netty.max_payload_size;
        o.handshake = handshake_options(name);
        return o;
    };

    const auto& l = cfg_.listener;
    if (l.tcp.enabled) {
        open_listener("tcp", l.tcp.bind_address, l.tcp.bind_port, l.tcp.proxy_enabled,
                      l.tcp.netty.shutdown_timeout, l.tcp.max_connections,
                      l.tcp.netty.so_keep_alive, nullptr);
    }
    if (l.ssl.enabled) {
        open_listener("ssl", l.ssl.bind_address, l.ssl.bind_port, l.ssl.proxy_enabled,
                      l.ssl.netty.shutdown_timeout, l.ssl.max_connections,
                      l.ssl.netty.so_keep_alive,
                      std::make_shared<net::tls_handshaker>(tls_contexts("ssl", l.ssl.config),
                                                            handshake_options("ssl")));
    }
    if (l.ws.enabled) {
        open_listener("ws", l.ws.bind_address, l.ws.bind_port, l.ws.proxy_enabled,
                      l.ws.netty.shutdown_timeout, l.ws.max_connections, l.ws.netty.so_keep_alive,
                      std::make_shared<net::ws_handshaker>(ws_options_of("ws", l.ws.netty)));
    }
    if (l.wss.enabled) {
        open_listener("wss", l.wss.bind_address, l.wss.bind_port, l.wss.proxy_enabled,
                      l.wss.netty.shutdown_timeout, l.wss.max_connections,
                      l.wss.netty.so_keep_alive,
                      std::make_shared<net::ws_handshaker>(ws_options_of("wss", l.wss.netty),
                                                           tls_contexts("wss", l.wss.config)));
    }
    // Gauges from live state at each scrape: sockets per listener, and the unauthorized-client
    // rows the metadata store dropped (its own running count).
    p.listener_gauges = p.metrics.add_refresher([&p] {
        for (const auto& [name, listener] : p.mqtt) {
            p.metrics.listener().connections(name, listener->current_connections());
        }
        if (p.metadata) {
            p.metrics.auth().unauthorized_rows_dropped(p.metadata->unauthorized_dropped());
        }
        if (p.postgres_metadata) {
            p.metrics.auth().unauthorized_rows_dropped(p.postgres_metadata->unauthorized_dropped());
        }
        for (const auto& contexts : p.tls_contexts) {
            if (const auto not_after = contexts->certificate_not_after()) {
                p.metrics.listener().certificate_expires(contexts->options().listener,
                                                         static_cast<double>(*not_after));
            }
        }
    });
    spdlog::info("HTTP on {}:{}", cfg_.server.address, p.http->local_port());
    p.health.set_lifecycle(http::lifecycle::running);
    write_listeners_file(
        data_dir, mqtt_ports, p.http->local_port(),
        p.http_api ? std::optional<std::uint16_t>(p.http_api->local_port()) : std::nullopt);
}

void daemon::add_drain(http::router& api) {
    auto& p = *parts_;
    auto& sessions = p.node->core().sessions();
    p.drain = std::make_unique<broker::node_drain>(broker::node_drain::hooks{
        .stop_accepting =
            [&p] {
                p.health.set_lifecycle(http::lifecycle::draining);  // readiness DOWN first
                for (auto& [name, listener] : p.mqtt) {
                    listener->stop();
                }
            },
        .connected =
            [&sessions] {
                std::vector<std::string> ids;
                sessions.for_each_actor([&ids](const std::shared_ptr<broker::client_actor>& a) {
                    if (a->connected()) {
                        ids.push_back(a->client_id());
                    }
                });
                return ids;
            },
        .disconnect =
            [&sessions](const std::string& client_id, const std::string& server_reference,
                        std::function<void(bool)> closed) {
                if (auto actor = sessions.find_actor(client_id)) {
                    actor->drain_disconnect(server_reference, std::move(closed));
                } else {
                    closed(false);
                }
            },
        .now_ms = [] { return system_clock::instance().epoch_ms(); }});
    http::add_drain_routes(
        api, http::drain_api{
                 .start =
                     [&p, this](const http::drain_request& req) {
                         // The listeners are all open once the node runs (set after they opened).
                         if (p.health.current_lifecycle() == http::lifecycle::draining) {
                             return http::drain_start::already_draining;
                         }
                         if (p.health.current_lifecycle() != http::lifecycle::running) {
                             return http::drain_start::not_serving;
                         }
                         broker::node_drain::options opts;
                         opts.rate = req.rate.value_or(cfg_.starling.drain_rate);
                         opts.server_reference =
                             req.server_reference.value_or(cfg_.starling.drain_server_reference);
                         return p.drain->start(std::move(opts))
                                    ? http::drain_start::started
                                    : http::drain_start::already_draining;
                     },
                 .progress =
                     [&p] {
                         const auto now = p.drain->current();
                         return http::drain_progress_view{
                             .state = std::string(broker::to_string(now.current)),
                             .started_at_ms = now.started_at_ms,
                             .drained_at_ms = now.drained_at_ms,
                             .disconnected = now.disconnected,
                             .remaining = now.remaining,
                             .rate = now.rate,
                             .server_reference = now.server_reference};
                     },
                 .access = p.admin.access});
}

void daemon::stop() {
    auto& p = *parts_;
    if (p.drain) {
        p.drain->stop();  // before the lifecycle below: a drain's own change must not follow it
    }
    p.health.set_lifecycle(http::lifecycle::stopping);
    for (auto& [name, listener] : p.mqtt) {
        listener->stop();  // no new connections; the node below drains the open ones
    }
    for (auto& contexts : p.tls_contexts) {
        contexts->stop();
    }
    if (p.security.authenticator) {
        p.security.authenticator->stop();  // no verdict reaches a connection from now on
        p.security.timers->stop();         // no provider timeout fires into it either
    }
    // Before the I/O pool stops: their requests and timers run on it.
    if (p.security.jwt != nullptr) {
        p.security.jwt->stop();
    }
    if (p.security.http != nullptr) {
        p.security.http->stop();
    }
    if (p.security.pool) {
        p.security.pool->stop();  // verifications in progress finish; queued ones are dropped
    }
    if (p.stats) {
        p.stats->stop();
    }
    if (p.loops) {
        p.loops->stop();
    }
    if (p.nodes) {
        p.nodes->stop();  // this node leaves /api/app/cluster-info
    }
    if (p.integrations) {
        p.integrations->stop();  // executors leave their groups; the router matches nothing
    }
    if (p.node) {
        p.node->stop(cfg_.starling.shutdown_timeout);
    }
    if (p.quota) {
        p.quota->stop();  // no more lease returns; the counters below run what is queued
    }
    if (p.http) {
        p.http->stop();
    }
    if (p.http_api) {
        p.http_api->stop();
    }
    if (p.io) {
        p.io->stop();
    }
    p.integrations.reset();  // before the node: it holds the node's router matcher
    p.node.reset();
    p.counters.reset();  // after every consumer that charges it stopped
    if (p.log) {
        p.log->stop();
    }
    if (p.kafka_log) {
        p.kafka_log->stop();
    }
    if (p.inbox) {
        p.inbox->stop();
    }
    if (p.metadata) {
        p.metadata->stop();
    }
    if (p.redis_inbox) {
        p.redis_inbox->stop();
    }
    if (p.postgres_metadata) {
        p.postgres_metadata->stop();
    }
}

void daemon::open_embedded_stores() {
    auto& p = *parts_;
    const auto& data_dir = cfg_.starling.data_dir;
    adapters::embedded::embedded_device_inbox::options inbox_opts;
    inbox_opts.data_dir = data_dir;
    inbox_opts.settings.max_messages = cfg_.mqtt.persistent_session.device.persisted_messages.limit;
    inbox_opts.settings.default_ttl_ms =
        cfg_.mqtt.persistent_session.device.persisted_messages.ttl.count() * 1000;
    // fsync: always means power-loss safety for every embedded store, not only the log: the
    // msg.persisted offset is committed (and fsynced) right after the inbox append, so an inbox
    // commit that is not synced too could be lost while its offset survives.
    const bool fsync_always = cfg_.queue.embedded.fsync == config::fsync_policy::always;
    inbox_opts.fsync_commits = fsync_always;
    auto inbox =
        adapters::embedded::embedded_device_inbox::open(inbox_opts, system_clock::instance());
    if (!inbox) {
        throw std::runtime_error("embedded device inbox: " + inbox.error().message());
    }
    p.inbox = std::move(inbox.value());
    p.inbox_port = p.inbox.get();

    adapters::embedded::sqlite_metadata_store::options meta_opts;
    meta_opts.data_dir = data_dir;
    meta_opts.unauthorized = unauthorized_options_of(cfg_);
    meta_opts.fsync_commits = fsync_always;
    auto metadata =
        adapters::embedded::sqlite_metadata_store::open(meta_opts, system_clock::instance());
    if (!metadata) {
        throw std::runtime_error("metadata store: " + metadata.error().message());
    }
    p.metadata = std::move(metadata.value());
    p.metadata_port = p.metadata.get();
    p.counters =
        std::make_unique<adapters::embedded::embedded_shared_counters>(system_clock::instance());
}

// Cluster mode: persistent DEVICE inboxes in Redis (shared by every node, so a device may
// reconnect anywhere) and metadata in PostgreSQL. Both fail start-up with the reason, which the
// adapters also log with the server's own message.
void daemon::open_cluster_stores() {
    auto& p = *parts_;
    adapters::redis::redis_inbox_config redis_cfg;
    redis_cfg.host = cfg_.redis.standalone.host;
    redis_cfg.port = cfg_.redis.standalone.port;
    redis_cfg.db = cfg_.redis.db;
    redis_cfg.username = cfg_.redis.username;
    redis_cfg.password = cfg_.redis.password;
    redis_cfg.connect_timeout = cfg_.redis.standalone.connect_timeout;
    redis_cfg.command_timeout = cfg_.redis.standalone.read_timeout;
    redis_cfg.max_messages = cfg_.mqtt.persistent_session.device.persisted_messages.limit;
    // Two clusters (or test runs) sharing one Redis keep apart the way they do in Kafka: by the
    // prefix of their topics.
    if (!cfg_.queue.kafka.kafka_prefix.empty()) {
        redis_cfg.key_prefix = cfg_.queue.kafka.kafka_prefix + ":";
    }
    redis_cfg.default_ttl = std::chrono::duration_cast<std::chrono::milliseconds>(
        cfg_.mqtt.persistent_session.device.persisted_messages.ttl);
    redis_cfg.wait_replicas = cfg_.redis.wait_replicas;
    redis_cfg.wait_timeout = cfg_.redis.wait_timeout;
    const bool sentinel = cfg_.redis.connection_type == "sentinel";
    if (sentinel) {
        redis_cfg.sentinel = {.master = cfg_.redis.sentinel.master,
                              .sentinels = cfg_.redis.sentinel.sentinels,
                              .password = cfg_.redis.sentinel.password};
    }
    if (cfg_.redis.ssl.enabled) {
        redis_cfg.tls = {.enabled = true,
                         .ca_file = cfg_.redis.ssl.cert_file,
                         .cert_file = cfg_.redis.ssl.user_cert_file,
                         .key_file = cfg_.redis.ssl.user_key_file};
    }
    if (cfg_.redis.connection_type == "cluster") {
        redis_cfg.cluster = {
            .nodes = cfg_.redis.cluster.nodes,
            .max_redirects = cfg_.redis.cluster.max_redirects,
            .topology_refresh = std::chrono::duration_cast<std::chrono::milliseconds>(
                cfg_.redis.cluster.topology_refresh_period)};
    }
    const std::string redis_at = redis_description(cfg_.redis);
    wait_for_store("Redis", [&]() -> std::optional<std::string> {
        std::string detail;
        auto inbox =
            adapters::redis::open_redis_device_inbox(redis_cfg, system_clock::instance(), &detail);
        if (!inbox) {
            return "cannot use Redis (" + redis_at + "): " + inbox.error().message() + ": " +
                   detail;
        }
        p.redis_inbox = std::move(inbox.value());
        return std::nullopt;
    });
    p.inbox_port = p.redis_inbox.get();

    // Cluster-wide rate-limit buckets (rate-limits.device-persisted-messages): the same Redis,
    // its own connection so a busy inbox never delays a limit check.
    adapters::redis::redis_counters_config counters_cfg;
    counters_cfg.host = redis_cfg.host;
    counters_cfg.port = redis_cfg.port;
    counters_cfg.db = redis_cfg.db;
    counters_cfg.username = redis_cfg.username;
    counters_cfg.password = redis_cfg.password;
    counters_cfg.connect_timeout = redis_cfg.connect_timeout;
    counters_cfg.command_timeout = redis_cfg.command_timeout;
    counters_cfg.key_prefix = redis_cfg.key_prefix;
    counters_cfg.sentinel = redis_cfg.sentinel;
    counters_cfg.cluster = redis_cfg.cluster;
    counters_cfg.tls = redis_cfg.tls;
    wait_for_store("Redis", [&]() -> std::optional<std::string> {
        std::string detail;
        auto counters = adapters::redis::open_redis_shared_counters(
            counters_cfg, system_clock::instance(), &detail);
        if (!counters) {
            return "cannot use Redis (" + redis_at + "): " + counters.error().message() + ": " +
                   detail;
        }
        p.counters = std::move(counters.value());
        return std::nullopt;
    });

    p.postgres_metadata = open_postgres_metadata(cfg_, p.health);
    p.metadata_port = p.postgres_metadata.get();
    // Nothing local holds data_dir in cluster mode; only the listeners file lives there.
    std::filesystem::remove(cfg_.starling.data_dir / "listeners.json");
}

void daemon::wait_for_store(std::string_view what,
                            const std::function<std::optional<std::string>()>& attempt) {
    app::wait_for_store(parts_->health, what, attempt);
}

}  // namespace starling::app
