#include "base/log.h"

#include <spdlog/sinks/stdout_color_sinks.h>

namespace starling::base {

bool set_log_level(std::string_view level) {
    auto parsed = spdlog::level::from_str(std::string(level));
    if (parsed == spdlog::level::off && level != "off") {
        return false;
    }
    spdlog::set_level(parsed);
    return true;
}

std::string log_level() {
    // spdlog names warn "warning" and critical "critical"; answer with the names the config and
    // the API accept (from_str takes both spellings of warn).
    const auto level = spdlog::get_level();
    if (level == spdlog::level::warn) {
        return "warn";
    }
    const auto name = spdlog::level::to_string_view(level);
    return std::string(name.data(), name.size());
}

std::vector<std::string> log_level_names() {
    return {"trace", "debug", "info", "warn", "error", "critical", "off"};
}

void init_logging(std::string_view level) {
    auto logger = spdlog::stderr_color_mt("starling");
    spdlog::set_default_logger(logger);
    spdlog::set_pattern("%Y-%m-%dT%H:%M:%S.%e%z %^%-5l%$ [%t] %v");
    set_log_level(level);
}

}  // namespace starling::base
