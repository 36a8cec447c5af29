#pragma once

// What the message-log producer reports: how long a produce takes to be acknowledged, and
// how many fail. Both adapters (embedded, Kafka) report through it. The embedded log's own
// state (free-space watermarks, write errors, quarantined segments) is copied in by a refresher
// of the composition root (embedded_status()).
//
// Lifecycle: owned by metrics::registry. Concurrency: any thread, lock-free.

#include <chrono>
#include <cstdint>

namespace prometheus {
class Counter;
class Gauge;
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

    // The embedded log's state. `disk_state`: 0 ok, 1 slowed, 2 refusing
    // (messageLog_diskState); free bytes of its file system (messageLog_diskFreeBytes); the
    // totals since start of produces refused for low disk (messageLog_diskRefusals_total),
    // failed writes and fdatasyncs (messageLog_writeErrors_total) and corrupt closed segments
    // quarantined at start (messageLog_quarantinedSegments_total). Totals only grow: a smaller
    // value than last time is ignored. Call from one thread at a time (a refresher).
    struct embedded_state {
        int disk_state = 0;
        std::uint64_t free_bytes = 0;
        std::uint64_t disk_refusals = 0;
        std::uint64_t write_errors = 0;
        std::uint64_t quarantined_segments = 0;
    };
    void embedded_status(const embedded_state& state);

  private:
    latency_histogram& ack_latency_;
    prometheus::Counter& failed_;
    prometheus::Gauge& disk_state_;
    prometheus::Gauge& disk_free_;
    prometheus::Counter& disk_refusals_;
    prometheus::Counter& write_errors_;
    prometheus::Counter& quarantined_;
    embedded_state last_;  // totals already exported
};

}  // namespace starling::metrics
