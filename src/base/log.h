#pragma once

// Logging is spdlog's default logger; this header only centralises set-up so every binary
// (daemon, tests, bench) formats lines the same way.

#include <spdlog/spdlog.h>

#include <string_view>

namespace starling::base {

// Sets the default logger's level from a name (trace, debug, info, warn, error, critical, off).
// Returns false for an unknown name (the caller reports the config key).
bool set_log_level(std::string_view level);

// Installs a stderr logger with Starling's line format. Safe to call more than once.
void init_logging(std::string_view level = "info");

}  // namespace starling::base
