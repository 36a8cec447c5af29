#include "app/startup.h"

#include "broker/topics.h"
#include "starling/clock.h"

#include <signal.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <stdexcept>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

namespace starling::app {

adapters::kafka::kafka_log_config kafka_config(const config::broker_config& c) {
    const auto& k = c.queue.kafka;
    adapters::kafka::kafka_log_config out;
    out.bootstrap_servers = k.bootstrap_servers;
    out.client_id = c.service.id;
    out.acks = k.defaults.producer.acks;
    out.enable_idempotence = k.defaults.producer.enable_idempotence;
    out.linger = k.defaults.producer.linger;
    out.batch_size = static_cast<std::int32_t>(
        std::min<std::uint32_t>(k.defaults.producer.batch_size, 2147483647U));
    out.compression = k.defaults.producer.compression_type;
    out.delivery_timeout = k.defaults.producer.delivery_timeout;
    out.session_timeout = k.defaults.consumer.session_timeout;
    out.heartbeat_interval = k.defaults.consumer.heartbeat_interval;
    out.max_poll_interval = k.defaults.consumer.max_poll_interval;
    out.replication_factor = static_cast<std::int16_t>(k.replication_factor);
    out.admin_timeout = k.admin_command_timeout;
    out.common_properties = k.defaults.config;
    out.producer_properties = k.defaults.producer.config;
    out.consumer_properties = k.defaults.consumer.config;
    const std::string msg_all = broker::topic_names(k.kafka_prefix).msg_all();
    if (!k.msg_all.topic_properties.empty()) {
        out.topic_configs[msg_all] = k.msg_all.topic_properties;
    }
    if (!k.msg_all.additional_consumer_config.empty()) {
        out.topic_consumer_properties[msg_all] = k.msg_all.additional_consumer_config;
    }
    return out;
}

adapters::unauthorized_log_options unauthorized_options_of(const config::broker_config& c) {
    const auto& u = c.security.mqtt.unauthorized_clients;
    adapters::unauthorized_log_options o;
    o.max_rows = u.max_rows;
    o.rows_per_address = u.rows_per_address_per_minute;
    o.address_period = std::chrono::seconds(60);
    o.rows_per_second = u.rows_per_second;
    return o;
}

http::component_health health_of(bool healthy) {
    http::component_health h;
    h.status = healthy ? http::health_status::up : http::health_status::down;
    return h;
}

metrics::refresher_handle report_health(metrics::registry& metrics,
                                        const http::health_registry& health) {
    return metrics.add_refresher([&metrics, &health] {
        const auto report = health.evaluate();
        std::vector<std::pair<std::string, int>> statuses;
        statuses.reserve(report.components.size() + 1);
        statuses.emplace_back("overall", static_cast<int>(report.status));
        for (const auto& [component, status] : report.components) {
            statuses.emplace_back(component, static_cast<int>(status));
        }
        metrics.health().report(statuses);
    });
}

void wait_for_store(http::health_registry& health, std::string_view what,
                    const std::function<std::optional<std::string>()>& attempt) {
    std::chrono::milliseconds pause = std::chrono::seconds(1);
    for (int tries = 1;; ++tries) {
        auto error = attempt();
        if (!error) {
            if (tries > 1) {
                spdlog::info("{} answered after {} tries; start-up goes on", what, tries);
                health.remove("startup");
            }
            return;
        }
        spdlog::warn("{} (try {}); trying again in {} s, not ready until then", *error, tries,
                     pause.count() / 1000);
        health.remove("startup");
        health.add("startup", [waiting = std::string(what), why = *error, tries] {
            return http::component_health{
                http::health_status::out_of_service,
                {{"waitingFor", waiting}, {"error", why}, {"tries", tries}}};
        });
        // The pause is a wait for the stop signals (blocked in every thread, see main.cpp), so
        // a process told to stop while it waits stops at once.
        sigset_t stop_signals;
        sigemptyset(&stop_signals);
        sigaddset(&stop_signals, SIGTERM);
        sigaddset(&stop_signals, SIGINT);
        const timespec timeout{.tv_sec = static_cast<time_t>(pause.count() / 1000), .tv_nsec = 0};
        const int sig = sigtimedwait(&stop_signals, nullptr, &timeout);
        if (sig == SIGTERM || sig == SIGINT) {
            throw start_interrupted(std::string(sig == SIGTERM ? "SIGTERM" : "SIGINT") +
                                    " while waiting for " + std::string(what));
        }
        pause = std::min<std::chrono::milliseconds>(pause * 2, std::chrono::seconds(30));
    }
}

std::unique_ptr<adapters::kafka::kafka_message_log> open_kafka_log(const config::broker_config& cfg,
                                                                   http::health_registry& health) {
    auto opened = adapters::kafka::kafka_message_log::open(kafka_config(cfg));
    if (!opened) {
        throw std::runtime_error("queue.kafka: cannot create the Kafka client: " +
                                 opened.error().message() + " (see the log line above)");
    }
    auto log = std::move(opened.value());
    const auto msg_all = broker::topic_names(cfg.queue.kafka.kafka_prefix).msg_all();
    wait_for_store(health, "Kafka", [&]() -> std::optional<std::string> {
        auto probe = log->partition_count(msg_all);
        if (probe || probe.error() == std::errc::no_such_file_or_directory) {
            return std::nullopt;
        }
        return "queue.kafka.bootstrap.servers: Kafka at \"" + cfg.queue.kafka.bootstrap_servers +
               "\" did not answer within " +
               std::to_string(cfg.queue.kafka.admin_command_timeout.count()) +
               " s (queue.kafka.admin.command-timeout): " + probe.error().message();
    });
    return log;
}

std::unique_ptr<adapters::postgres::postgres_metadata_store> open_postgres_metadata(
    const config::broker_config& cfg, http::health_registry& health) {
    adapters::postgres::postgres_metadata_store::tuning tuning;
    tuning.unauthorized = unauthorized_options_of(cfg);
    std::unique_ptr<adapters::postgres::postgres_metadata_store> store;
    wait_for_store(health, "PostgreSQL", [&]() -> std::optional<std::string> {
        auto metadata = adapters::postgres::postgres_metadata_store::open(
            cfg.spring.datasource, system_clock::instance(), tuning);
        if (!metadata) {
            return "spring.datasource.url: cannot use PostgreSQL: " + metadata.error().message();
        }
        store = std::move(metadata.value());
        return std::nullopt;
    });
    return store;
}

}  // namespace starling::app
