#include "metrics/auth_probe.h"

#include <prometheus/counter.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>

#include <string>

namespace starling::metrics {

auth_probe::auth_probe(prometheus::Registry& registry)
    : failures_(prometheus::BuildCounter()
                    .Name("authFailures_total")
                    .Help("MQTT CONNECTs refused by authentication, by provider and reason")
                    .Register(registry)),
      successes_(prometheus::BuildCounter()
                     .Name("authSuccess_total")
                     .Help("MQTT CONNECTs allowed, by the provider that allowed them")
                     .Register(registry)),
      skipped_(prometheus::BuildCounter()
                   .Name("authProviderSkipped_total")
                   .Help("Provider calls skipped while the provider's circuit breaker was open")
                   .Register(registry)),
      timeouts_(prometheus::BuildCounter()
                    .Name("authProviderTimeouts_total")
                    .Help("Provider calls that did not answer within the provider timeout")
                    .Register(registry)),
      shed_(prometheus::BuildCounter()
                .Name("authProviderShed_total")
                .Help("Provider calls shed because the provider's work queue was full or too "
                      "slow (not failures)")
                .Register(registry)),
      cache_hits_(prometheus::BuildCounter()
                      .Name("authCacheHits_total")
                      .Help("CONNECTs answered from the authentication result cache")
                      .Register(registry)
                      .Add({})),
      unauthorized_dropped_(prometheus::BuildCounter()
                                .Name("unauthorizedClientsDropped_total")
                                .Help("Unauthorized-client log rows not written because their "
                                      "address or the whole log was over its write rate")
                                .Register(registry)
                                .Add({})),
      latency_(prometheus::BuildHistogram()
                   .Name("authLatency_seconds")
                   .Help("Time from CONNECT to the authentication verdict")
                   .Register(registry)
                   .Add({}, prometheus::Histogram::BucketBoundaries{0.0001, 0.0005, 0.001, 0.005,
                                                                    0.01, 0.025, 0.05, 0.1, 0.25,
                                                                    0.5, 1.0, 2.5, 5.0, 10.0})) {}

void auth_probe::auth_failed(std::string_view provider, std::string_view reason) {
    failures_.Add({{"provider", std::string(provider)}, {"reason", std::string(reason)}})
        .Increment();
}

void auth_probe::auth_succeeded(std::string_view provider) {
    successes_.Add({{"provider", std::string(provider)}}).Increment();
}

void auth_probe::auth_latency(std::chrono::nanoseconds latency) {
    latency_.Observe(std::chrono::duration<double>(latency).count());
}

void auth_probe::cache_hit() { cache_hits_.Increment(); }

void auth_probe::provider_skipped(std::string_view provider) {
    skipped_.Add({{"provider", std::string(provider)}}).Increment();
}

void auth_probe::provider_timed_out(std::string_view provider) {
    timeouts_.Add({{"provider", std::string(provider)}}).Increment();
}

void auth_probe::provider_shed(std::string_view provider) {
    shed_.Add({{"provider", std::string(provider)}}).Increment();
}

void auth_probe::unauthorized_rows_dropped(std::uint64_t total) {
    auto seen = unauthorized_dropped_seen_.load(std::memory_order_relaxed);
    while (total > seen) {
        if (unauthorized_dropped_seen_.compare_exchange_weak(seen, total,
                                                             std::memory_order_relaxed)) {
            unauthorized_dropped_.Increment(static_cast<double>(total - seen));
            return;
        }
    }
}

}  // namespace starling::metrics
