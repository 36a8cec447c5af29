// Readers checking while writers change the list: run under TSan by the "concurrency" preset.
// No sleeps: threads meet on atomics, and each test asserts on what every reader observed.

#include "auth/blocked_clients.h"

#include <gtest/gtest.h>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

namespace starling::auth {
namespace {

constexpr std::int64_t now = 1'700'000'000'000;
constexpr int readers = 4;

TEST(blocked_clients_concurrency, readers_see_whole_snapshots_while_a_writer_changes_them) {
    blocked_clients b;
    ASSERT_TRUE(b.add({block_type::client_id, "always", 0, "permanent"}));
    std::atomic<int> started{0};
    std::atomic<bool> done{false};
    std::atomic<long> checks{0};
    std::atomic<long> flip_seen_blocked{0};
    std::atomic<int> violations{0};

    std::vector<std::thread> threads;
    for (int r = 0; r < readers; ++r) {
        threads.emplace_back([&] {
            started.fetch_add(1);
            long local_checks = 0;
            while (!done.load(std::memory_order_acquire)) {
                if (b.check("always", std::nullopt, "10.0.0.1", now) != "permanent") {
                    violations.fetch_add(1);
                }
                if (b.check("never", "nobody", "10.9.9.9", now).has_value()) {
                    violations.fetch_add(1);
                }
                // The writer toggles a regex rule: either absent, or whole with its reason.
                auto flip = b.check("flip-1", std::nullopt, "10.0.0.1", now);
                if (flip) {
                    flip_seen_blocked.fetch_add(1);
                    if (*flip != "flip rule") {
                        violations.fetch_add(1);
                    }
                }
                const auto listed = b.list(now);
                if (listed.empty() || listed.front().value != "always") {
                    violations.fetch_add(1);
                }
                ++local_checks;
            }
            checks.fetch_add(local_checks);
        });
    }

    while (started.load() < readers) {
        std::this_thread::yield();
    }
    constexpr int rounds = 500;
    for (int i = 0; i < rounds; ++i) {
        const std::string id = "toggle-" + std::to_string(i);
        ASSERT_TRUE(b.add({block_type::client_id, id, now + 1}));
        ASSERT_TRUE(b.add({block_type::regex, "flip-.*", 0, "flip rule"}));
        ASSERT_TRUE(b.add({block_type::ip_address, "10.0.0." + std::to_string(i % 50 + 2)}));
        ASSERT_TRUE(b.remove(block_type::regex, "flip-.*"));
        if (i % 50 == 49) {
            EXPECT_EQ(b.purge_expired(now + 1), 50U);  // the last 50 toggles expire
        }
    }
    done.store(true, std::memory_order_release);
    for (auto& t : threads) {
        t.join();
    }
    EXPECT_EQ(violations.load(), 0);
    EXPECT_GT(checks.load(), 0);
    EXPECT_FALSE(b.check("flip-1", std::nullopt, "10.0.0.1", now));
    EXPECT_EQ(b.size(), 1U + 50U);  // "always" and the 50 distinct IPs
}

TEST(blocked_clients_concurrency, concurrent_writers_lose_no_update) {
    blocked_clients b;
    constexpr int writers = 4;
    constexpr int per_writer = 500;
    std::atomic<int> started{0};
    std::vector<std::thread> threads;
    for (int w = 0; w < writers; ++w) {
        threads.emplace_back([&, w] {
            started.fetch_add(1);
            while (started.load() < writers) {
                std::this_thread::yield();
            }
            for (int i = 0; i < per_writer; ++i) {
                const block_type type = i % 2 == 0 ? block_type::client_id : block_type::username;
                (void)b.add({type, "w" + std::to_string(w) + "-" + std::to_string(i)});
            }
        });
    }
    for (auto& t : threads) {
        t.join();
    }
    EXPECT_EQ(b.size(), static_cast<std::size_t>(writers * per_writer));
    EXPECT_TRUE(b.check("w3-498", std::nullopt, "", now));
    EXPECT_TRUE(b.check("x", "w2-499", "", now));
}

}  // namespace
}  // namespace starling::auth
