#include "config/cli.h"

#include <fmt/format.h>

#include <vector>

#ifndef STARLING_VERSION
#define STARLING_VERSION "unknown"
#endif

namespace starling::config {

cli_parse_result parse_cli(std::span<const std::string_view> args) {
    cli_parse_result result;
    auto& options = result.options;
    for (std::size_t i = 0; i < args.size(); ++i) {
        const auto arg = args[i];
        if (arg == "--config" || arg == "-c") {
            if (i + 1 == args.size() || args[i + 1].empty()) {
                result.error = fmt::format("{} needs a file name", arg);
                return result;
            }
            options.config_file = std::string(args[++i]);
        } else if (arg.starts_with("--config=")) {
            const auto file = arg.substr(std::string_view("--config=").size());
            if (file.empty()) {
                result.error = "--config needs a file name";
                return result;
            }
            options.config_file = std::string(file);
        } else if (arg == "--validate-config") {
            options.validate_config = true;
        } else if (arg == "--help" || arg == "-h") {
            options.help = true;
        } else if (arg == "--version") {
            options.version = true;
        } else {
            result.error = fmt::format("unknown argument '{}' (see --help)", arg);
            return result;
        }
    }
    return result;
}

cli_parse_result parse_cli(int argc, const char* const* argv) {
    std::vector<std::string_view> args;
    for (int i = 1; i < argc; ++i) {
        args.emplace_back(argv[i]);
    }
    return parse_cli(args);
}

std::string cli_help_text(std::string_view program_name, std::string_view description) {
    return fmt::format(
        "Usage: {0} [--config FILE] [--validate-config] [--help] [--version]\n"
        "\n"
        "{2}\n"
        "\n"
        "Options:\n"
        "  -c, --config FILE     configuration file (default: {1})\n"
        "      --validate-config load and check the configuration, print any problem, exit\n"
        "                        with status 0 when it is valid\n"
        "  -h, --help            print this help and exit\n"
        "      --version         print the version and exit\n"
        "\n"
        "Every configuration value can be overridden by its environment variable, named in\n"
        "the file as \"${{ENV_NAME:default}}\" (see docs/configuration.md), for example:\n"
        "  LISTENER_TCP_BIND_PORT=1884 {0}\n",
        program_name, default_config_path, description);
}

std::string_view version() { return STARLING_VERSION; }

std::string cli_version_text(std::string_view program_name) {
    return fmt::format("{} {}\n", program_name, STARLING_VERSION);
}

}  // namespace starling::config
