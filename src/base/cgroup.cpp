#include "base/cgroup.h"

#include "base/text.h"

#include <sched.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <iterator>
#include <thread>

namespace starling::base {
namespace {

// Limits at or above this are the kernel's "no limit" (cgroup v1 prints LONG_MAX rounded down
// to a page).
constexpr std::uint64_t unlimited_v1 = std::uint64_t{1} << 62;

enum class version : std::uint8_t { v1, v2 };

// The process's cgroup path in the v2 hierarchy, or in the v1 hierarchy of `controller`.
std::optional<std::string> cgroup_path(std::string_view proc_self_cgroup, version v,
                                       std::string_view controller) {
    std::size_t start = 0;
    while (start < proc_self_cgroup.size()) {
        auto end = proc_self_cgroup.find('\n', start);
        if (end == std::string_view::npos) {
            end = proc_self_cgroup.size();
        }
        const auto line = proc_self_cgroup.substr(start, end - start);
        start = end + 1;
        // hierarchy-id:controllers:path
        const auto first = line.find(':');
        const auto second = first == std::string_view::npos ? first : line.find(':', first + 1);
        if (second == std::string_view::npos) {
            continue;
        }
        const auto id = line.substr(0, first);
        const auto controllers = line.substr(first + 1, second - first - 1);
        const auto path = line.substr(second + 1);
        if (v == version::v2) {
            if (id == "0" && controllers.empty()) {
                return std::string(path);
            }
            continue;
        }
        for (std::size_t from = 0; from <= controllers.size();) {
            auto comma = controllers.find(',', from);
            if (comma == std::string_view::npos) {
                comma = controllers.size();
            }
            if (controllers.substr(from, comma - from) == controller) {
                return std::string(path);
            }
            from = comma + 1;
        }
    }
    return std::nullopt;
}

std::filesystem::path under(const std::filesystem::path& root, std::string_view path) {
    auto relative = std::filesystem::path(std::string(path)).relative_path();
    return relative.empty() ? root : root / relative;
}

// Reads `file` in the process's own cgroup directory, then at the hierarchy's root.
template <class Parse>
auto read_limit(std::string_view proc_self_cgroup, const std::filesystem::path& hierarchy,
                version v, std::string_view controller, const std::string& file, Parse parse)
    -> decltype(parse(std::string_view{})) {
    const auto path = cgroup_path(proc_self_cgroup, v, controller);
    if (!path) {
        return std::nullopt;
    }
    for (const auto& dir : {under(hierarchy, *path), hierarchy}) {
        if (const auto text = read_text_file(dir / file)) {
            if (auto limit = parse(trim(*text))) {
                return limit;
            }
        }
    }
    return std::nullopt;
}

}  // namespace

std::optional<std::string> read_text_file(const std::filesystem::path& path) {
    std::ifstream in(path);
    if (!in) {
        return std::nullopt;
    }
    return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

std::optional<std::uint64_t> cgroup_memory_limit(std::string_view proc_self_cgroup,
                                                 const std::filesystem::path& cgroup_root) {
    const auto parse = [](std::string_view text) -> std::optional<std::uint64_t> {
        if (text == "max") {
            return 0;
        }
        const auto limit = parse_number<std::uint64_t>(text);
        if (!limit) {
            return std::nullopt;
        }
        return *limit >= unlimited_v1 ? 0 : *limit;
    };
    if (auto limit =
            read_limit(proc_self_cgroup, cgroup_root, version::v2, "", "memory.max", parse)) {
        return limit;
    }
    return read_limit(proc_self_cgroup, cgroup_root / "memory", version::v1, "memory",
                      "memory.limit_in_bytes", parse);
}

std::optional<double> cgroup_cpu_limit(std::string_view proc_self_cgroup,
                                       const std::filesystem::path& cgroup_root) {
    // v2: "<quota> <period>" or "max <period>".
    const auto v2 = [](std::string_view text) -> std::optional<double> {
        const auto space = text.find(' ');
        const auto quota = text.substr(0, space);
        const auto period = parse_number<std::uint64_t>(
            space == std::string_view::npos ? std::string_view{} : trim(text.substr(space + 1)));
        if (quota == "max") {
            return 0.0;
        }
        const auto q = parse_number<std::uint64_t>(quota);
        if (!q || !period || *period == 0) {
            return std::nullopt;
        }
        return static_cast<double>(*q) / static_cast<double>(*period);
    };
    if (auto limit = read_limit(proc_self_cgroup, cgroup_root, version::v2, "", "cpu.max", v2)) {
        return limit;
    }
    // v1: two files; "cpu" may be mounted as "cpu,cpuacct".
    for (const auto* mount : {"cpu", "cpu,cpuacct"}) {
        const auto hierarchy = cgroup_root / mount;
        const auto quota = read_limit(proc_self_cgroup, hierarchy, version::v1, "cpu",
                                      "cpu.cfs_quota_us", parse_number<std::int64_t>);
        const auto period = read_limit(proc_self_cgroup, hierarchy, version::v1, "cpu",
                                       "cpu.cfs_period_us", parse_number<std::int64_t>);
        if (quota && period && *period > 0) {
            return *quota < 0 ? 0.0 : static_cast<double>(*quota) / static_cast<double>(*period);
        }
    }
    return std::nullopt;
}

unsigned available_cpus() {
    unsigned cpus = std::max(1U, std::thread::hardware_concurrency());
    cpu_set_t set;
    CPU_ZERO(&set);
    if (::sched_getaffinity(0, sizeof(set), &set) == 0) {
        cpus = std::min(cpus, static_cast<unsigned>(std::max(1, CPU_COUNT(&set))));
    }
    if (const auto cgroup = read_text_file("/proc/self/cgroup")) {
        if (const auto limit = cgroup_cpu_limit(*cgroup, "/sys/fs/cgroup"); limit && *limit > 0) {
            cpus = std::min(cpus, static_cast<unsigned>(std::ceil(*limit)));
        }
    }
    return std::max(1U, cpus);
}

}  // namespace starling::base
