#include "bench/histogram.h"

#include <algorithm>
#include <bit>
#include <cmath>

namespace starling::bench {

std::size_t latency_histogram::bucket_of(std::uint64_t value) noexcept {
    if (value < exact_below) {
        return static_cast<std::size_t>(value);
    }
    // msb in [7, 63]; shifting by msb - 6 leaves a value in [64, 127]: the sub-bucket.
    const auto msb = static_cast<std::size_t>(std::bit_width(value) - 1);
    const std::size_t shift = msb - 6;
    const auto sub = static_cast<std::size_t>(value >> shift) - sub_buckets;
    return exact_below + (msb - 7) * sub_buckets + sub;
}

std::uint64_t latency_histogram::highest_in_bucket(std::size_t bucket) noexcept {
    if (bucket < exact_below) {
        return bucket;
    }
    const std::size_t msb = (bucket - exact_below) / sub_buckets + 7;
    const std::size_t sub = (bucket - exact_below) % sub_buckets;
    const std::size_t shift = msb - 6;
    const std::uint64_t lowest = static_cast<std::uint64_t>(sub_buckets + sub) << shift;
    // The top bucket's upper end is UINT64_MAX; the arithmetic below wraps to exactly that.
    return lowest + ((std::uint64_t{1} << shift) - 1);
}

void latency_histogram::record(std::uint64_t value) noexcept {
    ++buckets_[bucket_of(value)];
    ++count_;
    min_ = std::min(min_, value);
    max_ = std::max(max_, value);
    sum_ += static_cast<double>(value);
}

void latency_histogram::merge(const latency_histogram& other) noexcept {
    if (other.count_ == 0) {
        return;
    }
    for (std::size_t i = 0; i < bucket_count; ++i) {
        buckets_[i] += other.buckets_[i];
    }
    count_ += other.count_;
    min_ = std::min(min_, other.min_);
    max_ = std::max(max_, other.max_);
    sum_ += other.sum_;
}

void latency_histogram::reset() noexcept { *this = latency_histogram{}; }

double latency_histogram::mean() const noexcept {
    return count_ == 0 ? 0.0 : sum_ / static_cast<double>(count_);
}

std::uint64_t latency_histogram::percentile(double q) const noexcept {
    if (count_ == 0) {
        return 0;
    }
    if (q <= 0.0) {
        return min_;
    }
    if (q >= 1.0) {
        return max_;
    }
    // Nearest rank: the ceil(q * count)-th smallest sample (1-based).
    auto rank = static_cast<std::uint64_t>(std::ceil(q * static_cast<double>(count_)));
    rank = std::clamp<std::uint64_t>(rank, 1, count_);
    std::uint64_t seen = 0;
    for (std::size_t i = 0; i < bucket_count; ++i) {
        seen += buckets_[i];
        if (seen >= rank) {
            // Never report beyond the true extremes (the bucket may be wider than the data).
            return std::clamp(highest_in_bucket(i), min_, max_);
        }
    }
    return max_;
}

}  // namespace starling::bench
