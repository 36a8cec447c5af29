#include "metrics/latency_histogram.h"

#include <gtest/gtest.h>
#include <prometheus/metric_family.h>

#include <cmath>

namespace starling::metrics {
namespace {

using namespace std::chrono_literals;

TEST(metrics_latency_histogram, values_land_in_the_first_bucket_at_or_above_them) {
    latency_histogram h("h_seconds", "help", {1us, 10us, 100us});
    h.observe(1us);  // exactly on a bound: that bucket (le is inclusive)
    h.observe(1001ns);
    h.observe(10us);
    h.observe(1s);  // above every bound: +Inf only
    const auto family = h.collect();
    EXPECT_EQ(family.name, "h_seconds");
    EXPECT_EQ(family.help, "help");
    EXPECT_EQ(family.type, prometheus::MetricType::Histogram);
    ASSERT_EQ(family.metric.size(), 1U);
    const auto& hist = family.metric[0].histogram;
    ASSERT_EQ(hist.bucket.size(), 4U);
    EXPECT_DOUBLE_EQ(hist.bucket[0].upper_bound, 1e-6);
    EXPECT_EQ(hist.bucket[0].cumulative_count, 1U);
    EXPECT_EQ(hist.bucket[1].cumulative_count, 3U);
    EXPECT_EQ(hist.bucket[2].cumulative_count, 3U);
    EXPECT_TRUE(std::isinf(hist.bucket[3].upper_bound));
    EXPECT_EQ(hist.bucket[3].cumulative_count, 4U);
    EXPECT_EQ(hist.sample_count, 4U);
    EXPECT_NEAR(hist.sample_sum, 1.000012001, 1e-12);
}

TEST(metrics_latency_histogram, negative_durations_count_as_zero) {
    latency_histogram h("h_seconds", "help", {1us});
    h.observe(-5ms);
    const auto hist = h.collect().metric[0].histogram;
    EXPECT_EQ(hist.bucket[0].cumulative_count, 1U);
    EXPECT_EQ(hist.sample_sum, 0.0);
}

TEST(metrics_latency_histogram, empty_histogram_collects_zeros) {
    latency_histogram h("h_seconds", "help", {1ms, 2ms});
    const auto hist = h.collect().metric[0].histogram;
    EXPECT_EQ(hist.sample_count, 0U);
    for (const auto& bucket : hist.bucket) {
        EXPECT_EQ(bucket.cumulative_count, 0U);
    }
}

}  // namespace
}  // namespace starling::metrics
