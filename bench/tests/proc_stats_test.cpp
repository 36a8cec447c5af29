#include "bench/proc_stats.h"

#include <gtest/gtest.h>
#include <unistd.h>

namespace starling::bench {
namespace {

TEST(proc_stats, cpu_ticks_are_utime_plus_stime_even_with_odd_command_names) {
    // Fields: pid (comm) state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt
    // utime stime ...
    const std::string stat =
        "1234 (star ling) d) S 1 1234 1234 0 -1 4194560 100 0 0 0 250 50 0 0 20 0 9 0 12345";
    auto ticks = parse_stat_cpu_ticks(stat);
    ASSERT_TRUE(ticks.has_value());
    EXPECT_EQ(*ticks, 300u);
    EXPECT_FALSE(parse_stat_cpu_ticks("garbage").has_value());
    EXPECT_FALSE(parse_stat_cpu_ticks("1 (x) S 1 2").has_value());
}

TEST(proc_stats, memory_reads_vmrss_and_vmhwm) {
    const std::string status =
        "Name:\tstarlingd\nVmPeak:\t  900000 kB\nVmHWM:\t   52000 kB\nVmRSS:\t   48000 kB\n";
    auto m = parse_status_memory(status);
    ASSERT_TRUE(m.has_value());
    EXPECT_EQ(m->rss_kb, 48000u);
    EXPECT_EQ(m->peak_kb, 52000u);
    EXPECT_FALSE(parse_status_memory("Name:\tx\n").has_value());
}

TEST(proc_stats, cpu_model_is_the_first_model_name) {
    EXPECT_EQ(parse_cpu_model("processor\t: 0\nmodel name\t: AMD EPYC 7B13\nmodel name\t: other\n"),
              "AMD EPYC 7B13");
    EXPECT_EQ(parse_cpu_model("processor\t: 0\n"), "unknown");
}

TEST(proc_stats, this_process_can_be_read) {
    auto cpu = read_cpu_seconds(::getpid());
    ASSERT_TRUE(cpu.has_value());
    EXPECT_GE(*cpu, 0.0);
    auto mem = read_memory(::getpid());
    ASSERT_TRUE(mem.has_value());
    EXPECT_GT(mem->rss_kb, 0u);
    EXPECT_GE(mem->peak_kb, mem->rss_kb);
    EXPECT_GT(read_machine_info().cores, 0u);
}

}  // namespace
}  // namespace starling::bench
