#include "metrics/process_probe.h"

#include "metrics/registry.h"

#include "exposition.h"
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <optional>
#include <random>
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

class cgroup_tree : public ::testing::Test {
  protected:
    cgroup_tree() {
        std::random_device rd;
        root_ = std::filesystem::temp_directory_path() /
                ("starling-cgroup-" + std::to_string(rd()) + std::to_string(rd()));
        std::filesystem::create_directories(root_);
    }
    ~cgroup_tree() override {
        std::error_code ignored;
        std::filesystem::remove_all(root_, ignored);
    }
    void write(const std::string& relative, const std::string& text) {
        const auto file = root_ / relative;
        std::filesystem::create_directories(file.parent_path());
        std::ofstream(file) << text;
    }
    std::filesystem::path root_;
};

TEST_F(cgroup_tree, v2_limit_of_the_process_cgroup) {
    write("kubepods/pod1/memory.max", "536870912\n");
    write("memory.max", "max\n");
    EXPECT_EQ(cgroup_memory_limit("0::/kubepods/pod1\n", root_), 536870912U);
}

TEST_F(cgroup_tree, v2_in_a_cgroup_namespace_reads_the_root_and_max_means_none) {
    write("memory.max", "1073741824\n");
    EXPECT_EQ(cgroup_memory_limit("0::/\n", root_), 1073741824U);
    write("memory.max", "max\n");
    EXPECT_EQ(cgroup_memory_limit("0::/\n", root_), 0U);
}

TEST_F(cgroup_tree, v1_memory_controller_and_its_unlimited_value) {
    const std::string cgroup = "12:cpu,cpuacct:/docker/abc\n4:memory:/docker/abc\n";
    write("memory/docker/abc/memory.limit_in_bytes", "268435456\n");
    EXPECT_EQ(cgroup_memory_limit(cgroup, root_), 268435456U);
    write("memory/docker/abc/memory.limit_in_bytes", "9223372036854771712\n");
    EXPECT_EQ(cgroup_memory_limit(cgroup, root_), 0U);
}

TEST_F(cgroup_tree, no_readable_limit_is_unknown_not_zero) {
    EXPECT_FALSE(cgroup_memory_limit("0::/\n", root_).has_value());
    write("memory.max", "garbage\n");
    EXPECT_FALSE(cgroup_memory_limit("0::/\n", root_).has_value());
    EXPECT_FALSE(cgroup_memory_limit("", root_).has_value());
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
