#include "bench/histogram.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <vector>

namespace starling::bench {
namespace {

// The nearest-rank percentile of a sorted sample, computed the slow, obvious way.
std::uint64_t reference_percentile(std::vector<std::uint64_t> values, double q) {
    std::sort(values.begin(), values.end());
    auto rank = static_cast<std::size_t>(std::ceil(q * static_cast<double>(values.size())));
    rank = std::clamp<std::size_t>(rank, 1, values.size());
    return values[rank - 1];
}

TEST(latency_histogram, empty_reports_zero) {
    latency_histogram h;
    EXPECT_EQ(h.count(), 0u);
    EXPECT_EQ(h.percentile(0.5), 0u);
    EXPECT_EQ(h.min(), 0u);
    EXPECT_EQ(h.max(), 0u);
    EXPECT_EQ(h.mean(), 0.0);
}

TEST(latency_histogram, small_values_are_exact) {
    latency_histogram h;
    for (std::uint64_t v = 1; v <= 100; ++v) {
        h.record(v);
    }
    EXPECT_EQ(h.count(), 100u);
    EXPECT_EQ(h.percentile(0.5), 50u);
    EXPECT_EQ(h.percentile(0.99), 99u);
    EXPECT_EQ(h.percentile(0.999), 100u);
    EXPECT_EQ(h.percentile(1.0), 100u);
    EXPECT_EQ(h.percentile(0.0), 1u);
    EXPECT_DOUBLE_EQ(h.mean(), 50.5);
}

TEST(latency_histogram, single_large_value_is_reported_exactly_through_the_max_clamp) {
    latency_histogram h;
    h.record(123'456'789);
    EXPECT_EQ(h.percentile(0.5), 123'456'789u);
    EXPECT_EQ(h.percentile(0.99), 123'456'789u);
    EXPECT_EQ(h.max(), 123'456'789u);
}

TEST(latency_histogram, percentiles_stay_within_the_bucket_error_of_the_exact_answer) {
    std::mt19937_64 rng(42);
    std::lognormal_distribution<double> dist(13.0, 1.5);  // ~0.4 ms median, long tail
    std::vector<std::uint64_t> values;
    latency_histogram h;
    for (int i = 0; i < 100'000; ++i) {
        const auto v = static_cast<std::uint64_t>(dist(rng));
        values.push_back(v);
        h.record(v);
    }
    for (double q : {0.5, 0.9, 0.99, 0.999}) {
        const auto exact = reference_percentile(values, q);
        const auto got = h.percentile(q);
        // Never below the true sample, at most one sub-bucket (1/64) above it.
        EXPECT_GE(got, exact) << "q=" << q;
        EXPECT_LE(static_cast<double>(got), static_cast<double>(exact) * (1.0 + 1.0 / 64) + 1)
            << "q=" << q;
    }
    EXPECT_EQ(h.percentile(1.0), *std::max_element(values.begin(), values.end()));
}

TEST(latency_histogram, buckets_cover_the_whole_range_monotonically) {
    EXPECT_EQ(latency_histogram::bucket_of(0), 0u);
    EXPECT_EQ(latency_histogram::bucket_of(127), 127u);
    EXPECT_EQ(latency_histogram::bucket_of(128), 128u);
    EXPECT_EQ(latency_histogram::bucket_of(UINT64_MAX), latency_histogram::bucket_count - 1);
    EXPECT_EQ(latency_histogram::highest_in_bucket(latency_histogram::bucket_count - 1),
              UINT64_MAX);
    // Every value lies within its bucket, and bucket ends are increasing.
    for (std::uint64_t v : {128ULL, 129ULL, 255ULL, 256ULL, 1000ULL, 1ULL << 40, (1ULL << 40) + 7,
                            (1ULL << 63) + 12345}) {
        const auto b = latency_histogram::bucket_of(v);
        EXPECT_LE(v, latency_histogram::highest_in_bucket(b)) << v;
        EXPECT_GT(v, latency_histogram::highest_in_bucket(b - 1)) << v;
    }
}

TEST(latency_histogram, merge_equals_recording_everything_in_one) {
    latency_histogram a;
    latency_histogram b;
    latency_histogram all;
    for (std::uint64_t v = 0; v < 5000; ++v) {
        const std::uint64_t x = v * v + 17;
        (v % 3 == 0 ? a : b).record(x);
        all.record(x);
    }
    a.merge(b);
    EXPECT_EQ(a.count(), all.count());
    EXPECT_EQ(a.min(), all.min());
    EXPECT_EQ(a.max(), all.max());
    for (double q : {0.1, 0.5, 0.99, 0.999}) {
        EXPECT_EQ(a.percentile(q), all.percentile(q));
    }
    a.reset();
    EXPECT_EQ(a.count(), 0u);
    EXPECT_EQ(a.percentile(0.5), 0u);
}

}  // namespace
}  // namespace starling::bench
