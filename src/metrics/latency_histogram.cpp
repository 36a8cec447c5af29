#include "metrics/latency_histogram.h"

#include "base/assert.h"

#include <prometheus/metric_family.h>

#include <algorithm>
#include <limits>

namespace starling::metrics {

latency_histogram::latency_histogram(std::string name, std::string help,
                                     std::vector<std::chrono::nanoseconds> upper_bounds)
    : name_(std::move(name)),
      help_(std::move(help)),
      counts_(std::make_unique<std::atomic<std::uint64_t>[]>(upper_bounds.size() + 1)) {
    bounds_ns_.reserve(upper_bounds.size());
    for (const auto bound : upper_bounds) {
        STARLING_ASSERT(bound.count() > 0);
        STARLING_ASSERT(bounds_ns_.empty() || bound.count() > bounds_ns_.back());
        bounds_ns_.push_back(bound.count());
    }
}

void latency_histogram::observe(std::chrono::nanoseconds value) noexcept {
    const std::int64_t ns = std::max<std::int64_t>(value.count(), 0);
    // First bound >= value: Prometheus buckets are "less than or equal".
    const auto bucket = static_cast<std::size_t>(
        std::lower_bound(bounds_ns_.begin(), bounds_ns_.end(), ns) - bounds_ns_.begin());
    counts_[bucket].fetch_add(1, std::memory_order_relaxed);
    sum_ns_.fetch_add(ns, std::memory_order_relaxed);
}

prometheus::MetricFamily latency_histogram::collect() const {
    prometheus::ClientMetric metric;
    std::uint64_t cumulative = 0;
    for (std::size_t i = 0; i <= bounds_ns_.size(); ++i) {
        cumulative += counts_[i].load(std::memory_order_relaxed);
        prometheus::ClientMetric::Bucket bucket;
        bucket.cumulative_count = cumulative;
        bucket.upper_bound = i < bounds_ns_.size() ? static_cast<double>(bounds_ns_[i]) / 1e9
                                                   : std::numeric_limits<double>::infinity();
        metric.histogram.bucket.push_back(bucket);
    }
    metric.histogram.sample_count = cumulative;
    metric.histogram.sample_sum =
        static_cast<double>(sum_ns_.load(std::memory_order_relaxed)) / 1e9;

    prometheus::MetricFamily family;
    family.name = name_;
    family.help = help_;
    family.type = prometheus::MetricType::Histogram;
    family.metric.push_back(std::move(metric));
    return family;
}

}  // namespace starling::metrics
