#pragma once

// topic_follower: a thread that follows single-partition compacted topics from their start —
// every record, in order per topic, to `apply` — and calls `tick` (if set) every `period`, where
// its owner writes its own records. The shape of the cluster's small shared boards: the node
// list (sys.nodes, node_directory.h), the integrations' status (ie.uplink,
// integration/status_uplink.h) and their definitions (ie.downlink.*,
// integration/integration_service.h).
//
// A poll that fails is retried with backoff (base::retry_pacer), so a log outage delays the
// board, never ends it. Lifecycle: start() after the log is up (creates the topic, starts the
// thread); stop() before the log closes, idempotent. `apply` and `tick` run on the follower's
// thread only.

#include "base/result.h"
#include "starling/message_log.h"

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <stop_token>
#include <string>
#include <thread>
#include <vector>

namespace starling::broker {

class topic_follower {
  public:
    struct hooks {
        std::function<void()> tick;
        std::function<void(const log_record&)> apply;
    };

    // `what` names the board in log lines ("node directory"). Each topic is created with one
    // partition, compacted, and `retention_ms` (-1: forever).
    topic_follower(message_log& log, std::string what, std::vector<std::string> topics,
                   std::string group, std::int64_t retention_ms, std::chrono::milliseconds period,
                   hooks h);
    ~topic_follower();
    topic_follower(const topic_follower&) = delete;
    topic_follower& operator=(const topic_follower&) = delete;

    status start();
    void stop();

  private:
    void run();

    message_log& log_;
    const std::string what_;
    const std::vector<std::string> topics_;
    const std::string group_;
    const std::int64_t retention_ms_;
    const std::chrono::milliseconds period_;
    const hooks hooks_;

    std::unique_ptr<log_consumer> consumer_;
    std::thread thread_;
    std::atomic<bool> running_{false};
    std::stop_source stop_;
};

}  // namespace starling::broker
