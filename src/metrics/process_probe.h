#pragma once

// The process itself, in the names every Prometheus client library uses (so stock dashboards
// and alerts work unchanged), plus two of Starling's own:
//   - process_cpu_seconds_total, process_resident_memory_bytes, process_virtual_memory_bytes,
//     process_open_fds, process_max_fds, process_start_time_seconds (from /proc);
//   - memoryLimit_bytes: the memory limit of the process's cgroup (a container's or a pod's
//     limit), 0 when there is none; alerts compare the resident size with it;
//   - build_info{version}: always 1, the version in a label.
//
// The registry refreshes it at every scrape (refresh()): a handful of small /proc and /sys
// reads. Off Linux, or where a file is missing, the metric keeps its last value (0 at first).
//
// Lifecycle: owned by metrics::registry. Concurrency: refresh() runs under the registry's
// scrape lock; set_version() from any thread.

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

namespace prometheus {
class Counter;
class Gauge;
template <class T>
class Family;
class Registry;
}  // namespace prometheus

namespace starling::metrics {

// What /proc/<pid>/stat says about CPU time, memory and start time.
struct proc_stat {
    std::uint64_t utime_ticks = 0;
    std::uint64_t stime_ticks = 0;
    std::uint64_t start_ticks = 0;  // since boot
    std::uint64_t virtual_bytes = 0;
    std::uint64_t resident_pages = 0;
};

// Parses one /proc/<pid>/stat line. The command name (field 2) may hold spaces and
// parentheses, so fields are counted from its last ')'. nullopt when the line is malformed.
std::optional<proc_stat> parse_proc_stat(std::string_view line);

// The "btime" line of /proc/stat: boot time in seconds since the epoch.
std::optional<std::uint64_t> parse_boot_time(std::string_view proc_stat_file);

class process_probe {
  public:
    explicit process_probe(prometheus::Registry& registry);

    process_probe(const process_probe&) = delete;
    process_probe& operator=(const process_probe&) = delete;

    // build_info{version="..."} 1. Replaces an earlier version label.
    void set_version(std::string_view version);

    // Reads /proc and the cgroup files and sets the gauges.
    void refresh();

  private:
    prometheus::Counter& cpu_seconds_;
    prometheus::Gauge& resident_bytes_;
    prometheus::Gauge& virtual_bytes_;
    prometheus::Gauge& open_fds_;
    prometheus::Gauge& max_fds_;
    prometheus::Gauge& start_time_;
    prometheus::Gauge& memory_limit_;
    prometheus::Family<prometheus::Gauge>& build_info_;
    std::mutex version_mutex_;
    prometheus::Gauge* build_info_series_ = nullptr;  // guarded by version_mutex_
    double cpu_seconds_exported_ = 0;
};

}  // namespace starling::metrics
