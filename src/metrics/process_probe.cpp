#include "metrics/process_probe.h"

#include "base/cgroup.h"
#include "base/text.h"

#include <prometheus/counter.h>
#include <prometheus/gauge.h>
#include <prometheus/registry.h>
#include <sys/resource.h>
#include <unistd.h>

#include <filesystem>
#include <vector>

namespace starling::metrics {
namespace {

std::size_t count_open_fds() {
    std::error_code ec;
    std::size_t count = 0;
    for (std::filesystem::directory_iterator it("/proc/self/fd", ec), end; !ec && it != end;
         it.increment(ec)) {
        ++count;
    }
    // The iterator's own descriptor is in the listing; it is gone once the loop ends.
    return count > 0 ? count - 1 : 0;
}

prometheus::Gauge& gauge(prometheus::Registry& registry, const std::string& name,
                         const std::string& help) {
    return prometheus::BuildGauge().Name(name).Help(help).Register(registry).Add({});
}

}  // namespace

std::optional<proc_stat> parse_proc_stat(std::string_view line) {
    const auto close = line.rfind(')');
    if (close == std::string_view::npos) {
        return std::nullopt;
    }
    // Fields after the name, numbered as proc(5) numbers them: state is field 3.
    std::vector<std::string_view> fields;
    auto rest = line.substr(close + 1);
    std::size_t pos = 0;
    while (pos < rest.size()) {
        const auto start = rest.find_first_not_of(" \n", pos);
        if (start == std::string_view::npos) {
            break;
        }
        auto end = rest.find_first_of(" \n", start);
        if (end == std::string_view::npos) {
            end = rest.size();
        }
        fields.push_back(rest.substr(start, end - start));
        pos = end;
    }
    const auto field = [&](std::size_t number) -> std::optional<std::uint64_t> {
        const auto index = number - 3;
        return index < fields.size() ? base::parse_number<std::uint64_t>(fields[index])
                                     : std::nullopt;
    };
    const auto utime = field(14);
    const auto stime = field(15);
    const auto start = field(22);
    const auto vsize = field(23);
    const auto rss = field(24);
    if (!utime || !stime || !start || !vsize || !rss) {
        return std::nullopt;
    }
    return proc_stat{*utime, *stime, *start, *vsize, *rss};
}

std::optional<std::uint64_t> parse_boot_time(std::string_view proc_stat_file) {
    std::size_t start = 0;
    while (start < proc_stat_file.size()) {
        auto end = proc_stat_file.find('\n', start);
        if (end == std::string_view::npos) {
            end = proc_stat_file.size();
        }
        const auto line = proc_stat_file.substr(start, end - start);
        if (line.starts_with("btime ")) {
            return base::parse_number<std::uint64_t>(base::trim(line.substr(6)));
        }
        start = end + 1;
    }
    return std::nullopt;
}

process_probe::process_probe(prometheus::Registry& registry)
    : cpu_seconds_(prometheus::BuildCounter()
                       .Name("process_cpu_seconds_total")
                       .Help("Total user and system CPU time spent in seconds")
                       .Register(registry)
                       .Add({})),
      resident_bytes_(
          gauge(registry, "process_resident_memory_bytes", "Resident memory size in bytes")),
      virtual_bytes_(
          gauge(registry, "process_virtual_memory_bytes", "Virtual memory size in bytes")),
      open_fds_(gauge(registry, "process_open_fds", "Number of open file descriptors")),
      max_fds_(gauge(registry, "process_max_fds", "Maximum number of open file descriptors")),
      start_time_(gauge(registry, "process_start_time_seconds",
                        "Start time of the process since unix epoch in seconds")),
      memory_limit_(gauge(registry, "memoryLimit_bytes",
                          "Memory limit of the process's cgroup (container limit); 0 = none")),
      build_info_(prometheus::BuildGauge()
                      .Name("build_info")
                      .Help("Always 1; the running Starling version is in the version label")
                      .Register(registry)) {}

void process_probe::set_version(std::string_view version) {
    std::lock_guard lock(version_mutex_);
    if (build_info_series_ != nullptr) {
        build_info_.Remove(build_info_series_);
    }
    build_info_series_ = &build_info_.Add({{"version", std::string(version)}});
    build_info_series_->Set(1);
}

void process_probe::refresh() {
    const auto ticks = static_cast<double>(::sysconf(_SC_CLK_TCK));
    const auto page = static_cast<double>(::sysconf(_SC_PAGESIZE));
    if (const auto text = base::read_text_file("/proc/self/stat"); text && ticks > 0) {
        if (const auto stat = parse_proc_stat(*text)) {
            const auto cpu = static_cast<double>(stat->utime_ticks + stat->stime_ticks) / ticks;
            if (cpu > cpu_seconds_exported_) {
                cpu_seconds_.Increment(cpu - cpu_seconds_exported_);
                cpu_seconds_exported_ = cpu;
            }
            resident_bytes_.Set(static_cast<double>(stat->resident_pages) * page);
            virtual_bytes_.Set(static_cast<double>(stat->virtual_bytes));
            if (start_time_.Value() == 0) {
                const auto boot = base::read_text_file("/proc/stat");
                if (const auto btime = boot ? parse_boot_time(*boot) : std::nullopt) {
                    start_time_.Set(static_cast<double>(*btime) +
                                    static_cast<double>(stat->start_ticks) / ticks);
                }
            }
        }
    }
    open_fds_.Set(static_cast<double>(count_open_fds()));
    rlimit files{};
    if (::getrlimit(RLIMIT_NOFILE, &files) == 0) {
        max_fds_.Set(files.rlim_cur == RLIM_INFINITY ? 0 : static_cast<double>(files.rlim_cur));
    }
    if (const auto cgroup = base::read_text_file("/proc/self/cgroup")) {
        if (const auto limit = base::cgroup_memory_limit(*cgroup, "/sys/fs/cgroup")) {
            memory_limit_.Set(static_cast<double>(*limit));
        }
    }
}

}  // namespace starling::metrics
