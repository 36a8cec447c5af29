// Throughput probe of the embedded message log (not a test; run by hand, Release build):
//   embedded_log_throughput [records] [none|interval|always] [value_bytes]
// One thread produces `records` records (16 partitions, 1000 keys) with at most 32768 in
// flight and waits for every ack; then one consumer reads them all back from offset 0.
// Prints records/s for both. The README quotes its output.

#include "adapters/embedded/message_log.h"

#include "contract/device_inbox/contract_support.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <semaphore>
#include <string>

using namespace starling;
using namespace starling::adapters::embedded;

int main(int argc, char** argv) {
    const long records = argc > 1 ? std::atol(argv[1]) : 1000000;
    const auto policy = parse_fsync_policy(argc > 2 ? argv[2] : "interval");
    const std::size_t value_bytes = argc > 3 ? static_cast<std::size_t>(std::atol(argv[3])) : 100;
    if (!policy || records <= 0) {
        std::fprintf(stderr, "usage: %s [records] [none|interval|always] [value_bytes]\n", argv[0]);
        return 2;
    }
    starling::testing::temp_dir dir;
    embedded_log_config config;
    config.data_dir = dir.path();
    config.fsync = *policy;
    auto opened = embedded_message_log::open(config);
    if (!opened) {
        std::fprintf(stderr, "open: %s\n", opened.error().message().c_str());
        return 1;
    }
    auto& log = **opened;
    if (!log.create_topic({.name = "bench", .partitions = 16})) {
        return 1;
    }

    std::counting_semaphore<32768> window(32768);
    std::atomic<long> failed{0};
    const std::string value(value_bytes, 'x');
    const auto start = std::chrono::steady_clock::now();
    for (long i = 0; i < records; ++i) {
        window.acquire();
        log.produce("bench", "key-" + std::to_string(i % 1000), value, {},
                    [&](result<produce_ack> ack) {
                        if (!ack) {
                            failed.fetch_add(1, std::memory_order_relaxed);
                        }
                        window.release();
                    });
    }
    if (!log.flush(std::chrono::minutes(10))) {
        return 1;
    }
    const double produce_s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

    consumer_spec spec;
    for (std::int32_t p = 0; p < 16; ++p) {
        spec.assignment.push_back({"bench", p});
    }
    auto consumer = log.create_consumer(spec);
    if (!consumer) {
        return 1;
    }
    long read = 0;
    const auto read_start = std::chrono::steady_clock::now();
    while (read < records - failed.load()) {
        auto polled = (*consumer)->poll(std::chrono::seconds(5));
        if (!polled || polled->empty()) {
            std::fprintf(stderr, "poll stalled at %ld\n", read);
            return 1;
        }
        read += static_cast<long>(polled->size());
    }
    const double read_s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - read_start).count();

    std::printf("fsync=%s records=%ld value=%zuB failed=%ld\n", argc > 2 ? argv[2] : "interval",
                records, value_bytes, failed.load());
    std::printf("produce->ack: %.0f records/s (%.2f s)\n", static_cast<double>(records) / produce_s,
                produce_s);
    std::printf("consume:      %.0f records/s (%.2f s)\n", static_cast<double>(read) / read_s,
                read_s);
    return failed.load() == 0 ? 0 : 1;
}
