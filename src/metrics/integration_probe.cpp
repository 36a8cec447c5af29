#include "metrics/integration_probe.h"

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/registry.h>

namespace starling::metrics {

integration_probe::integration_probe(prometheus::Registry& registry)
    : messages_(prometheus::BuildCounter()
                    .Name("integrationMsgs_total")
                    .Help("Integration messages sent to the target, failed after the last retry, "
                          "and attempts retried")
                    .Register(registry)),
      lag_(prometheus::BuildGauge()
               .Name("integrationLag")
               .Help("Records of the integration's topic this node's executor has not handled")
               .Register(registry)),
      up_(prometheus::BuildGauge()
              .Name("integrationUp")
              .Help("1 while the integration's target accepts messages, 0 while it fails")
              .Register(registry)) {}

integration_probe::series integration_probe::add(const std::string& integration_id) {
    std::lock_guard lock(mutex_);
    auto& up = up_.Add({{"integration", integration_id}});
    up.Set(1);
    return {messages_.Add({{"integration", integration_id}, {"result", "sent"}}),
            messages_.Add({{"integration", integration_id}, {"result", "failed"}}),
            messages_.Add({{"integration", integration_id}, {"result", "retried"}}),
            lag_.Add({{"integration", integration_id}}), up};
}

void integration_probe::remove(const std::string& integration_id) {
    std::lock_guard lock(mutex_);
    for (const char* result : {"sent", "failed", "retried"}) {
        messages_.Remove(&messages_.Add({{"integration", integration_id}, {"result", result}}));
    }
    lag_.Remove(&lag_.Add({{"integration", integration_id}}));
    up_.Remove(&up_.Add({{"integration", integration_id}}));
}

}  // namespace starling::metrics
