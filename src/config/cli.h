#pragma once

// The daemon's command line:
//   starlingd [--config FILE] [--validate-config] [--help] [--version]
// Parsing is pure (no I/O, no exit) so it can be unit-tested; main() decides what to print.

#include <filesystem>
#include <span>
#include <string>
#include <string_view>

namespace starling::config {

inline constexpr std::string_view default_config_path = "config/starling.yml";

struct cli_options {
    std::filesystem::path config_file{default_config_path};
    bool validate_config = false;  // load and check the configuration, then exit
    bool help = false;
    bool version = false;
};

struct cli_parse_result {
    cli_options options;
    std::string error;  // empty on success; otherwise a one-line message for stderr

    bool ok() const { return error.empty(); }
};

// args excludes the program name (argv[0]).
cli_parse_result parse_cli(std::span<const std::string_view> args);
cli_parse_result parse_cli(int argc, const char* const* argv);

// The --help text.
std::string cli_help_text(std::string_view program_name,
                          std::string_view description = "Starling MQTT broker.");

// The --version text: "<program> <version>".
std::string cli_version_text(std::string_view program_name);

// Starling's version ("0.1.0"), as the build defines it.
std::string_view version();

}  // namespace starling::config
