#pragma once

// Health reporting for GET /actuator/health, shaped like Spring Boot's so TBMQ's probes and
// dashboards keep working:
//   {"status":"UP","components":{"messageLog":{"status":"UP","details":{...}}, ...}}
//
// Components (message log, device inbox, metadata store...) register a check function. The
// overall status is the worst of the components, and OUT_OF_SERVICE at least while the node
// is starting or stopping, so a load balancer or Kubernetes readiness probe takes it out of
// rotation then.

#include <nlohmann/json.hpp>

#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace starling::http {

// In ascending severity: the overall status is the highest of its components' (Spring's
// order, with DEGRADED between UP and OUT_OF_SERVICE).
enum class health_status : std::uint8_t { up, degraded, out_of_service, down };

// "UP", "DEGRADED", "OUT_OF_SERVICE", "DOWN".
std::string_view to_string(health_status status);

// UP and DEGRADED still serve traffic: 200. The others: 503.
bool is_serving(health_status status);

struct component_health {
    health_status status = health_status::up;
    nlohmann::json details = nlohmann::json::object();  // omitted from the output when empty
};

// Spring Boot's diskSpace indicator, fed by a storage component that guards its file system
// with free-space watermarks (the embedded message log): DOWN while it refuses writes, DEGRADED
// while it slows them, UP otherwise. Details: path, total, free, threshold (Spring's keys),
// slowThreshold and, when not UP, reason.
struct disk_space_reading {
    std::string path;
    std::uint64_t total_bytes = 0;
    std::uint64_t free_bytes = 0;
    std::uint64_t threshold_bytes = 0;       // below: writes refused; 0 = no threshold
    std::uint64_t slow_threshold_bytes = 0;  // below: writes slowed; 0 = no threshold
    bool refusing = false;                   // the component's own verdict (it read the space)
    bool slowed = false;
};
component_health disk_space_health(const disk_space_reading& reading);

// Where the node is in its life; anything but running reports at least OUT_OF_SERVICE.
// draining: POST /api/app/drain took the node out of service (readiness DOWN, liveness UP).
enum class lifecycle : std::uint8_t { starting, running, draining, stopping };

struct health_report {
    health_status status = health_status::up;
    nlohmann::json body;
    // Each component's status, in name order (also in body; here for the healthStatus metric).
    std::vector<std::pair<std::string, health_status>> components;
};

// The set of registered checks.
//
// Lifecycle: created by the composition root before the components that register with it,
// destroyed after the HTTP server. Concurrency: every method is thread-safe. evaluate() runs
// the checks on the calling thread (an HTTP I/O thread) outside the registry's lock, so a
// check must be quick and must not block: report state the component already holds.
class health_registry {
  public:
    using check = std::function<component_health()>;

    // Returns false (and changes nothing) when the name is already registered.
    bool add(std::string name, check fn);
    bool remove(std::string_view name);

    void set_lifecycle(lifecycle state);  // starts as lifecycle::starting
    lifecycle current_lifecycle() const;

    // Runs every check. A check that throws reports DOWN with the exception's message.
    health_report evaluate() const;

    // Liveness (GET /actuator/health/liveness): whether the process itself works — its event
    // loops answer — whatever the state of the stores it talks to, so a store outage never
    // gets a node restarted. Its own checks; neither the lifecycle nor the readiness checks
    // above count. UP, or DOWN when a liveness check is DOWN.
    bool add_liveness(std::string name, check fn);
    health_report evaluate_liveness() const;

  private:
    mutable std::mutex mutex_;
    std::map<std::string, check, std::less<>> checks_;
    std::map<std::string, check, std::less<>> liveness_checks_;
    lifecycle lifecycle_ = lifecycle::starting;
};

}  // namespace starling::http
