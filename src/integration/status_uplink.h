#pragma once

// status_uplink: each integration's execution status, shared through the compacted
// <prefix>.ie.uplink topic, so the management API of any broker node reports what the owning
// executor sees — whether that executor runs in a broker node or in a starling-ie process.
//
// The process that owns an integration's partition writes its executor_status (JSON, keyed by
// the integration id) every `period`; every process follows the topic from its start and keeps
// the latest record per integration. A record older than three periods is stale (its writer
// stopped or lost the partition): latest() leaves it out, and the API falls back to what this
// node knows. Nothing here is needed for delivery; a log that refuses a write costs one status
// report, logged once per failure streak.
//
// Lifecycle: start() after the log is up (creates the topic, starts the thread); stop() before
// the log closes. Concurrency: latest() from any thread; `owned` runs on the uplink's thread.

#include "base/result.h"
#include "broker/topic_follower.h"
#include "starling/message_log.h"

#include "integration/executor.h"

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace starling::integration {

struct reported_status {
    executor_status status;  // polled and owner are true: only owners report
    std::string reporter;    // the service id of the process that runs the executor
    std::int64_t reported_at_ms = 0;
    std::int64_t period_ms = 0;  // the reporter's period: staleness is judged by it
};

// The record's value; decode_status gives nullopt for anything it cannot read.
std::string encode_status(const reported_status& s);
std::optional<reported_status> decode_status(const std::string& value);

class status_uplink {
  public:
    // The integrations this process owns now and their status.
    using owned_fn = std::function<std::vector<std::pair<std::string, executor_status>>()>;

    status_uplink(message_log& log, std::string topic, std::string group, std::string reporter,
                  owned_fn owned, std::chrono::milliseconds period,
                  std::function<std::int64_t()> now_ms);
    ~status_uplink();
    status_uplink(const status_uplink&) = delete;
    status_uplink& operator=(const status_uplink&) = delete;

    status start();
    void stop();

    // The integration's latest report, unless it is stale.
    std::optional<reported_status> latest(const std::string& id) const;

  private:
    void report();
    void apply(const log_record& rec);

    message_log& log_;
    const std::string topic_;
    const std::string reporter_;
    const owned_fn owned_;
    const std::chrono::milliseconds period_;
    const std::function<std::int64_t()> now_ms_;

    // Whether the last report failed (one log line per failure streak); shared with the
    // produce callbacks, which may outlive this uplink.
    std::shared_ptr<std::atomic<bool>> write_failing_ = std::make_shared<std::atomic<bool>>(false);
    mutable std::mutex mutex_;
    std::map<std::string, reported_status> latest_;  // by integration id; guarded by mutex_

    broker::topic_follower follower_;  // last: its thread calls report() and apply()
};

}  // namespace starling::integration
