#pragma once

// Loading config/starling.yml. Every value may be written as "${ENV_NAME:default}" (the
// environment variable wins when set, even to an empty string), "${ENV_NAME}" (the variable is
// required) or a plain value; placeholders may also sit inside a longer string. A key missing
// from the file behaves as if the file held the built-in "${ENV_NAME:default}" for it, so an
// operator's environment still applies to a trimmed-down file.
//
// Loading runs once at start-up, so it reports problems by throwing config_error (docs/style.md
// rule 5 allows exceptions there). Unknown keys only produce a warning, so a file written for
// a newer version, or a TBMQ file, still loads.

#include "config/broker_config.h"

#include <filesystem>
#include <functional>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace starling::config {

// A configuration problem. what() names the key, the value and why, e.g.
//   listener.tcp.bind_port: "70000" is not a valid port (1..65535, or 0 for any)
// key() is that key alone ("" when the file itself cannot be read or parsed).
class config_error : public std::runtime_error {
  public:
    config_error(std::string key, const std::string& message)
        : std::runtime_error(message), key_(std::move(key)) {}

    const std::string& key() const noexcept { return key_; }

  private:
    std::string key_;
};

// Reads one environment variable; nullopt when it is not set.
using env_lookup = std::function<std::optional<std::string>(std::string_view name)>;

// The process environment (getenv). Not safe against a concurrent setenv; loading happens at
// start-up, before any other thread exists.
std::optional<std::string> process_environment(std::string_view name);

struct load_options {
    env_lookup env = process_environment;
    // Every warning (unknown keys) is logged and, when this is set, also appended here.
    std::vector<std::string>* warnings = nullptr;
};

// Loads and validates the file. Throws config_error on the first problem found.
broker_config load_config(const std::filesystem::path& file);
broker_config load_config(const std::filesystem::path& file, const load_options& options);

// The same from YAML text; source_name only appears in parse-error messages.
broker_config parse_config(std::string_view yaml_text, const load_options& options,
                           std::string_view source_name = "<string>");

// Every default applied, the environment ignored.
broker_config default_config();

// One known key: its YAML path, the environment variable that overrides it and its default
// as text, exactly as config/starling.yml writes it ("${env:default_value}").
struct key_info {
    std::string_view key;
    std::string_view env;
    std::string_view default_value;
};

// All known keys, in file order.
std::span<const key_info> known_keys();

}  // namespace starling::config
