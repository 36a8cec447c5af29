#pragma once

// node_directory: which nodes the cluster has, for /api/app/cluster-info, with no node ever
// calling another. Each node writes a heartbeat (proto node_info: version, start time,
// connected clients, health) to the compacted sys.nodes topic every
// service.heartbeat-interval and follows the topic, so every node knows every other node's
// latest heartbeat. A node that stops cleanly replaces its heartbeat with a tombstone (it leaves
// the list); one that crashed stays, reported unreachable once its heartbeat is older than three
// intervals, until it comes back or an operator deletes its key.
//
// Embedded mode needs none of this: nodes() without start() is this node alone.
//
// Lifecycle: start() after the log is up (creates the topic, starts the thread); stop() before
// the log closes (writes the tombstone, bounded wait). Concurrency: nodes() from any thread;
// `self` is called from the directory's thread and from nodes()' caller, so it must be
// thread-safe and quick.

#include "base/result.h"
#include "broker/topic_follower.h"
#include "starling/message_log.h"

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace starling::broker {

struct node_status {
    std::string node_id;
    std::string version;
    std::int64_t started_at_ms = 0;
    std::int64_t heartbeat_at_ms = 0;  // this node: now
    std::int64_t connected_sessions = 0;
    std::string health;  // UP, DEGRADED, OUT_OF_SERVICE, DOWN
    std::chrono::milliseconds heartbeat_interval{0};
    bool self = false;
    bool reachable = true;  // false: no heartbeat for three intervals
};

class node_directory {
  public:
    using status_fn = std::function<node_status()>;

    // `self` reports this node now (node_id, version, started_at_ms, connected_sessions,
    // health; the rest is filled in here).
    node_directory(message_log& log, std::string topic, std::string group, status_fn self,
                   std::chrono::milliseconds interval, std::function<std::int64_t()> now_ms);
    ~node_directory();
    node_directory(const node_directory&) = delete;
    node_directory& operator=(const node_directory&) = delete;

    status start();
    void stop();

    // Every known node, this one first, then by node id.
    std::vector<node_status> nodes() const;

  private:
    void beat();
    void apply(const log_record& rec);

    message_log& log_;
    const std::string topic_;
    const status_fn self_;
    const std::chrono::milliseconds interval_;
    const std::function<std::int64_t()> now_ms_;

    mutable std::mutex mutex_;
    std::map<std::string, node_status> others_;  // by node id; guarded by mutex_

    topic_follower follower_;  // last: its thread calls beat() and apply(), which use the above
    std::atomic<bool> started_{false};
};

}  // namespace starling::broker
