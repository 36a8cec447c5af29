#pragma once

// What the integration executors report, per integration (label `integration` = its id):
//   integrationMsgs_total{result="sent"|"failed"|"retried"}  messages the target accepted, gave
//       up on after the last retry, and attempts repeated;
//   integrationLag  records of msg.ie.<id> not yet handled by this node's executor (0 on nodes
//       that do not own the integration);
//   integrationUp   1 while the last attempt succeeded (or none failed yet), 0 while failing.
//
// Lifecycle: owned by metrics::registry; series are added when a node starts executing an
// integration and removed when it stops. Concurrency: any thread.

#include <mutex>
#include <string>

namespace prometheus {
class Counter;
class Gauge;
class Registry;
template <typename T>
class Family;
}  // namespace prometheus

namespace starling::metrics {

class integration_probe {
  public:
    explicit integration_probe(prometheus::Registry& registry);

    integration_probe(const integration_probe&) = delete;
    integration_probe& operator=(const integration_probe&) = delete;

    // One integration's series; valid until remove(id).
    struct series {
        prometheus::Counter& sent;
        prometheus::Counter& failed;
        prometheus::Counter& retried;
        prometheus::Gauge& lag;
        prometheus::Gauge& up;
    };
    series add(const std::string& integration_id);
    void remove(const std::string& integration_id);

  private:
    std::mutex mutex_;
    prometheus::Family<prometheus::Counter>& messages_;
    prometheus::Family<prometheus::Gauge>& lag_;
    prometheus::Family<prometheus::Gauge>& up_;
};

}  // namespace starling::metrics
