#pragma once

// What the benchmark reads from /proc about the broker process and the machine: CPU seconds
// (utime + stime of every thread, /proc/<pid>/stat), resident memory now and at its peak
// (VmRSS and VmHWM of /proc/<pid>/status), core count and CPU model (/proc/cpuinfo).
//
// The parse_* functions take the file's text, so they are tested without a process; the read_*
// functions read the file and return nullopt when it cannot be read (the process is gone, or
// this is not Linux).
//
// Concurrency: free functions, safe anywhere.

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace starling::bench {

struct process_memory {
    std::uint64_t rss_kb = 0;   // VmRSS
    std::uint64_t peak_kb = 0;  // VmHWM
};

struct machine_info {
    unsigned cores = 0;  // online logical CPUs
    std::string cpu_model;
    std::string kernel;
};

// utime + stime in clock ticks, from the text of /proc/<pid>/stat. The command name (field 2)
// may contain spaces and parentheses, so fields are counted after its last ')'.
std::optional<std::uint64_t> parse_stat_cpu_ticks(std::string_view stat_text);
// VmRSS and VmHWM in kB from the text of /proc/<pid>/status.
std::optional<process_memory> parse_status_memory(std::string_view status_text);
// The first "model name" of /proc/cpuinfo (or "unknown").
std::string parse_cpu_model(std::string_view cpuinfo_text);

std::optional<double> read_cpu_seconds(pid_t pid);
std::optional<process_memory> read_memory(pid_t pid);
// The 1-minute load average (runnable threads), to show how busy a shared machine was.
std::optional<double> read_load_average();
// This process's own CPU seconds (user + system, all threads).
double self_cpu_seconds();
machine_info read_machine_info();

}  // namespace starling::bench
