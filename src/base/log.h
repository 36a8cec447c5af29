#pragma once

// Logging is spdlog's default logger; this header only centralises set-up so every binary
// (daemon, tests, bench) formats lines the same way.

#include <spdlog/spdlog.h>

#include <string>
#include <string_view>
#include <vector>

namespace starling::base {

// Sets the default logger's level from a name (trace, debug, info, warn, error, critical, off).
// Returns false for an unknown name (the caller reports the config key).
bool set_log_level(std::string_view level);

// The default logger's level, by the name set_log_level accepts ("info", "warn", …).
std::string log_level();

// Every name set_log_level accepts, most verbose first.
std::vector<std::string> log_level_names();

// Installs a stderr logger with Starling's line format. Safe to call more than once.
void init_logging(std::string_view level = "info");

}  // namespace starling::base
