#pragma once

// What the message-log producer reports: how long a produce takes to be acknowledged, and
// how many fail. Both adapters (embedded, Kafka) report through it.
//
// Lifecycle: owned by metrics::registry. Concurrency: any thread, lock-free.

#include <chrono>

namespace prometheus {
class Counter;
class Registry;
}  // namespace prometheus

namespace starling::metrics {

class latency_histogram;

class log_probe {
  public:
    log_probe(prometheus::Registry& registry, latency_histogram& ack_latency);

    log_probe(const log_probe&) = delete;
    log_probe& operator=(const log_probe&) = delete;

    // From produce() to its acknowledgement.
    void produce_acked(std::chrono::nanoseconds latency);  // messageLog_produceAckLatency_seconds
    void produce_failed();                                 // messageLog_produceFailed_total

  private:
    latency_histogram& ack_latency_;
    prometheus::Counter& failed_;
};

}  // namespace starling::metrics
