#pragma once

// broker::node: one Starling node's broker — the shared core, the client dispatcher, timers,
// the msg.all router and the msg.persisted consumers — assembled over the ports it is given.
// The composition root (src/app) chooses the adapters (embedded or cluster) and the listeners.
//
// Start-up order: create topics → load state snapshots (retained, sessions, subscriptions) →
// restore offline persistent sessions → (cluster mode: state follower, downlink consumers,
// session coordination) → start router and consumers. In cluster mode only the sessions
// client.session places on this node are restored; the others are mirrored.
// Only then may listeners open. Shutdown: stop accepting (listeners, outside) → tell every actor to
// shut down (v5 clients get DISCONNECT 0x8B) → flush the log → stop consumers, timers and the
// dispatcher.

#include "actor/dispatcher.h"
#include "actor/timer_service.h"
#include "base/result.h"
#include "broker/app_removed_consumer.h"
#include "broker/broker_core.h"
#include "broker/downlink_consumer.h"
#include "broker/persisted_consumer.h"
#include "broker/publish_router.h"
#include "broker/session_coordinator.h"
#include "broker/settings.h"
#include "broker/state_follower.h"
#include "metrics/registry.h"

#include <chrono>
#include <memory>
#include <utility>
#include <vector>

namespace starling::broker {

class node {
  public:
    // `admission`: authentication, blocked clients, shared counters and the quota, built by the
    // composition root before the node; the default turns them off (broker_core.h).
    node(settings cfg, message_log& log, device_inbox& inbox, metadata_store& metadata,
         metrics::registry& metrics, std::size_t dispatcher_threads,
         const starling::clock& clock = system_clock::instance(),
         admission_services admission = {});
    ~node();

    // Throws std::runtime_error when the state cannot be loaded (start-up only).
    void start();
    // Graceful stop within `timeout`; returns once every actor finished or the time is up.
    void stop(std::chrono::milliseconds timeout);

    broker_core& core() { return *core_; }
    const app_removed_consumer& app_removed_for_test() const { return *app_removed_; }

    // Cluster mode: client.blocked records read by the state follower go to `blocked` from now
    // on (the records read before are applied at once). No-op in embedded mode. Any thread.
    void follow_blocked(blocked_clients_log* blocked);

    // Work the node's consumers finished since it started: msg.all records routed, copies the
    // router wrote to msg.persisted, and msg.persisted records stored. Tests wait for
    // routed == published and stored == produced before checking what clients got.
    struct pipeline_counts {
        std::uint64_t msg_all_handled = 0;
        std::uint64_t persisted_produced = 0;
        std::uint64_t persisted_handled = 0;
    };
    pipeline_counts pipeline_for_test() const;

    // Cluster mode only (null otherwise); for tests and metrics.
    const state_follower* follower() const { return core_->follower(); }
    const downlink_consumer* downlink() const { return downlink_.get(); }

  private:
    status create_topics();
    status load_state(std::vector<std::pair<topic_partition, std::int64_t>>& follow_from);

    metrics::registry& metrics_;
    actor::dispatcher dispatcher_;
    actor::timer_service timers_;
    std::unique_ptr<broker_core> core_;
    std::unique_ptr<publish_router> router_;
    std::unique_ptr<persisted_consumer> persisted_;
    std::unique_ptr<app_removed_consumer> app_removed_;
    // Cluster mode only (the state follower and the session coordinator are the core's).
    std::unique_ptr<downlink_consumer> downlink_;
    std::unique_ptr<persisted_consumer> downlink_persisted_;
    metrics::refresher_handle gauges_;
    bool started_ = false;
};

}  // namespace starling::broker
