#pragma once

// What routing reports: subscription-trie lookup time and size, and copies routed.
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

class routing_probe {
  public:
    routing_probe(prometheus::Registry& registry, latency_histogram& lookup_latency);

    routing_probe(const routing_probe&) = delete;
    routing_probe& operator=(const routing_probe&) = delete;

    void trie_lookup(std::chrono::nanoseconds duration);  // subscriptionLookup_seconds
    void trie_nodes(std::int64_t count);                  // subscriptionTrieNodes
    void messages_routed(std::uint64_t count);            // routedMsgs_total
    void copy_forwarded();                                // forwardedMsgs_total (cluster)

  private:
    latency_histogram& lookup_latency_;
    prometheus::Gauge& trie_nodes_;
    prometheus::Counter& routed_;
    prometheus::Counter& forwarded_;
};

}  // namespace starling::metrics
