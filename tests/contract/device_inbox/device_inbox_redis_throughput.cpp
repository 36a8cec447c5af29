// Measures the Redis device inbox's append throughput, the shape of the msg.persisted
// consumer's writes: batches of 100 messages with 100-byte records over 1000 clients. Not a
// test (timing on a shared machine proves nothing); run it by hand against a Redis:
//   device_inbox_redis_throughput [host:port=127.0.0.1:6379] [batches=2000] [connections=2]
// Prints messages/s with 64 calls kept in flight and with one call at a time. Its keys go
// under a unique prefix and are deleted at the end.

#include "contract/device_inbox/device_inbox_redis_factory.h"

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>

namespace {

using starling::device_inbox;
using starling::inbox_entry;

std::vector<inbox_entry> make_batch(int n) {
    std::vector<inbox_entry> batch;
    batch.reserve(static_cast<std::size_t>(n));
    for (int i = 0; i < n; ++i) {
        batch.push_back({std::string(100, static_cast<char>('a' + i % 26)), 0});
    }
    return batch;
}

double run(device_inbox& inbox, int batches, int in_flight) {
    std::mutex mutex;
    std::condition_variable cv;
    int outstanding = 0;
    int failures = 0;
    const auto start = std::chrono::steady_clock::now();
    for (int b = 0; b < batches; ++b) {
        {
            std::unique_lock lock(mutex);
            cv.wait(lock, [&] { return outstanding < in_flight; });
            ++outstanding;
        }
        inbox.append("client-" + std::to_string(b % 1000), make_batch(100),
                     [&](starling::result<device_inbox::append_result> r) {
                         std::lock_guard lock(mutex);
                         --outstanding;
                         failures += r ? 0 : 1;
                         cv.notify_all();
                     });
    }
    std::unique_lock lock(mutex);
    cv.wait(lock, [&] { return outstanding == 0; });
    const std::chrono::duration<double> elapsed = std::chrono::steady_clock::now() - start;
    if (failures != 0) {
        std::fprintf(stderr, "%d appends failed\n", failures);
    }
    return batches * 100 / elapsed.count();
}

}  // namespace

int main(int argc, char** argv) {
    const std::string address_text = argc > 1 ? argv[1] : "127.0.0.1:6379";
    const int batches = argc > 2 ? std::atoi(argv[2]) : 2000;
    const int connections = argc > 3 ? std::atoi(argv[3]) : 2;
    ::setenv("STARLING_TEST_REDIS", address_text.c_str(), 1);
    const auto address = starling::testing::test_redis_address();
    if (!address || batches <= 0 || connections <= 0) {
        std::fprintf(stderr, "usage: %s [host:port] [batches] [connections]\n", argv[0]);
        return 2;
    }
    const auto prefix = starling::testing::unique_key_prefix();
    auto config = starling::testing::test_inbox_config(*address, {}, prefix);
    config.connections = static_cast<std::size_t>(connections);
    const auto& clk = starling::system_clock::instance();
    {
        auto inbox = starling::adapters::redis::open_redis_device_inbox(config, clk);
        if (!inbox) {
            std::fprintf(stderr, "open: %s\n", inbox.error().message().c_str());
            return 1;
        }
        std::printf("in flight 64: %.0f messages/s\n", run(**inbox, batches, 64));
        std::printf("one at a time: %.0f messages/s\n", run(**inbox, batches / 4, 1));
    }
    starling::testing::delete_keys_with_prefix(*address, prefix);
    return 0;
}
