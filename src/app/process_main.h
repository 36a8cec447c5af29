#pragma once

// process_main: what starlingd's and starling-ie's main() share — the command line, the
// configuration (a bad value exits 2 naming the key), logging, and the signals: SIGTERM and
// SIGINT are blocked in every thread and waited for here, then the process stops cleanly.
// `Process` has a constructor from broker_config, start() (throws what could not start, or
// start_interrupted) and stop().

#include "app/security.h"
#include "app/startup.h"
#include "base/log.h"
#include "config/cli.h"
#include "config/loader.h"

#include <signal.h>
#include <spdlog/spdlog.h>

#include <exception>
#include <iostream>
#include <string_view>

namespace starling::app {

template <class Process>
int process_main(int argc, char** argv, const char* name, std::string_view description) {
    auto cli = config::parse_cli(argc, argv);
    if (!cli.ok()) {
        std::cerr << cli.error << "\n" << config::cli_help_text(name, description);
        return 2;
    }
    if (cli.options.help) {
        std::cout << config::cli_help_text(name, description);
        return 0;
    }
    if (cli.options.version) {
        std::cout << config::cli_version_text(name);
        return 0;
    }
    base::init_logging("info");
    config::broker_config cfg;
    try {
        cfg = config::load_config(cli.options.config_file);
    } catch (const config::config_error& e) {
        std::cerr << name << ": configuration error: " << e.what() << "\n";
        return 2;
    } catch (const std::exception& e) {
        std::cerr << name << ": cannot load configuration " << cli.options.config_file << ": "
                  << e.what() << "\n";
        return 2;
    }
    if (auto why = provider_config_error(cfg)) {
        std::cerr << name << ": configuration error: " << *why << "\n";
        return 2;
    }
    if (cli.options.validate_config) {
        std::cout << "configuration " << cli.options.config_file.string() << " is valid\n";
        return 0;
    }
    base::set_log_level(cfg.starling.log_level);
    base::set_log_format(cfg.starling.log_format == "json" ? base::log_format::json
                                                           : base::log_format::text);

    // Signals are waited for below: block them in every thread first.
    sigset_t signals;
    sigemptyset(&signals);
    sigaddset(&signals, SIGTERM);
    sigaddset(&signals, SIGINT);
    pthread_sigmask(SIG_BLOCK, &signals, nullptr);
    ::signal(SIGPIPE, SIG_IGN);

    try {
        Process process(cfg);
        try {
            process.start();
        } catch (const start_interrupted& e) {
            // Told to stop while waiting for a store: nothing was serving, nothing to drain.
            spdlog::info("{}: stopping before start-up finished", e.what());
            process.stop();
            spdlog::info("stopped");
            spdlog::shutdown();
            return 0;
        }
        int sig = 0;
        sigwait(&signals, &sig);
        spdlog::info("received {}, shutting down", sig == SIGTERM ? "SIGTERM" : "SIGINT");
        process.stop();
    } catch (const std::exception& e) {
        spdlog::critical("{}: {}", name, e.what());
        spdlog::shutdown();
        return 1;
    }
    spdlog::info("stopped");
    spdlog::shutdown();
    return 0;
}

}  // namespace starling::app
