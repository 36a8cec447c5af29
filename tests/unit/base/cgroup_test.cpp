#include "base/cgroup.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <thread>

namespace starling::base {
namespace {

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

TEST_F(cgroup_tree, v2_cpu_quota_over_period) {
    write("kubepods/pod1/cpu.max", "150000 100000\n");
    EXPECT_DOUBLE_EQ(cgroup_cpu_limit("0::/kubepods/pod1\n", root_).value_or(-1), 1.5);
    write("kubepods/pod1/cpu.max", "max 100000\n");
    EXPECT_DOUBLE_EQ(cgroup_cpu_limit("0::/kubepods/pod1\n", root_).value_or(-1), 0.0);
}

TEST_F(cgroup_tree, v1_cpu_quota_in_the_combined_cpu_cpuacct_mount) {
    const std::string cgroup = "4:memory:/docker/abc\n3:cpu,cpuacct:/docker/abc\n";
    write("cpu,cpuacct/docker/abc/cpu.cfs_quota_us", "200000\n");
    write("cpu,cpuacct/docker/abc/cpu.cfs_period_us", "100000\n");
    EXPECT_DOUBLE_EQ(cgroup_cpu_limit(cgroup, root_).value_or(-1), 2.0);
    write("cpu,cpuacct/docker/abc/cpu.cfs_quota_us", "-1\n");
    EXPECT_DOUBLE_EQ(cgroup_cpu_limit(cgroup, root_).value_or(-1), 0.0);
}

TEST_F(cgroup_tree, cpu_limit_unreadable_or_malformed_is_unknown) {
    EXPECT_FALSE(cgroup_cpu_limit("0::/\n", root_).has_value());
    write("cpu.max", "lots 100000\n");
    EXPECT_FALSE(cgroup_cpu_limit("0::/\n", root_).has_value());
    write("cpu.max", "100000 0\n");
    EXPECT_FALSE(cgroup_cpu_limit("0::/\n", root_).has_value());
}

TEST(available_cpus, at_least_one_and_at_most_the_host_cores) {
    const auto cpus = available_cpus();
    EXPECT_GE(cpus, 1U);
    EXPECT_LE(cpus, std::max(1U, std::thread::hardware_concurrency()));
}

}  // namespace
}  // namespace starling::base
