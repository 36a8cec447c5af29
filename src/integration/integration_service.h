#pragma once

// integration_service: the integrations of this node — their definitions (the metadata store's
// `integration` rows), the router's matcher and an executor per enabled integration.
//
// A refresh thread reads every row from the store at start, every `refresh_period`, and at
// once after this node's API changed one (refresh_now). Between reads, changes arrive as
// records: the node whose API saved or deleted an integration writes the row (or a tombstone)
// to the compacted ie.downlink.<type> topic, which every process follows (announce), so another
// node or a starling-ie applies a change within moments rather than at its next read; the
// periodic read stays the reconciliation (the store is the record: a notice that was lost is
// made good by it). For each enabled integration it makes msg.ie.<id> exist (one partition,
// seven days) before the router may match it, then updates the matcher and starts, restarts
// (changed definition) or stops executors. The executor group gives each integration one owner
// (executor.h). A store that cannot answer leaves everything as it was and is retried at the
// next period.
//
// Lifecycle: start() after the log and store are up and before the broker's router starts
// (start() returns once the first read of the store is applied to the matcher), stop() before
// the broker core is destroyed (it clears the matcher); a second stop() (the destructor's) does
// nothing. Concurrency: every public method any thread.

#include "broker/topic_follower.h"
#include "broker/topics.h"
#include "metrics/integration_probe.h"
#include "starling/message_log.h"
#include "starling/metadata_store.h"

#include "integration/definition.h"
#include "integration/executor.h"
#include "integration/matcher.h"
#include "integration/status_uplink.h"
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>

namespace starling::integration {

class integration_service {
  public:
    struct options {
        std::chrono::milliseconds refresh_period{10'000};
        // How long a deleted integration's topic outlives it. Other nodes keep routing copies to
        // it until their next refresh; deleting it under them would fail their produces (and
        // hold their routing batches), so it goes once every node has surely refreshed.
        std::chrono::milliseconds topic_delete_delay{30'000};
        std::int64_t topic_retention_ms = 7LL * 24 * 3600 * 1000;
        std::int64_t topic_retention_bytes = 1000LL * 1024 * 1024;
        // false: this process keeps the topics and the router's matcher but runs no executor
        // (integrations.executor.enabled: starling-ie processes run them).
        bool run_executors = true;
        // Who reports the status of the integrations this process owns on ie.uplink, and how
        // often (status_uplink.h).
        std::string service_id = "starling";
        std::chrono::milliseconds status_period{5'000};
    };

    // `now_ms`: wall time (ms since the epoch) for status reports.
    integration_service(metadata_store& store, message_log& log, broker::topic_names topics,
                        integration_matcher& matcher, metrics::integration_probe& probe,
                        options opts);
    ~integration_service();

    integration_service(const integration_service&) = delete;
    integration_service& operator=(const integration_service&) = delete;

    void start();
    void stop();

    // Reads the store again now (after this node saved or deleted a definition); `deleted_id`
    // names an integration whose topic this node deletes `topic_delete_delay` later (or at
    // stop(), whichever comes first).
    // `applied` runs on the refresh thread once a refresh that started after this call has
    // finished, so the API answers a save only when a publish right after it is routed.
    void refresh_now(std::optional<std::string> deleted_id = std::nullopt,
                     std::function<void()> applied = {});

    // Tells every process of the cluster about a saved row or a deleted integration at once
    // (ie.downlink.<type>); best effort: the periodic store read covers a notice that is lost.
    void announce(const integration_row& row);
    void announce_deleted(const std::string& id);

    // An integration's execution: the owning executor's status, this process's own when it
    // owns it, else the owner's latest report on ie.uplink, else this process's standby
    // executor; nullopt when nothing runs it anywhere this process knows of.
    std::optional<reported_status> status_of(const std::string& id) const;

    // Tries a TCP connection to an HTTP target's host and port within `timeout`; `done` gets an
    // empty string on success, else the reason. Runs on the service's I/O thread.
    void check_target(const definition& d, std::chrono::milliseconds timeout,
                      std::function<void(std::string)> done);

  private:
    void run(std::stop_token stop);
    // A record of ie.downlink.*, queued for the refresh thread (the downlink's thread).
    void noticed(const log_record& rec);
    void apply(const std::vector<integration_row>& rows);
    void stop_executor(const std::string& id);
    std::unique_ptr<target> make_target(const definition& d);
    // The integrations whose partition this process holds, for status_uplink.
    std::vector<std::pair<std::string, executor_status>> owned_statuses() const;
    // Deletes the topics of integrations deleted here whose delay is over (all: every one).
    void delete_topics(bool all);

    metadata_store& store_;
    message_log& log_;
    broker::topic_names topics_;
    integration_matcher& matcher_;
    metrics::integration_probe& probe_;
    options opts_;

    boost::asio::io_context io_;
    std::optional<boost::asio::executor_work_guard<boost::asio::io_context::executor_type>> work_;
    std::thread io_thread_;
    std::jthread refresh_thread_;

    std::atomic<bool> stopped_{false};
    mutable std::mutex mutex_;
    std::condition_variable_any wake_;
    bool store_read_requested_ = false;
    // Changes read from ie.downlink.*, for the refresh thread: the row, or nullopt (deleted).
    std::vector<std::pair<std::string, std::optional<integration_row>>> notices_;
    // The definitions as the refresh thread knows them (its thread only): the last store read
    // with the notices since.
    std::map<std::string, integration_row> rows_;
    std::vector<std::function<void()>> waiting_;  // refresh_now's `applied`, for the next refresh
    // Integrations deleted through this node's API → when their topic goes.
    std::map<std::string, std::chrono::steady_clock::time_point> deleted_here_;
    std::set<std::string> topics_ready_;
    std::map<std::string, std::unique_ptr<executor>> executors_;
    std::unique_ptr<status_uplink> uplink_;  // set by start(); null when it could not start
    std::unique_ptr<broker::topic_follower> downlink_;  // likewise
};

}  // namespace starling::integration
