#include "bench/proc_stats.h"

#include <sys/resource.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <charconv>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <thread>

namespace starling::bench {

namespace {

std::optional<std::string> read_file(const std::string& path) {
    std::ifstream in(path);
    if (!in) {
        return std::nullopt;
    }
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
}

std::optional<std::uint64_t> to_u64(std::string_view text) {
    std::uint64_t value = 0;
    auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (ec != std::errc{} || ptr == text.data()) {
        return std::nullopt;
    }
    return value;
}

std::string_view trim(std::string_view text) {
    while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) {
        text.remove_prefix(1);
    }
    while (!text.empty() && (text.back() == ' ' || text.back() == '\t' || text.back() == '\n')) {
        text.remove_suffix(1);
    }
    return text;
}

}  // namespace

std::optional<std::uint64_t> parse_stat_cpu_ticks(std::string_view stat_text) {
    const auto close = stat_text.rfind(')');
    if (close == std::string_view::npos) {
        return std::nullopt;
    }
    // After ")": field 3 (state) is the first token; utime is field 14, stime field 15.
    std::string_view rest = stat_text.substr(close + 1);
    int field = 2;
    std::optional<std::uint64_t> utime;
    while (!rest.empty()) {
        while (!rest.empty() && rest.front() == ' ') {
            rest.remove_prefix(1);
        }
        if (rest.empty()) {
            break;
        }
        const auto end = rest.find(' ');
        const std::string_view token = rest.substr(0, end);
        ++field;
        if (field == 14) {
            utime = to_u64(token);
        } else if (field == 15) {
            auto stime = to_u64(token);
            if (!utime || !stime) {
                return std::nullopt;
            }
            return *utime + *stime;
        }
        if (end == std::string_view::npos) {
            break;
        }
        rest.remove_prefix(end);
    }
    return std::nullopt;
}

std::optional<process_memory> parse_status_memory(std::string_view status_text) {
    process_memory memory;
    bool rss = false;
    bool peak = false;
    while (!status_text.empty()) {
        const auto eol = status_text.find('\n');
        std::string_view line = status_text.substr(0, eol);
        status_text.remove_prefix(eol == std::string_view::npos ? status_text.size() : eol + 1);
        auto value_of = [&](std::string_view key) -> std::optional<std::uint64_t> {
            if (!line.starts_with(key)) {
                return std::nullopt;
            }
            std::string_view value = trim(line.substr(key.size()));
            if (value.ends_with("kB")) {
                value = trim(value.substr(0, value.size() - 2));
            }
            return to_u64(value);
        };
        if (auto v = value_of("VmRSS:")) {
            memory.rss_kb = *v;
            rss = true;
        } else if (auto w = value_of("VmHWM:")) {
            memory.peak_kb = *w;
            peak = true;
        }
    }
    if (!rss || !peak) {
        return std::nullopt;
    }
    return memory;
}

std::string parse_cpu_model(std::string_view cpuinfo_text) {
    while (!cpuinfo_text.empty()) {
        const auto eol = cpuinfo_text.find('\n');
        std::string_view line = cpuinfo_text.substr(0, eol);
        cpuinfo_text.remove_prefix(eol == std::string_view::npos ? cpuinfo_text.size() : eol + 1);
        if (line.starts_with("model name")) {
            const auto colon = line.find(':');
            if (colon != std::string_view::npos) {
                return std::string(trim(line.substr(colon + 1)));
            }
        }
    }
    return "unknown";
}

std::optional<double> read_cpu_seconds(pid_t pid) {
    auto text = read_file("/proc/" + std::to_string(pid) + "/stat");
    if (!text) {
        return std::nullopt;
    }
    auto ticks = parse_stat_cpu_ticks(*text);
    if (!ticks) {
        return std::nullopt;
    }
    return static_cast<double>(*ticks) / static_cast<double>(::sysconf(_SC_CLK_TCK));
}

std::optional<process_memory> read_memory(pid_t pid) {
    auto text = read_file("/proc/" + std::to_string(pid) + "/status");
    if (!text) {
        return std::nullopt;
    }
    return parse_status_memory(*text);
}

std::optional<double> read_load_average() {
    auto text = read_file("/proc/loadavg");
    if (!text) {
        return std::nullopt;
    }
    char* end = nullptr;
    const double value = std::strtod(text->c_str(), &end);
    if (end == text->c_str()) {
        return std::nullopt;
    }
    return value;
}

double self_cpu_seconds() {
    rusage usage{};
    ::getrusage(RUSAGE_SELF, &usage);
    auto seconds = [](const timeval& tv) {
        return static_cast<double>(tv.tv_sec) + static_cast<double>(tv.tv_usec) / 1e6;
    };
    return seconds(usage.ru_utime) + seconds(usage.ru_stime);
}

machine_info read_machine_info() {
    machine_info info;
    const long online = ::sysconf(_SC_NPROCESSORS_ONLN);
    info.cores = online > 0 ? static_cast<unsigned>(online) : std::thread::hardware_concurrency();
    auto cpuinfo = read_file("/proc/cpuinfo");
    info.cpu_model = cpuinfo ? parse_cpu_model(*cpuinfo) : "unknown";
    utsname name{};
    if (::uname(&name) == 0) {
        info.kernel = std::string(name.sysname) + " " + name.release;
    }
    return info;
}

}  // namespace starling::bench
