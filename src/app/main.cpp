// starlingd: the Starling MQTT broker daemon. The composition root: the only code that names
// adapters (embedded or cluster) and wires ports, listeners and the HTTP surface together.

#include "app/daemon.h"
#include "app/security.h"
#include "base/log.h"
#include "config/cli.h"
#include "config/loader.h"

#include <signal.h>

#include <cstdio>
#include <cstdlib>
#include <iostream>

int main(int argc, char** argv) {
    using namespace starling;
    auto cli = config::parse_cli(argc, argv);
    if (!cli.ok()) {
        std::cerr << cli.error << "\n" << config::cli_help_text("starlingd");
        return 2;
    }
    if (cli.options.help) {
        std::cout << config::cli_help_text("starlingd");
        return 0;
    }
    if (cli.options.version) {
        std::cout << config::cli_version_text("starlingd");
        return 0;
    }
    base::init_logging("info");
    config::broker_config cfg;
    try {
        cfg = config::load_config(cli.options.config_file);
    } catch (const config::config_error& e) {
        std::cerr << "starlingd: configuration error: " << e.what() << "\n";
        return 2;
    } catch (const std::exception& e) {
        std::cerr << "starlingd: cannot load configuration " << cli.options.config_file << ": "
                  << e.what() << "\n";
        return 2;
    }
    if (auto why = app::provider_config_error(cfg)) {
        std::cerr << "starlingd: configuration error: " << *why << "\n";
        return 2;
    }
    if (cli.options.validate_config) {
        std::cout << "configuration " << cli.options.config_file.string() << " is valid\n";
        return 0;
    }
    base::set_log_level(cfg.starling.log_level);
    base::set_log_format(cfg.starling.log_format == "json" ? base::log_format::json
                                                           : base::log_format::text);

    // Signals are handled by the daemon's signal thread: block them in every thread first.
    sigset_t signals;
    sigemptyset(&signals);
    sigaddset(&signals, SIGTERM);
    sigaddset(&signals, SIGINT);
    pthread_sigmask(SIG_BLOCK, &signals, nullptr);
    ::signal(SIGPIPE, SIG_IGN);

    try {
        app::daemon d(cfg);
        try {
            d.start();
        } catch (const app::start_interrupted& e) {
            // Told to stop while waiting for a store: nothing was serving, nothing to drain.
            spdlog::info("{}: stopping before start-up finished", e.what());
            d.stop();
            spdlog::info("stopped");
            spdlog::shutdown();
            return 0;
        }
        int sig = 0;
        sigwait(&signals, &sig);
        spdlog::info("received {}, shutting down", sig == SIGTERM ? "SIGTERM" : "SIGINT");
        d.stop();
    } catch (const std::exception& e) {
        spdlog::critical("starlingd: {}", e.what());
        spdlog::shutdown();
        return 1;
    }
    spdlog::info("stopped");
    spdlog::shutdown();
    return 0;
}
