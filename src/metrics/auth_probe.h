#pragma once

// What MQTT authentication reports (TBMQ-like names): refusals by provider and reason, how long
// a CONNECT waits for its verdict, cache hits, providers skipped by their circuit breaker.
//
// Lifecycle: owned by metrics::registry. Concurrency: any thread; one CONNECT observes a few
// counters, so prometheus-cpp's per-label-set lookup (a mutex inside Family::Add) is fine here.

#include <chrono>
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

  private:
    prometheus::Family<prometheus::Counter>& failures_;
    prometheus::Family<prometheus::Counter>& successes_;
    prometheus::Family<prometheus::Counter>& skipped_;
    prometheus::Family<prometheus::Counter>& timeouts_;
    prometheus::Counter& cache_hits_;
    prometheus::Histogram& latency_;
};

}  // namespace starling::metrics
