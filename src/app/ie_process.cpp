#include "app/ie_process.h"

#include "adapters/kafka/kafka_message_log.h"
#include "adapters/postgres/postgres_metadata_store.h"
#include "app/startup.h"
#include "broker/topics.h"
#include "config/cli.h"
#include "http/actuator.h"
#include "http/health.h"
#include "http/server.h"
#include "metrics/registry.h"
#include "net/io_pool.h"
#include "starling/clock.h"

#include "integration/integration_service.h"
#include "integration/matcher.h"
#include <spdlog/spdlog.h>

#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace starling::app {

struct ie_process::parts {
    metrics::registry metrics;
    http::health_registry health;
    metrics::refresher_handle health_gauges;  // goes before the registry above
    std::unique_ptr<net::io_pool> io;
    std::unique_ptr<http::server> http;
    std::unique_ptr<adapters::kafka::kafka_message_log> log;
    std::unique_ptr<adapters::postgres::postgres_metadata_store> metadata;
    // No router reads it: the brokers route the copies. The service keeps it up to date all
    // the same, as it does in a broker node.
    integration::integration_matcher unused_matcher;
    std::unique_ptr<integration::integration_service> integrations;
};

ie_process::ie_process(config::broker_config cfg)
    : cfg_(std::move(cfg)), parts_(std::make_unique<parts>()) {}

ie_process::~ie_process() = default;

void ie_process::start() {
    auto& p = *parts_;
    if (cfg_.starling.mode != config::run_mode::cluster) {
        throw std::runtime_error(
            "starling.mode: starling-ie runs in cluster mode only (an embedded broker runs its "
            "integrations itself)");
    }
    // Health and metrics first, so probes get answers while the stores are waited for.
    p.io = std::make_unique<net::io_pool>("io", 1);
    p.io->start();
    p.metrics.process().set_version(config::version());
    p.health_gauges = report_health(p.metrics, p.health);
    {
        http::router routes;
        http::add_actuator_routes(routes, p.health, p.metrics);
        http::server_options o;
        o.name = "http";
        o.max_connections = cfg_.server.max_connections;
        o.max_connections_per_address = cfg_.server.max_connections_per_address;
        o.reserved_health_connections = cfg_.server.health_reserved_connections;
        p.http = std::make_unique<http::server>(p.io->context(), std::move(routes), o);
        if (auto st = p.http->start(cfg_.server.address, cfg_.server.port); !st) {
            throw std::runtime_error("server.port: cannot listen on " + cfg_.server.address + ":" +
                                     std::to_string(cfg_.server.port) + ": " +
                                     st.error().message());
        }
    }

    spdlog::info("starting integration executor {}, Kafka at {}", cfg_.service.id,
                 cfg_.queue.kafka.bootstrap_servers);
    p.log = open_kafka_log(cfg_, p.health);
    p.metadata = open_postgres_metadata(cfg_, p.health);
    const broker::topic_names topics(cfg_.queue.kafka.kafka_prefix);
    p.health.add("messageLog", [log = p.log.get()] { return health_of(log->healthy()); });
    p.health.add("metadataStore",
                 [metadata = p.metadata.get()] { return health_of(metadata->healthy()); });

    p.integrations = std::make_unique<integration::integration_service>(
        *p.metadata, *p.log, topics, p.unused_matcher, p.metrics.integration(),
        integration::integration_service::options{
            .refresh_period = cfg_.integrations.refresh_interval,
            .run_executors = true,
            .service_id = cfg_.service.id,
            .status_period = cfg_.service.heartbeat_interval});
    p.integrations->start();
    p.health.set_lifecycle(http::lifecycle::running);
    spdlog::info("integration executor {} running", cfg_.service.id);
}

void ie_process::stop() {
    auto& p = *parts_;
    p.health.set_lifecycle(http::lifecycle::stopping);
    if (p.integrations) {
        p.integrations->stop();  // windows finish, offsets are committed, groups left
    }
    if (p.http) {
        p.http->stop();
    }
    if (p.io) {
        p.io->stop();
    }
    p.integrations.reset();
    if (p.log) {
        p.log->stop();
    }
    if (p.metadata) {
        p.metadata->stop();
    }
}

}  // namespace starling::app
