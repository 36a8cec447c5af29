// starling-bench: the MQTT load generator. See bench/README.md and `starling-bench --help`.

#include "bench/options.h"
#include "bench/report.h"
#include "bench/runner.h"
#include <signal.h>

#include <cstdio>
#include <exception>
#include <string>

int main(int argc, char** argv) {
    using namespace starling::bench;
    ::signal(SIGPIPE, SIG_IGN);
    auto parsed = parse_options(argc, argv);
    if (!parsed.ok()) {
        std::fprintf(stderr, "starling-bench: %s\n\n%s", parsed.error.c_str(),
                     usage_text().c_str());
        return exit_usage;
    }
    const auto& options = parsed.options;
    if (options.mode == bench_mode::help) {
        std::fputs(usage_text().c_str(), stdout);
        return exit_ok;
    }
    if (options.mode == bench_mode::compare) {
        return compare_results(options.files, stdout);
    }
    std::string error;
    auto spec = resolve_scenario(options, error);
    if (!spec) {
        std::fprintf(stderr, "starling-bench: %s\n", error.c_str());
        return exit_usage;
    }
    try {
        runner r(options, std::move(*spec));
        return r.run();
    } catch (const std::exception& e) {
        // Setup only (thread creation, JSON output): the data path does not throw.
        std::fprintf(stderr, "starling-bench: %s\n", e.what());
        return exit_failure;
    }
}
