// The small probes: log, routing and actor (the broker probe has its own file).

#include "metrics/actor_probe.h"
#include "metrics/health_probe.h"
#include "metrics/latency_histogram.h"
#include "metrics/log_probe.h"
#include "metrics/routing_probe.h"

#include <prometheus/counter.h>
#include <prometheus/gauge.h>
#include <prometheus/registry.h>

namespace starling::metrics {
namespace {

prometheus::Counter& counter(prometheus::Registry& registry, const std::string& name,
                             const std::string& help) {
    return prometheus::BuildCounter().Name(name).Help(help).Register(registry).Add({});
}

prometheus::Gauge& gauge(prometheus::Registry& registry, const std::string& name,
                         const std::string& help) {
    return prometheus::BuildGauge().Name(name).Help(help).Register(registry).Add({});
}

}  // namespace

log_probe::log_probe(prometheus::Registry& registry, latency_histogram& ack_latency)
    : ack_latency_(ack_latency),
      failed_(counter(registry, "messageLog_produceFailed_total",
                      "Records the message log failed to acknowledge")),
      disk_state_(gauge(registry, "messageLog_diskState",
                        "Embedded log free-space state: 0 ok, 1 slowed, 2 refusing publishes")),
      disk_free_(gauge(registry, "messageLog_diskFreeBytes",
                       "Free bytes on the embedded log's file system at the last reading")),
      disk_refusals_(counter(registry, "messageLog_diskRefusals_total",
                             "Produces the embedded log refused for low disk space")),
      write_errors_(counter(registry, "messageLog_writeErrors_total",
                            "Failed writes and fdatasyncs of the embedded log")),
      quarantined_(counter(registry, "messageLog_quarantinedSegments_total",
                           "Corrupt closed segments the embedded log moved to quarantine")) {}

void log_probe::produce_acked(std::chrono::nanoseconds latency) { ack_latency_.observe(latency); }
void log_probe::produce_failed() { failed_.Increment(); }

void log_probe::embedded_status(const embedded_state& state) {
    disk_state_.Set(static_cast<double>(state.disk_state));
    disk_free_.Set(static_cast<double>(state.free_bytes));
    const auto grow = [](prometheus::Counter& counter, std::uint64_t now, std::uint64_t& last) {
        if (now > last) {
            counter.Increment(static_cast<double>(now - last));
            last = now;
        }
    };
    grow(disk_refusals_, state.disk_refusals, last_.disk_refusals);
    grow(write_errors_, state.write_errors, last_.write_errors);
    grow(quarantined_, state.quarantined_segments, last_.quarantined_segments);
}

routing_probe::routing_probe(prometheus::Registry& registry, latency_histogram& lookup_latency)
    : lookup_latency_(lookup_latency),
      trie_nodes_(gauge(registry, "subscriptionTrieNodes", "Nodes in the subscription trie")),
      routed_(counter(registry, "routedMsgs_total",
                      "Message copies routed to subscribers after matching")),
      forwarded_(counter(registry, "forwardedMsgs_total",
                         "Copies produced to another node's msg.downlink.basic topic")) {}

void routing_probe::trie_lookup(std::chrono::nanoseconds duration) {
    lookup_latency_.observe(duration);
}
void routing_probe::trie_nodes(std::int64_t count) { trie_nodes_.Set(static_cast<double>(count)); }
void routing_probe::messages_routed(std::uint64_t count) {
    routed_.Increment(static_cast<double>(count));
}
void routing_probe::copy_forwarded() { forwarded_.Increment(); }

actor_probe::actor_probe(prometheus::Registry& registry)
    : mailbox_depth_(
          gauge(registry, "actorMailboxDepth", "Messages waiting in all actor mailboxes")),
      running_actors_(gauge(registry, "runningActors", "Actors alive on this node")),
      rejected_(counter(registry, "actorMailboxRejected_total",
                        "Messages turned away because a mailbox was full")) {}

void actor_probe::set_mailbox_depth(std::int64_t messages) {
    mailbox_depth_.Set(static_cast<double>(messages));
}
void actor_probe::set_running_actors(std::int64_t actors) {
    running_actors_.Set(static_cast<double>(actors));
}
void actor_probe::mailbox_rejected(std::uint64_t count) {
    rejected_.Increment(static_cast<double>(count));
}

}  // namespace starling::metrics

namespace starling::metrics {

health_probe::health_probe(prometheus::Registry& registry)
    : status_(prometheus::BuildGauge()
                  .Name("healthStatus")
                  .Help("Health status by component: 0 UP, 1 DEGRADED, 2 OUT_OF_SERVICE, 3 DOWN; "
                        "component=\"overall\" is readiness")
                  .Register(registry)) {}

void health_probe::report(const std::vector<std::pair<std::string, int>>& statuses) {
    std::map<std::string, prometheus::Gauge*> current;
    for (const auto& [component, level] : statuses) {
        auto found = series_.find(component);
        auto* gauge =
            found != series_.end() ? found->second : &status_.Add({{"component", component}});
        gauge->Set(level);
        current.emplace(component, gauge);
    }
    for (const auto& [component, gauge] : series_) {
        if (!current.contains(component)) {
            status_.Remove(gauge);
        }
    }
    series_ = std::move(current);
}

}  // namespace starling::metrics
