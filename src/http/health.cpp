#include "http/health.h"

#include <algorithm>
#include <exception>
#include <utility>
#include <vector>

namespace starling::http {

std::string_view to_string(health_status status) {
    switch (status) {
        case health_status::up:
            return "UP";
        case health_status::degraded:
            return "DEGRADED";
        case health_status::out_of_service:
            return "OUT_OF_SERVICE";
        case health_status::down:
            return "DOWN";
    }
    return "DOWN";
}

bool is_serving(health_status status) {
    return status == health_status::up || status == health_status::degraded;
}

component_health disk_space_health(const disk_space_reading& reading) {
    component_health health;
    health.details = {{"path", reading.path},
                      {"total", reading.total_bytes},
                      {"free", reading.free_bytes},
                      {"threshold", reading.threshold_bytes},
                      {"slowThreshold", reading.slow_threshold_bytes}};
    if (reading.refusing) {
        health.status = health_status::down;
        health.details["reason"] =
            "free space below the threshold: publishes are refused until space returns";
    } else if (reading.slowed) {
        health.status = health_status::degraded;
        health.details["reason"] = "free space below the slow threshold: writes are slowed";
    }
    return health;
}

bool health_registry::add(std::string name, check fn) {
    std::lock_guard lock(mutex_);
    return checks_.emplace(std::move(name), std::move(fn)).second;
}

bool health_registry::remove(std::string_view name) {
    std::lock_guard lock(mutex_);
    const auto it = checks_.find(name);
    if (it == checks_.end()) {
        return false;
    }
    checks_.erase(it);
    return true;
}

void health_registry::set_lifecycle(lifecycle state) {
    std::lock_guard lock(mutex_);
    lifecycle_ = state;
}

lifecycle health_registry::current_lifecycle() const {
    std::lock_guard lock(mutex_);
    return lifecycle_;
}

namespace {

// Runs `checks` into a report whose status starts at `initial` and is the worst of them all.
health_report run_checks(const std::vector<std::pair<std::string, health_registry::check>>& checks,
                         health_status initial) {
    health_report report;
    report.status = initial;
    auto components = nlohmann::json::object();
    for (const auto& [name, fn] : checks) {
        component_health health;
        try {
            health = fn();
        } catch (const std::exception& e) {
            health = {health_status::down, {{"error", e.what()}}};
        } catch (...) {
            health = {health_status::down, {{"error", "unknown exception"}}};
        }
        report.status = std::max(report.status, health.status);
        report.components.emplace_back(name, health.status);
        auto component = nlohmann::json::object();
        component["status"] = to_string(health.status);
        if (!health.details.empty()) {
            component["details"] = std::move(health.details);
        }
        components[name] = std::move(component);
    }
    report.body = nlohmann::json::object();
    report.body["status"] = to_string(report.status);
    report.body["components"] = std::move(components);
    return report;
}

}  // namespace

health_report health_registry::evaluate() const {
    // Copy the checks so none runs under the lock: a slow or re-entrant check must not block
    // registration or another scrape.
    std::vector<std::pair<std::string, check>> checks;
    lifecycle state{};
    {
        std::lock_guard lock(mutex_);
        checks.assign(checks_.begin(), checks_.end());
        state = lifecycle_;
    }
    return run_checks(
        checks, state == lifecycle::running ? health_status::up : health_status::out_of_service);
}

bool health_registry::add_liveness(std::string name, check fn) {
    std::lock_guard lock(mutex_);
    return liveness_checks_.emplace(std::move(name), std::move(fn)).second;
}

health_report health_registry::evaluate_liveness() const {
    std::vector<std::pair<std::string, check>> checks;
    {
        std::lock_guard lock(mutex_);
        checks.assign(liveness_checks_.begin(), liveness_checks_.end());
    }
    auto report = run_checks(checks, health_status::up);
    // Only DOWN means "restart me": a DEGRADED loop is slow, not dead.
    if (report.status != health_status::down) {
        report.status = health_status::up;
        report.body["status"] = to_string(report.status);
    }
    return report;
}

}  // namespace starling::http
