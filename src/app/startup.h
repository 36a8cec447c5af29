#pragma once

// What starlingd and starling-ie both need to come up in cluster mode: the Kafka adapter's
// settings from the configuration, and a patient wait for a store that does not answer yet.

#include "adapters/kafka/kafka_message_log.h"
#include "adapters/postgres/postgres_metadata_store.h"
#include "adapters/unauthorized_log.h"
#include "config/broker_config.h"
#include "http/health.h"
#include "metrics/registry.h"

#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

namespace starling::app {

// SIGTERM or SIGINT arrived while start-up waited for a store: nothing is serving yet, so the
// caller stops what it built and exits cleanly.
struct start_interrupted : std::runtime_error {
    using std::runtime_error::runtime_error;
};

// queue.kafka.* -> the Kafka adapter's settings. The client id is the service id, so
// broker-side logs and quotas name the process.
adapters::kafka::kafka_log_config kafka_config(const config::broker_config& c);

// security.mqtt.unauthorized-clients.* -> both metadata adapters' bounds of the log.
adapters::unauthorized_log_options unauthorized_options_of(const config::broker_config& c);

// UP or DOWN.
http::component_health health_of(bool healthy);

// healthStatus{component}: what /actuator/health answers, refreshed at each scrape ("overall"
// is readiness), from the first scrape on, so a process stuck waiting for a store shows too.
// Keep the handle alive as long as `health`.
[[nodiscard]] metrics::refresher_handle report_health(metrics::registry& metrics,
                                                      const http::health_registry& health);

// Runs `attempt` (nullopt = done, else the error to log and report) until it succeeds, pausing
// 1 s doubling to 30 s between tries and reporting a "startup" component OUT_OF_SERVICE with
// the reason meanwhile; the pause ends early on SIGTERM/SIGINT (blocked in every thread, see
// main.cpp), which throws start_interrupted.
void wait_for_store(http::health_registry& health, std::string_view what,
                    const std::function<std::optional<std::string>()>& attempt);

// The Kafka client of queue.kafka.*, once Kafka answers a metadata round trip (waited for as
// above: a bad bootstrap list or a Kafka that is down is named here, not later as a topic
// creation error). Throws std::runtime_error when the client cannot even be created.
std::unique_ptr<adapters::kafka::kafka_message_log> open_kafka_log(const config::broker_config& cfg,
                                                                   http::health_registry& health);

// The PostgreSQL metadata store of spring.datasource.*, waited for as above.
std::unique_ptr<adapters::postgres::postgres_metadata_store> open_postgres_metadata(
    const config::broker_config& cfg, http::health_registry& health);

}  // namespace starling::app
