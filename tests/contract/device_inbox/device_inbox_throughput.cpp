// Measures the embedded device inbox's append throughput: batches of 100 messages with
// 100-byte records, spread over many clients, the shape of the msg.persisted consumer's
// writes. Not a test (timing on a shared machine proves nothing); run it by hand:
//   device_inbox_throughput [batches=2000] [in_flight=64] [fsync=0|1] [data_dir]
// Prints messages/s for calls kept in flight (pipelined) and for one call at a time.

#include "adapters/embedded/device_inbox.h"

#include "contract/device_inbox/contract_support.h"

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>

namespace {

using starling::device_inbox;
using starling::inbox_entry;
using starling::adapters::embedded::embedded_device_inbox;

std::vector<inbox_entry> make_batch(int n) {
    std::vector<inbox_entry> batch;
    batch.reserve(static_cast<std::size_t>(n));
    for (int i = 0; i < n; ++i) {
        batch.push_back({std::string(100, static_cast<char>('a' + i % 26)), 0});
    }
    return batch;
}

double run(device_inbox& inbox, int batches, int in_flight, const std::string& tag) {
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
        inbox.append(tag + std::to_string(b % 1000), make_batch(100),
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
    const int batches = argc > 1 ? std::atoi(argv[1]) : 2000;
    const int in_flight = argc > 2 ? std::atoi(argv[2]) : 64;
    starling::testing::temp_dir tmp;
    const bool fsync = argc > 3 && std::atoi(argv[3]) != 0;
    const std::filesystem::path dir = argc > 4 ? std::filesystem::path(argv[4]) : tmp.path();
    auto inbox = embedded_device_inbox::open({.data_dir = dir, .fsync_commits = fsync},
                                             starling::system_clock::instance());
    if (!inbox) {
        std::fprintf(stderr, "open: %s\n", inbox.error().message().c_str());
        return 1;
    }
    const double pipelined = run(**inbox, batches, in_flight, "p");
    const double sequential = run(**inbox, batches, 1, "s");
    std::printf(
        "batches=%d x 100 msgs x 100 B, fsync=%d: pipelined(%d in flight) %.0f msg/s, "
        "one at a time %.0f msg/s\n",
        batches, fsync ? 1 : 0, in_flight, pipelined, sequential);
    return 0;
}
