#pragma once

// loop_watch: whether the node's event loops still run, for GET /actuator/health/liveness.
//
// Every `period` the timer thread stamps its own beat and tells a small mailbox on the client
// dispatcher, whose handler stamps the dispatcher's beat. A loop whose beat is older than
// `stall_after` is stuck (a deadlock, a handler that never returns): liveness turns DOWN and
// the orchestrator restarts the process. Busy is not stuck: a saturated dispatcher still runs
// the beat within one pass of its run queue, far below `stall_after`. (The HTTP I/O thread
// needs no beat: it is the one answering the probe.)
//
// Nothing here reads a store, so an outage of Kafka, Redis or PostgreSQL never makes a node
// look dead (they are readiness's business).
//
// Lifecycle: start() after the timer service and the dispatcher started; stop() before they
// stop (a stop() is final, and the destructor's own call then touches nothing); destroyed
// without stop(), it cancels its timer, so the timer service must still exist. Concurrency:
// check() is thread-safe; start()/stop() from the owning thread.

#include "actor/dispatcher.h"
#include "actor/mailbox.h"
#include "actor/timer_service.h"
#include "starling/clock.h"

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace starling::broker {

class loop_watch {
  public:
    struct loop_state {
        std::string name;  // "timers", "clientDispatcher"
        std::chrono::milliseconds since_beat{};
        bool stalled = false;
    };

    loop_watch(actor::timer_service& timers, actor::dispatcher& dispatcher, const clock& clk,
               std::chrono::milliseconds period = std::chrono::seconds(1),
               std::chrono::milliseconds stall_after = std::chrono::seconds(30));
    ~loop_watch();

    loop_watch(const loop_watch&) = delete;
    loop_watch& operator=(const loop_watch&) = delete;

    void start();
    void stop();

    // Each loop's state now. Before start() every beat counts from construction.
    std::vector<loop_state> check() const;

  private:
    struct beat {};

    void schedule_locked();
    void on_timer();

    actor::timer_service& timers_;
    const clock& clock_;
    const std::chrono::milliseconds period_;
    const std::chrono::milliseconds stall_after_;
    std::shared_ptr<actor::mailbox<beat>> mailbox_;
    std::atomic<std::int64_t> timer_beat_ns_;       // steady clock, since its epoch
    std::atomic<std::int64_t> dispatcher_beat_ns_;  // likewise
    std::mutex mutex_;
    bool stopped_ = false;        // guarded by mutex_
    actor::timer_handle next_{};  // guarded by mutex_
};

}  // namespace starling::broker
