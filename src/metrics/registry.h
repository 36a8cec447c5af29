#pragma once

// The node's metrics: one object that owns the Prometheus registry, every probe and the
// lock-free latency histograms, and renders them all in the Prometheus text format for
// GET /actuator/prometheus.
//
// Lifecycle: the composition root creates one registry before any component and destroys it
// after all of them; components receive their probe by reference. Not copyable or movable
// (probes hand out references into it).
//
// Concurrency: probe methods run on any thread without locks. serialize() and refresher
// registration may also run on any thread; they serialize among themselves on one mutex.

#include "metrics/actor_probe.h"
#include "metrics/auth_probe.h"
#include "metrics/broker_probe.h"
#include "metrics/health_probe.h"
#include "metrics/integration_probe.h"
#include "metrics/latency_histogram.h"
#include "metrics/listener_probe.h"
#include "metrics/log_probe.h"
#include "metrics/process_probe.h"
#include "metrics/routing_probe.h"

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace prometheus {
class Counter;
class Registry;
}  // namespace prometheus

namespace starling::metrics {

class registry;

// Keeps one refresher registered; destroying (or reset()) removes it, and waits for a scrape
// that is running it to finish, so the refresher's captures may die right after. Must not be
// destroyed from inside a refresher (it would wait for itself).
class refresher_handle {
  public:
    refresher_handle() = default;
    refresher_handle(refresher_handle&& other) noexcept;
    refresher_handle& operator=(refresher_handle&& other) noexcept;
    refresher_handle(const refresher_handle&) = delete;
    refresher_handle& operator=(const refresher_handle&) = delete;
    ~refresher_handle();

    void reset();
    bool active() const noexcept { return owner_ != nullptr; }

  private:
    friend class registry;
    refresher_handle(registry* owner, std::uint64_t id) : owner_(owner), id_(id) {}

    registry* owner_ = nullptr;
    std::uint64_t id_ = 0;
};

class registry {
  public:
    registry();
    ~registry();

    registry(const registry&) = delete;
    registry& operator=(const registry&) = delete;

    broker_probe& broker() noexcept { return broker_; }
    log_probe& log() noexcept { return log_; }
    routing_probe& routing() noexcept { return routing_; }
    actor_probe& actor() noexcept { return actor_; }
    auth_probe& auth() noexcept { return auth_; }
    listener_probe& listener() noexcept { return listener_; }
    health_probe& health() noexcept { return health_; }
    process_probe& process() noexcept { return process_; }
    integration_probe& integration() noexcept { return integration_; }

    // Registers a function that sets gauges from live state; every serialize() runs all of
    // them first (prometheus-cpp has no callback gauges). A refresher runs under the
    // registry's scrape lock: it must be quick, must not block, and must not call back into
    // add_refresher(), serialize() or a handle's reset().
    [[nodiscard]] refresher_handle add_refresher(std::function<void()> refresh);

    // Runs the refreshers, then renders every metric in the Prometheus text format 0.0.4.
    std::string serialize();

  private:
    friend class refresher_handle;
    void remove_refresher(std::uint64_t id);

    std::unique_ptr<prometheus::Registry> prometheus_;
    latency_histogram produce_ack_latency_;
    latency_histogram subscription_lookup_;
    broker_probe broker_;
    log_probe log_;
    routing_probe routing_;
    actor_probe actor_;
    auth_probe auth_;
    listener_probe listener_;
    health_probe health_;
    process_probe process_;  // refreshed by serialize() itself
    integration_probe integration_;

    std::mutex scrape_mutex_;  // guards everything below and serializes scrapes
    std::map<std::uint64_t, std::function<void()>> refreshers_;
    std::uint64_t next_refresher_id_ = 1;
    prometheus::Counter* bugs_ = nullptr;  // base::bugs_reported(), exported at each scrape
    std::uint64_t bugs_exported_ = 0;
};

}  // namespace starling::metrics
