#pragma once

// Logging is spdlog's default logger; this header only centralises set-up so every binary
// (daemon, tests, bench) formats lines the same way.

#include <spdlog/spdlog.h>

#include <cstdint>
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

// How each line is written (starling.log_format):
//   text: 2026-12-04T15:24:07.123+0000 info  [4242] message
//   json: one object per line, for log shippers (Loki, Elasticsearch, Cloud Logging):
//         {"time":"2026-12-04T15:24:07.123Z","level":"info","thread":4242,"message":"..."}
//         Times in UTC; the message escaped as JSON, any byte that is not valid UTF-8 (a client
//         id, a topic) replaced by U+FFFD so the line always parses.
enum class log_format : std::uint8_t { text, json };
void set_log_format(log_format format);

// Appends `text` to `out` as the inside of a JSON string (no quotes), as set_log_format's json
// lines do. Exposed for tests.
void append_json_escaped(std::string_view text, std::string& out);

}  // namespace starling::base
