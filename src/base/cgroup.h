#pragma once

// The resource limits of the cgroup this process runs in: what a container or a Kubernetes
// pod was given, which is what the broker should size itself by (the host's cores and memory
// are not its to use).
//
// Each function takes the text of /proc/self/cgroup and where the hierarchy is mounted
// (/sys/fs/cgroup), so tests can hand it a fake tree. cgroup v2 first (the "0::<path>" line),
// then v1 (the line naming the controller). Inside a container with its own cgroup namespace
// the path is "/" and the mount's root holds the container's limit; without one, the process's
// own directory does. nullopt when no limit file can be read.

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

namespace starling::base {

// Bytes; 0 = unlimited (v2 memory.max "max", v1 memory.limit_in_bytes near 2^63).
std::optional<std::uint64_t> cgroup_memory_limit(std::string_view proc_self_cgroup,
                                                 const std::filesystem::path& cgroup_root);

// CPUs as quota / period (v2 cpu.max "200000 100000" = 2.0, v1 cpu.cfs_quota_us /
// cpu.cfs_period_us); 0 = unlimited ("max", or a v1 quota of -1).
std::optional<double> cgroup_cpu_limit(std::string_view proc_self_cgroup,
                                       const std::filesystem::path& cgroup_root);

// The CPUs this process may use: the fewest of the host's cores, its affinity mask and its
// cgroup CPU limit rounded up; at least 1. Reads the real /proc and /sys/fs/cgroup.
unsigned available_cpus();

// The whole text of a file, nullopt when it cannot be read.
std::optional<std::string> read_text_file(const std::filesystem::path& path);

}  // namespace starling::base
