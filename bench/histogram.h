#pragma once

// latency_histogram: a log-linear histogram of non-negative integer samples (nanoseconds in
// practice) with bounded relative error, cheap to record into and to merge.
//
// Structure (the HdrHistogram idea, fixed precision): values below 128 each have their own
// bucket, so they are exact. Above that, every power-of-two range [2^k, 2^(k+1)) is split into
// 64 equal sub-buckets, so a bucket is at most 1/64 of its lower bound wide: a percentile is
// reported as the highest value of its bucket (clamped to the true maximum), at most 1.6 %
// above the true sample and never below it. 3,776 buckets of 8 bytes cover the whole uint64
// range (30 KiB), so one histogram per worker thread and metric is affordable; per-client
// histograms are not what this is for.
//
// Percentile definition: the smallest recorded value v such that at least ceil(q * count)
// samples are <= v ("nearest rank"); q = 1 gives the exact maximum, q = 0 the exact minimum.
//
// Lifecycle and concurrency: a plain value type. Not thread-safe: each worker records into its
// own and the runner merges them after the worker has handed them over.

#include <array>
#include <cstddef>
#include <cstdint>

namespace starling::bench {

class latency_histogram {
  public:
    static constexpr std::size_t exact_below = 128;
    static constexpr std::size_t sub_buckets = 64;
    static constexpr std::size_t bucket_count = exact_below + (64 - 7) * sub_buckets;

    void record(std::uint64_t value) noexcept;
    void merge(const latency_histogram& other) noexcept;
    void reset() noexcept;

    std::uint64_t count() const noexcept { return count_; }
    // 0 when empty.
    std::uint64_t min() const noexcept { return count_ == 0 ? 0 : min_; }
    std::uint64_t max() const noexcept { return max_; }
    double mean() const noexcept;
    // q in [0, 1]; 0 when empty.
    std::uint64_t percentile(double q) const noexcept;

    // Exposed for tests: the bucket of a value and the largest value sharing that bucket.
    static std::size_t bucket_of(std::uint64_t value) noexcept;
    static std::uint64_t highest_in_bucket(std::size_t bucket) noexcept;

  private:
    std::array<std::uint64_t, bucket_count> buckets_{};
    std::uint64_t count_ = 0;
    std::uint64_t min_ = UINT64_MAX;
    std::uint64_t max_ = 0;
    // long double would be exact for longer; a double sum of nanosecond samples stays exact
    // to 2^53 ns (104 days of summed latency), far beyond one run.
    double sum_ = 0;
};

}  // namespace starling::bench
