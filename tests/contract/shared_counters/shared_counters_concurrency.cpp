#include "contract/shared_counters/shared_counters_contract.h"

#include <atomic>
#include <thread>

namespace starling::testing {

namespace {

constexpr int threads = 8;

template <class Body>
void run_threads(Body body) {
    std::vector<std::thread> workers;
    for (int t = 0; t < threads; ++t) {
        workers.emplace_back(body, t);
    }
    for (auto& w : workers) {
        w.join();
    }
}

}  // namespace

// The clock stands still, so the bucket holds exactly its capacity: however the consumers
// interleave, they are granted that much in total, never a token more.
TEST_P(shared_counters_concurrency, concurrent_consumers_never_over_grant) {
    const std::vector<bandwidth> limits{{1000, 3600}, {5000, 86400}};
    std::atomic<std::int64_t> total{0};
    std::atomic<int> failures{0};
    run_threads([&](int) {
        for (int i = 0; i < 400; ++i) {
            auto r = consume("quota", limits, 1 + i % 3);
            if (r) {
                total += *r;
            } else {
                ++failures;
            }
        }
    });
    EXPECT_EQ(failures.load(), 0);
    EXPECT_EQ(total.load(), 1000);
    EXPECT_EQ(granted("quota", limits, 1), 0);
}

// Consume-and-refund from many threads conserves tokens: what is left equals capacity minus
// what was granted plus what was refunded.
TEST_P(shared_counters_concurrency, concurrent_consume_and_refund_conserve_tokens) {
    const std::vector<bandwidth> limits{{100000, 3600}};
    std::atomic<std::int64_t> net{0};
    run_threads([&](int) {
        for (int i = 0; i < 300; ++i) {
            auto g = consume("lease", limits, 10);
            if (!g) {
                continue;
            }
            const std::int64_t back = *g / 2;
            if (auto r = refund("lease", limits, back); r) {
                net += *g - back;
            } else {
                net += *g;
            }
        }
    });
    EXPECT_EQ(granted("lease", limits, 1000000), 100000 - net.load());
}

TEST_P(shared_counters_concurrency, concurrent_adds_sum_up) {
    run_threads([&](int t) {
        for (int i = 0; i < 500; ++i) {
            (void)add("sessions", t % 2 == 0 ? 2 : -1);
        }
    });
    auto value = get("sessions");
    ASSERT_TRUE(value);
    EXPECT_EQ(*value, 4 * 500 * 2 - 4 * 500);
}

}  // namespace starling::testing
