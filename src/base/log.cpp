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

void init_logging(std::string_view level) {
    auto logger = spdlog::stderr_color_mt("starling");
    spdlog::set_default_logger(logger);
    spdlog::set_pattern("%Y-%m-%dT%H:%M:%S.%e%z %^%-5l%$ [%t] %v");
    set_log_level(level);
}

}  // namespace starling::base
