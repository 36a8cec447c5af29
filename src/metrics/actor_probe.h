#pragma once

// What the actor runtime reports: how many actors run, how deep their mailboxes are in all,
// and how many messages full mailboxes turned away.
//
// The two gauges are meant to be *set from live state* by a refresher the actor system
// registers with metrics::registry::add_refresher(), which runs just before each scrape:
// a gauge derived that way cannot drift the way an increment/decrement pair can (TBMQ #318).
//
// Lifecycle: owned by metrics::registry. Concurrency: any thread, lock-free.

#include <cstdint>

namespace prometheus {
class Counter;
class Gauge;
class Registry;
}  // namespace prometheus

namespace starling::metrics {

class actor_probe {
  public:
    explicit actor_probe(prometheus::Registry& registry);

    actor_probe(const actor_probe&) = delete;
    actor_probe& operator=(const actor_probe&) = delete;

    void set_mailbox_depth(std::int64_t messages);   // actorMailboxDepth
    void set_running_actors(std::int64_t actors);    // runningActors
    void mailbox_rejected(std::uint64_t count = 1);  // actorMailboxRejected_total

  private:
    prometheus::Gauge& mailbox_depth_;
    prometheus::Gauge& running_actors_;
    prometheus::Counter& rejected_;
};

}  // namespace starling::metrics
