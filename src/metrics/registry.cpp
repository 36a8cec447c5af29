#include "metrics/registry.h"

#include "base/assert.h"

#include <prometheus/counter.h>
#include <prometheus/registry.h>
#include <prometheus/text_serializer.h>

#include <sstream>
#include <utility>

namespace starling::metrics {
namespace {

using std::chrono::microseconds;
using std::chrono::milliseconds;
using std::chrono::nanoseconds;
using std::chrono::seconds;

// 50 µs .. 5 s: an embedded log acks in tens of microseconds, Kafka with acks=all in
// milliseconds, and anything near seconds is an incident.
std::vector<nanoseconds> produce_ack_buckets() {
    return {microseconds(50),  microseconds(100), microseconds(250),  microseconds(500),
            milliseconds(1),   milliseconds(2),   milliseconds(5),    milliseconds(10),
            milliseconds(25),  milliseconds(50),  milliseconds(100),  milliseconds(250),
            milliseconds(500), seconds(1),        milliseconds(2500), seconds(5)};
}

// 100 ns .. 10 ms: a trie lookup depends on topic depth, not subscription count, and should
// stay in the low microseconds.
std::vector<nanoseconds> trie_lookup_buckets() {
    return {nanoseconds(100), nanoseconds(250),  nanoseconds(500),  microseconds(1),
            microseconds(2),  microseconds(5),   microseconds(10),  microseconds(25),
            microseconds(50), microseconds(100), microseconds(250), microseconds(500),
            milliseconds(1),  milliseconds(10)};
}

}  // namespace

refresher_handle::refresher_handle(refresher_handle&& other) noexcept
    : owner_(std::exchange(other.owner_, nullptr)), id_(other.id_) {}

refresher_handle& refresher_handle::operator=(refresher_handle&& other) noexcept {
    if (this != &other) {
        reset();
        owner_ = std::exchange(other.owner_, nullptr);
        id_ = other.id_;
    }
    return *this;
}

refresher_handle::~refresher_handle() { reset(); }

void refresher_handle::reset() {
    if (owner_ != nullptr) {
        std::exchange(owner_, nullptr)->remove_refresher(id_);
    }
}

registry::registry()
    : prometheus_(std::make_unique<prometheus::Registry>()),
      produce_ack_latency_("messageLog_produceAckLatency_seconds",
                           "Time from producing a record to the message log's acknowledgement",
                           produce_ack_buckets()),
      subscription_lookup_("subscriptionLookup_seconds",
                           "Time to match one topic in the subscription trie",
                           trie_lookup_buckets()),
      broker_(*prometheus_),
      log_(*prometheus_, produce_ack_latency_),
      routing_(*prometheus_, subscription_lookup_),
      actor_(*prometheus_),
      auth_(*prometheus_),
      listener_(*prometheus_),
      health_(*prometheus_),
      process_(*prometheus_),
      integration_(*prometheus_),
      bugs_(&prometheus::BuildCounter()
                 .Name("bugsReported_total")
                 .Help("Internal invariant violations logged and survived (STARLING_BUG)")
                 .Register(*prometheus_)
                 .Add({})) {}

registry::~registry() {
    // Every handle must be gone by now, or it would call into a dead registry.
    STARLING_ASSERT(refreshers_.empty());
}

refresher_handle registry::add_refresher(std::function<void()> refresh) {
    std::lock_guard lock(scrape_mutex_);
    const auto id = next_refresher_id_++;
    refreshers_.emplace(id, std::move(refresh));
    return refresher_handle(this, id);
}

void registry::remove_refresher(std::uint64_t id) {
    std::lock_guard lock(scrape_mutex_);
    refreshers_.erase(id);
}

std::string registry::serialize() {
    std::vector<prometheus::MetricFamily> families;
    {
        std::lock_guard lock(scrape_mutex_);
        for (const auto& [id, refresh] : refreshers_) {
            refresh();
        }
        broker_.refresh_drop_log();
        process_.refresh();
        const auto bugs = base::bugs_reported();
        bugs_->Increment(static_cast<double>(bugs - bugs_exported_));
        bugs_exported_ = bugs;
        families = prometheus_->Collect();
    }
    families.push_back(produce_ack_latency_.collect());
    families.push_back(subscription_lookup_.collect());
    std::ostringstream out;
    prometheus::TextSerializer().Serialize(out, families);
    return std::move(out).str();
}

}  // namespace starling::metrics
