#pragma once

// What MQTT authentication reports (TBMQ-like names): refusals by provider and reason, how long
// a CONNECT waits for its verdict, cache hits, providers skipped by their circuit breaker,
// load shed by providers, and unauthorized-client log rows dropped by its rate limits.
//
// Lifecycle: owned by metrics::registry. Concurrency: any thread; one CONNECT observes a few
// counters, so prometheus-cpp's per-label-set lookup (a mutex inside Family::Add) is fine here.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <string_view>

namespace prometheus {
class Histogram;
class Registry;
template <typename T>
class Family;
class Counter;
}  // namespace prometheus

namespace starling::metrics {

class auth_probe {
  public:
    explicit auth_probe(prometheus::Registry& registry);

    auth_probe(const auth_probe&) = delete;
    auth_probe& operator=(const auth_probe&) = delete;

    // authFailures_total{provider, reason}; provider "none" when no provider answered.
    void auth_failed(std::string_view provider, std::string_view reason);
    // authSuccess_total{provider}
    void auth_succeeded(std::string_view provider);
    // authLatency_seconds: CONNECT handed to the authenticator → verdict.
    void auth_latency(std::chrono::nanoseconds latency);
    // authCacheHits_total
    void cache_hit();
    // authProviderSkipped_total{provider}: calls skipped while its circuit breaker is open.
    void provider_skipped(std::string_view provider);
    // authProviderTimeouts_total{provider}
    void provider_timed_out(std::string_view provider);
    // authProviderShed_total{provider}: requests a provider shed (its work queue was full or
    // too slow); not failures, never counted by the circuit breaker.
    void provider_shed(std::string_view provider);
    // unauthorizedClientsDropped_total: unauthorized-client log rows not written because their
    // address (or the whole log) was over its write rate. `total` is the metadata store's own
    // running count; the counter advances by the difference since the last call (a refresher
    // calls this before each scrape).
    void unauthorized_rows_dropped(std::uint64_t total);

  private:
    prometheus::Family<prometheus::Counter>& failures_;
    prometheus::Family<prometheus::Counter>& successes_;
    prometheus::Family<prometheus::Counter>& skipped_;
    prometheus::Family<prometheus::Counter>& timeouts_;
    prometheus::Family<prometheus::Counter>& shed_;
    prometheus::Counter& cache_hits_;
    prometheus::Counter& unauthorized_dropped_;
    std::atomic<std::uint64_t> unauthorized_dropped_seen_{0};
    prometheus::Histogram& latency_;
};

}  // namespace starling::metrics
