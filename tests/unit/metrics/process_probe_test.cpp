#include "metrics/process_probe.h"

#include "metrics/registry.h"

#include "exposition.h"
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <optional>
#include <sstream>

namespace starling::metrics {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

using testing::sample;

// A real line from proc(5)'s layout, with a command name holding a space and a parenthesis.
constexpr std::string_view stat_line =
    "4242 (star ling) d) S 1 4242 4242 0 -1 4194560 1200 0 3 0 "
    "750 250 0 0 20 0 9 0 123456 987654321 2048 18446744073709551615 1 1 0 0 0 0 0 4096 "
    "16384 0 0 0 17 1 0 0 0 0 0\n";

TEST(proc_stat, fields_are_counted_from_the_last_parenthesis) {
    const auto stat = parse_proc_stat(stat_line);
    ASSERT_TRUE(stat.has_value());
    EXPECT_EQ(stat->utime_ticks, 750U);
    EXPECT_EQ(stat->stime_ticks, 250U);
    EXPECT_EQ(stat->start_ticks, 123456U);
    EXPECT_EQ(stat->virtual_bytes, 987654321U);
    EXPECT_EQ(stat->resident_pages, 2048U);
}

TEST(proc_stat, truncated_or_garbled_lines_are_refused) {
    EXPECT_FALSE(parse_proc_stat("").has_value());
    EXPECT_FALSE(parse_proc_stat("4242 (no closing S 1 2 3").has_value());
    EXPECT_FALSE(parse_proc_stat("4242 (x) S 1 4242 4242 0 -1 4194560 1200 0 3 0 750").has_value());
    EXPECT_FALSE(parse_proc_stat("4242 (x) S 1 4242 4242 0 -1 4194560 1200 0 3 0 seven 250 0 0 "
                                 "20 0 9 0 123456 987654321 2048")
                     .has_value());
}

TEST(proc_stat, boot_time_comes_from_the_btime_line) {
    EXPECT_EQ(parse_boot_time("cpu  1 2 3\nbtime 1764806400\nprocesses 9\n"), 1764806400U);
    EXPECT_FALSE(parse_boot_time("cpu  1 2 3\n").has_value());
}

TEST(process_probe, scrape_reports_this_process) {
    registry metrics;
    metrics.process().set_version("1.2.3");
    const auto text = metrics.serialize();
    EXPECT_THAT(text, HasSubstr("# TYPE process_cpu_seconds_total counter\n"));
    EXPECT_THAT(text, HasSubstr("# TYPE memoryLimit_bytes gauge\n"));
    EXPECT_EQ(sample(text, "build_info{version=\"1.2.3\"}"), 1.0);
    EXPECT_GT(sample(text, "process_resident_memory_bytes").value_or(0), 1e6);
    EXPECT_GT(sample(text, "process_virtual_memory_bytes").value_or(0), 1e6);
    // stdin, stdout and stderr at least.
    EXPECT_GE(sample(text, "process_open_fds").value_or(0), 3.0);
    EXPECT_GT(sample(text, "process_max_fds").value_or(0), 0.0);
    const auto now =
        std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
    const auto started = sample(text, "process_start_time_seconds").value_or(0);
    EXPECT_LE(started, now + 5);
    EXPECT_GT(started, now - 24 * 3600);  // this test binary started moments ago

    metrics.process().set_version("1.2.4");
    const auto again = metrics.serialize();
    EXPECT_THAT(again, Not(HasSubstr("version=\"1.2.3\"")));
    EXPECT_EQ(sample(again, "build_info{version=\"1.2.4\"}"), 1.0);
}

TEST(process_probe, cpu_seconds_never_go_backwards) {
    registry metrics;
    const auto first = sample(metrics.serialize(), "process_cpu_seconds_total").value_or(-1);
    volatile double sink = 0;
    for (int i = 0; i < 20'000'000; ++i) {
        sink = sink + i;
    }
    const auto second = sample(metrics.serialize(), "process_cpu_seconds_total").value_or(-1);
    EXPECT_GE(first, 0.0);
    EXPECT_GE(second, first);
}

TEST(health_probe, series_follow_the_reported_components) {
    registry metrics;
    metrics.health().report({{"overall", 2}, {"startup", 2}, {"messageLog", 0}});
    auto text = metrics.serialize();
    EXPECT_EQ(sample(text, "healthStatus{component=\"overall\"}"), 2.0);
    EXPECT_EQ(sample(text, "healthStatus{component=\"startup\"}"), 2.0);
    EXPECT_EQ(sample(text, "healthStatus{component=\"messageLog\"}"), 0.0);

    // The start-up check is gone and the log is down: its series goes, the others follow.
    metrics.health().report({{"overall", 3}, {"messageLog", 3}});
    text = metrics.serialize();
    EXPECT_EQ(sample(text, "healthStatus{component=\"overall\"}"), 3.0);
    EXPECT_EQ(sample(text, "healthStatus{component=\"messageLog\"}"), 3.0);
    EXPECT_FALSE(sample(text, "healthStatus{component=\"startup\"}").has_value());
}

TEST(listener_probe, certificate_expiry_per_listener) {
    registry metrics;
    metrics.listener().certificate_expires("ssl", 1893456000);
    metrics.listener().certificate_expires("wss", 1900000000);
    const auto text = metrics.serialize();
    EXPECT_EQ(sample(text, "tlsCertificateExpiry_seconds{listener=\"ssl\"}"), 1893456000.0);
    EXPECT_EQ(sample(text, "tlsCertificateExpiry_seconds{listener=\"wss\"}"), 1900000000.0);
}

}  // namespace
}  // namespace starling::metrics
