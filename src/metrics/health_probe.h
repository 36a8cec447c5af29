#pragma once

// healthStatus{component}: each health component's status as a number, so Prometheus can alert
// on what GET /actuator/health reports: 0 UP, 1 DEGRADED, 2 OUT_OF_SERVICE, 3 DOWN (ascending
// severity, as the health endpoint orders them). component="overall" is the readiness verdict.
//
// The daemon feeds it from a metrics refresher that evaluates the health registry; a component
// that is no longer reported (a start-up check that finished) loses its series.
//
// Lifecycle: owned by metrics::registry. Concurrency: report() runs under the registry's scrape
// lock (from a refresher); not for concurrent callers.

#include <map>
#include <string>
#include <utility>
#include <vector>

namespace prometheus {
class Gauge;
template <class T>
class Family;
class Registry;
}  // namespace prometheus

namespace starling::metrics {

class health_probe {
  public:
    explicit health_probe(prometheus::Registry& registry);

    health_probe(const health_probe&) = delete;
    health_probe& operator=(const health_probe&) = delete;

    // The statuses of this scrape, as (component, 0..3). Series of components not in the list
    // are removed.
    void report(const std::vector<std::pair<std::string, int>>& statuses);

  private:
    prometheus::Family<prometheus::Gauge>& status_;
    std::map<std::string, prometheus::Gauge*> series_;
};

}  // namespace starling::metrics
