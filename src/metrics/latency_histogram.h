#pragma once

// A Prometheus histogram of durations that records without a lock.
//
// prometheus::Histogram takes a mutex on every Observe(); the produce-ack and trie-lookup
// histograms sit on the publish path of every message, so this one counts into atomics
// instead: observe() is one binary search over the bounds and two relaxed fetch_adds.
//
// Structure: one atomic count per bucket (bucket i counts values in (bound[i-1], bound[i]],
// the last bucket everything above the last bound, i.e. +Inf) and an atomic sum in
// nanoseconds. The total count is derived from the buckets at collection, so the cumulative
// buckets and the count always agree; the sum may lag by the observations in flight while a
// scrape reads, which Prometheus tolerates.
//
// Lifecycle: created by metrics::registry, which owns it; observe() and collect() may run on
// any threads at once.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace prometheus {
struct MetricFamily;
}  // namespace prometheus

namespace starling::metrics {

class latency_histogram {
  public:
    // upper_bounds: strictly increasing, positive; +Inf is implied.
    latency_histogram(std::string name, std::string help,
                      std::vector<std::chrono::nanoseconds> upper_bounds);

    latency_histogram(const latency_histogram&) = delete;
    latency_histogram& operator=(const latency_histogram&) = delete;

    // Negative durations (a clock stepping back) count as zero.
    void observe(std::chrono::nanoseconds value) noexcept;

    // A snapshot in Prometheus's form: bounds in seconds, cumulative counts.
    prometheus::MetricFamily collect() const;

    const std::string& name() const noexcept { return name_; }

  private:
    std::string name_;
    std::string help_;
    std::vector<std::int64_t> bounds_ns_;
    std::unique_ptr<std::atomic<std::uint64_t>[]> counts_;  // bounds_ns_.size() + 1
    std::atomic<std::int64_t> sum_ns_{0};
};

}  // namespace starling::metrics
