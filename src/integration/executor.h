#pragma once

// executor: runs one integration on this node. It reads the integration's topic msg.ie.<id> in
// the group ie.<id> — every node runs one per enabled integration, and the log gives the single
// partition to one of them, so an integration has one owner in the cluster and moves when its
// owner stops or dies — and hands each message to the integration's target (target.h: HTTP or
// Kafka):
//   - up to maxParallelRequestsCount attempts at once (1, the default, keeps msg.ie.<id>'s
//     order, i.e. each MQTT topic's; more trades order for throughput);
//   - a failed attempt is retried after a backoff (retryBackoffMs doubling to
//     retryBackoffMaxMs) up to maxRetries times, then the message is counted failed, logged and
//     passed;
//   - offsets are committed once every message of a polled batch is done, so a node that dies
//     mid-batch leaves it to the next owner: at least once, never silently skipped.
// The executor's own thread and its target's slowness never touch MQTT delivery: the router
// only produces to msg.ie.<id>, whatever the executor does.
//
// Lifecycle: start(), then stop() (also the destructor); stop ends a retry wait at once and an
// attempt in progress by its timeout at the latest. Concurrency: status() any thread.

#include "metrics/integration_probe.h"
#include "starling/message_log.h"

#include "integration/definition.h"
#include "integration/target.h"

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

namespace starling::integration {

// What the API shows of an integration on this node.
struct executor_status {
    bool polled = false;  // a poll has returned since start: `owner` means something
    bool owner = false;   // this node holds the integration's partition
    std::uint64_t sent = 0;
    std::uint64_t failed = 0;
    std::uint64_t retried = 0;
    std::int64_t lag = 0;
    bool failing = false;  // the last attempt failed
    std::string last_error;
    std::int64_t last_error_ms = 0;
};

class executor {
  public:
    executor(definition def, std::unique_ptr<target> to, message_log& log, std::string log_topic,
             std::string group, metrics::integration_probe::series series);
    ~executor();

    executor(const executor&) = delete;
    executor& operator=(const executor&) = delete;

    status start();
    void stop();

    const definition& def() const { return def_; }
    executor_status status_snapshot() const;

  private:
    void run(std::stop_token stop);
    // Sends the records of one polled batch; false when stopping interrupted it (nothing of
    // the batch may be committed then).
    bool deliver_batch(const std::vector<log_record>& records, std::stop_token stop);
    void note_failure(const std::string& error);
    void note_success();
    // Lag after a polled batch was handled (records empty: the poll read everything).
    void update_lag(const std::vector<log_record>& records);
    // Lag while `next_unhandled` of topic/partition is still being worked on.
    void update_lag(const std::string& topic, std::int32_t partition, std::int64_t next_unhandled);

    definition def_;
    std::unique_ptr<target> target_;
    message_log& log_;
    std::string log_topic_;
    std::string group_;
    metrics::integration_probe::series series_;
    std::unique_ptr<log_consumer> consumer_;
    std::jthread thread_;

    std::atomic<bool> owner_{false};
    std::atomic<bool> polled_{false};
    std::atomic<std::uint64_t> sent_{0};
    std::atomic<std::uint64_t> failed_{0};
    std::atomic<std::uint64_t> retried_{0};
    std::atomic<std::int64_t> lag_{0};
    std::atomic<bool> failing_{false};
    mutable std::mutex error_mutex_;
    std::string last_error_;
    std::int64_t last_error_ms_ = 0;
};

}  // namespace starling::integration
