#include "integration/integration_service.h"

#include "starling/clock.h"

#include "integration/http_target_sender.h"
#include "integration/kafka_target_sender.h"
#include "integration/mqtt_target_sender.h"
#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cctype>
#include <future>
#include <tuple>

namespace starling::integration {

integration_service::integration_service(metadata_store& store, message_log& log,
                                         broker::topic_names topics, integration_matcher& matcher,
                                         metrics::integration_probe& probe, options opts)
    : store_(store),
      log_(log),
      topics_(std::move(topics)),
      matcher_(matcher),
      probe_(probe),
      opts_(opts) {}

integration_service::~integration_service() { stop(); }

void integration_service::start() {
    auto uplink = std::make_unique<status_uplink>(
        log_, topics_.ie_uplink(), topics_.group(opts_.service_id + "-ie-uplink"), opts_.service_id,
        [this] { return owned_statuses(); }, opts_.status_period,
        [] { return system_clock::instance().epoch_ms(); });
    if (uplink->start()) {
        uplink_ = std::move(uplink);
    } else {
        spdlog::warn(
            "integrations: status reports are off (see above); the API shows what this "
            "process runs");
    }
    std::vector<std::string> downlink_topics;
    for (const char* type : {"http", "mqtt", "kafka"}) {
        downlink_topics.push_back(topics_.ie_downlink(type));
    }
    auto downlink = std::make_unique<broker::topic_follower>(
        log_, "integration definitions", std::move(downlink_topics),
        topics_.group(opts_.service_id + "-ie-downlink"), opts_.topic_retention_ms,
        opts_.status_period,
        broker::topic_follower::hooks{.apply = [this](const log_record& rec) { noticed(rec); }});
    if (downlink->start()) {
        downlink_ = std::move(downlink);
    } else {
        spdlog::warn(
            "integrations: changes made on other nodes arrive with the periodic read only "
            "(every {} ms; see above)",
            opts_.refresh_period.count());
    }
    work_.emplace(io_.get_executor());
    io_thread_ = std::thread([this] { io_.run(); });
    // start() returns after the first read of the store is applied: the node starts its router
    // after this, so a message acknowledged before a crash and routed again at restart finds
    // the integrations that were there (an empty matcher would skip its copy and commit).
    std::promise<void> first_pass;
    auto applied = first_pass.get_future();
    {
        std::lock_guard lock(mutex_);
        waiting_.push_back([&first_pass] { first_pass.set_value(); });
    }
    refresh_thread_ = std::jthread([this](std::stop_token stop) { run(stop); });
    applied.wait();
}

void integration_service::noticed(const log_record& rec) {
    std::optional<integration_row> row;
    if (!rec.value.empty()) {
        row = decode_row(rec.value);
        if (!row || row->id != rec.key) {
            spdlog::warn("integrations: unreadable definition for '{}' in {} at offset {} ignored",
                         rec.key, rec.topic, rec.offset);
            return;
        }
    }
    {
        std::lock_guard lock(mutex_);
        notices_.emplace_back(rec.key, std::move(row));
    }
    wake_.notify_all();
}

void integration_service::announce(const integration_row& row) {
    std::string type = row.type;
    std::transform(type.begin(), type.end(), type.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    log_.produce(topics_.ie_downlink(type), row.id, encode_row(row), {},
                 [id = row.id](result<produce_ack> r) {
                     if (!r) {
                         spdlog::warn(
                             "integration {}: change not announced ({}); other processes apply "
                             "it at their next read of the store",
                             id, r.error().message());
                     }
                 });
}

void integration_service::announce_deleted(const std::string& id) {
    // The type is gone with the row: a tombstone on each topic (a key never written is a no-op).
    for (const char* type : {"http", "mqtt", "kafka"}) {
        log_.produce(topics_.ie_downlink(type), id, std::string(), {}, [id](result<produce_ack> r) {
            if (!r) {
                spdlog::warn("integration {}: deletion not announced ({})", id,
                             r.error().message());
            }
        });
    }
}

void integration_service::stop() {
    if (stopped_.exchange(true)) {
        return;  // the destructor after an explicit stop(): the matcher may be gone by now
    }
    if (refresh_thread_.joinable()) {
        refresh_thread_.request_stop();
        refresh_thread_.join();
    }
    if (downlink_) {
        downlink_->stop();
    }
    matcher_.replace({});
    if (uplink_) {
        uplink_->stop();
    }
    std::map<std::string, std::unique_ptr<executor>> executors;
    {
        std::lock_guard lock(mutex_);
        executors.swap(executors_);
    }
    for (auto& [id, executor] : executors) {
        executor->stop();
        probe_.remove(id);
    }
    executors.clear();
    // This node would not be here to delete them later; the matcher is empty, so nothing here
    // produces to them any more.
    delete_topics(/*all=*/true);
    if (io_thread_.joinable()) {
        work_.reset();
        io_.stop();
        io_thread_.join();
    }
    std::vector<std::function<void()>> waiting;
    {
        std::lock_guard lock(mutex_);
        waiting.swap(waiting_);
    }
    for (auto& w : waiting) {
        w();
    }
}

void integration_service::refresh_now(std::optional<std::string> deleted_id,
                                      std::function<void()> applied) {
    {
        std::lock_guard lock(mutex_);
        if (deleted_id) {
            deleted_here_.emplace(*deleted_id,
                                  std::chrono::steady_clock::now() + opts_.topic_delete_delay);
        }
        if (applied) {
            waiting_.push_back(std::move(applied));
        }
        store_read_requested_ = true;
    }
    wake_.notify_all();
}

void integration_service::run(std::stop_token stop) {
    auto next_read = std::chrono::steady_clock::now();
    while (!stop.stop_requested()) {
        std::vector<std::function<void()>> waiting;
        std::vector<std::pair<std::string, std::optional<integration_row>>> notices;
        bool read_store = false;
        {
            std::lock_guard lock(mutex_);
            waiting.swap(waiting_);
            notices.swap(notices_);
            read_store = store_read_requested_ || std::chrono::steady_clock::now() >= next_read;
            store_read_requested_ = false;
        }
        bool changed = !notices.empty();
        if (read_store) {
            next_read = std::chrono::steady_clock::now() + opts_.refresh_period;
            std::promise<result<std::vector<integration_row>>> promise;
            auto future = promise.get_future();
            store_.list_integrations([&promise](result<std::vector<integration_row>> rows) {
                promise.set_value(std::move(rows));
            });
            auto rows = future.get();
            if (rows) {
                rows_.clear();
                for (auto& row : rows.value()) {
                    auto id = row.id;
                    rows_.emplace(std::move(id), std::move(row));
                }
                changed = true;
            } else {
                spdlog::warn(
                    "integrations: the metadata store cannot list them ({}); keeping the "
                    "current ones, next try in {} ms",
                    rows.error().message(), opts_.refresh_period.count());
            }
        }
        // Notices read while the store answered come after its rows: a change announced after
        // the read is not undone by it.
        for (auto& [id, row] : notices) {
            if (row) {
                rows_.insert_or_assign(id, std::move(*row));
            } else {
                rows_.erase(id);
            }
        }
        if (changed) {
            std::vector<integration_row> all;
            all.reserve(rows_.size());
            for (const auto& [id, row] : rows_) {
                all.push_back(row);
            }
            apply(all);
        }
        for (auto& w : waiting) {
            w();
        }
        std::unique_lock lock(mutex_);
        wake_.wait_until(lock, stop, next_read,
                         [this] { return store_read_requested_ || !notices_.empty(); });
    }
}

void integration_service::apply(const std::vector<integration_row>& rows) {
    std::map<std::string, definition> wanted;
    for (const auto& row : rows) {
        auto parsed = from_row(row);
        if (auto* err = std::get_if<std::string>(&parsed)) {
            spdlog::error("integration {} ('{}') cannot run: {}", row.id, row.name, *err);
            continue;
        }
        auto d = std::get<definition>(std::move(parsed));
        if (!d.enabled) {
            continue;
        }
        const std::string topic = topics_.msg_ie(d.id);
        if (!topics_ready_.contains(topic)) {
            topic_spec spec{.name = topic,
                            .partitions = 1,
                            .retention_ms = opts_.topic_retention_ms,
                            .retention_bytes = opts_.topic_retention_bytes};
            if (auto st = log_.create_topic(spec); !st) {
                // Not matched until its topic exists: the router would fail every batch.
                spdlog::warn("integration {}: cannot create {} ({}); retried next refresh", d.id,
                             topic, st.error().message());
                continue;
            }
            topics_ready_.insert(topic);
        }
        wanted.emplace(d.id, std::move(d));
    }

    // Executors to stop: gone, disabled or changed.
    std::vector<std::string> to_stop;
    {
        std::lock_guard lock(mutex_);
        for (const auto& [id, executor] : executors_) {
            auto it = wanted.find(id);
            if (it == wanted.end() || it->second.configuration != executor->def().configuration) {
                to_stop.push_back(id);
            }
        }
    }
    // The matcher first, so no new copies are routed to an integration being stopped.
    std::vector<integration_matcher::entry> entries;
    for (const auto& [id, d] : wanted) {
        entries.push_back({id, topics_.msg_ie(id), d.topic_filters, d.events});
    }
    matcher_.replace(std::move(entries));
    for (const auto& id : to_stop) {
        stop_executor(id);
    }
    delete_topics(/*all=*/false);
    if (!opts_.run_executors) {
        return;
    }
    for (auto& [id, d] : wanted) {
        {
            std::lock_guard lock(mutex_);
            if (executors_.contains(id)) {
                continue;
            }
        }
        auto executor = std::make_unique<integration::executor>(
            d, make_target(d), log_, topics_.msg_ie(id), topics_.ie_group(id), probe_.add(id));
        if (auto st = executor->start(); !st) {
            spdlog::warn("integration {}: executor not started ({}); retried next refresh", id,
                         st.error().message());
            probe_.remove(id);
            continue;
        }
        std::lock_guard lock(mutex_);
        executors_.emplace(id, std::move(executor));
    }
}

std::unique_ptr<target> integration_service::make_target(const definition& d) {
    if (d.type == "KAFKA") {
        return std::make_unique<kafka_target_sender>(d);
    }
    if (d.type == "MQTT") {
        return std::make_unique<mqtt_target_sender>(d);
    }
    return std::make_unique<http_target_sender>(d, io_.get_executor());
}

void integration_service::delete_topics(bool all) {
    std::vector<std::string> due;
    {
        std::lock_guard lock(mutex_);
        const auto now = std::chrono::steady_clock::now();
        for (auto it = deleted_here_.begin(); it != deleted_here_.end();) {
            if (all || it->second <= now) {
                due.push_back(it->first);
                it = deleted_here_.erase(it);
            } else {
                ++it;
            }
        }
    }
    for (const auto& id : due) {
        const std::string topic = topics_.msg_ie(id);
        topics_ready_.erase(topic);
        if (auto st = log_.delete_topic(topic); !st) {
            spdlog::warn("integration {}: deleting {} failed: {}", id, topic, st.error().message());
        } else {
            spdlog::info("integration {}: {} deleted", id, topic);
        }
    }
}

void integration_service::stop_executor(const std::string& id) {
    std::unique_ptr<executor> executor;
    {
        std::lock_guard lock(mutex_);
        auto it = executors_.find(id);
        if (it == executors_.end()) {
            return;
        }
        executor = std::move(it->second);
        executors_.erase(it);
    }
    executor->stop();
    probe_.remove(id);
}

std::vector<std::pair<std::string, executor_status>> integration_service::owned_statuses() const {
    std::vector<std::pair<std::string, executor_status>> out;
    std::lock_guard lock(mutex_);
    for (const auto& [id, executor] : executors_) {
        auto st = executor->status_snapshot();
        if (st.polled && st.owner) {
            out.emplace_back(id, std::move(st));
        }
    }
    return out;
}

std::optional<reported_status> integration_service::status_of(const std::string& id) const {
    std::optional<executor_status> local;
    {
        std::lock_guard lock(mutex_);
        if (auto it = executors_.find(id); it != executors_.end()) {
            local = it->second->status_snapshot();
        }
    }
    if (local && local->polled && local->owner) {
        return reported_status{.status = std::move(*local),
                               .reporter = opts_.service_id,
                               .reported_at_ms = system_clock::instance().epoch_ms(),
                               .period_ms = opts_.status_period.count()};
    }
    if (uplink_) {
        if (auto reported = uplink_->latest(id)) {
            return reported;
        }
    }
    if (local) {
        return reported_status{.status = std::move(*local), .reporter = opts_.service_id};
    }
    return std::nullopt;
}

void integration_service::check_target(const definition& d, std::chrono::milliseconds timeout,
                                       std::function<void(std::string)> done) {
    namespace asio = boost::asio;
    using tcp = asio::ip::tcp;
    struct attempt {
        explicit attempt(asio::io_context& io) : resolver(io), socket(io), timer(io) {}
        tcp::resolver resolver;
        tcp::socket socket;
        asio::steady_timer timer;
        std::function<void(std::string)> done;
        bool finished = false;
        void finish(std::string error) {
            if (finished) {
                return;
            }
            finished = true;
            timer.cancel();
            resolver.cancel();
            boost::system::error_code ignored;
            socket.close(ignored);
            done(std::move(error));
        }
    };
    auto a = std::make_shared<attempt>(io_);
    a->done = std::move(done);
    // The target's first address: the URL's host, the MQTT broker, or the first bootstrap
    // server (a Kafka cluster answers its metadata from any of them).
    std::string host = d.http.url.host;
    std::string port = std::to_string(d.http.url.port);
    if (d.type == "MQTT") {
        host = d.mqtt.host;
        port = std::to_string(d.mqtt.port);
    } else if (d.type == "KAFKA") {
        auto first = kafka_bootstrap_host_port(d.kafka.bootstrap_servers);
        if (!first) {
            a->done("bootstrapServers: host:port is required");
            return;
        }
        std::tie(host, port) = *first;
    }
    asio::post(io_, [a, host, port, timeout] {
        a->timer.expires_after(timeout);
        a->timer.async_wait([a, host, port](boost::system::error_code ec) {
            if (!ec) {
                a->finish("no connection to " + host + ":" + port + " within the timeout");
            }
        });
        a->resolver.async_resolve(
            host, port,
            [a, host, port](boost::system::error_code ec, tcp::resolver::results_type r) {
                if (ec) {
                    a->finish("cannot resolve " + host + ": " + ec.message());
                    return;
                }
                asio::async_connect(
                    a->socket, r,
                    [a, host, port](boost::system::error_code cec, const tcp::endpoint&) {
                        a->finish(cec ? "cannot connect to " + host + ":" + port + ": " +
                                            cec.message()
                                      : std::string());
                    });
            });
    });
}

}  // namespace starling::integration
