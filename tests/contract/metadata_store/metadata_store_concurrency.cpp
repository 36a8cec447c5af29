#include "contract/metadata_store/metadata_store_contract.h"

#include <algorithm>
#include <thread>

namespace starling::testing {

// Calls from several threads at once: none is lost, and per-key writes land in call order
// within each thread (the last value a thread wrote is the one read back).
TEST_P(metadata_store_concurrency, concurrent_writers_lose_nothing) {
    constexpr int threads = 4;
    constexpr int per_thread = 25;
    std::vector<std::thread> workers;
    for (int t = 0; t < threads; ++t) {
        workers.emplace_back([&, t] {
            for (int i = 0; i < per_thread; ++i) {
                const std::string n = std::to_string(t) + "-" + std::to_string(i);
                (void)save(credentials("username|" + n));
                (void)put_setting("thread" + std::to_string(t), std::to_string(i));
                (void)save_session({.client_id = "c" + std::to_string(t),
                                    .qos2_packet_ids = {static_cast<std::uint16_t>(i + 1)}});
            }
        });
    }
    for (auto& w : workers) {
        w.join();
    }
    auto rows = list(1000, 0);
    ASSERT_TRUE(rows);
    EXPECT_EQ(rows->size(), static_cast<std::size_t>(threads * per_thread));
    for (int t = 0; t < threads; ++t) {
        auto value = get_setting("thread" + std::to_string(t));
        ASSERT_TRUE(value && value->has_value());
        EXPECT_EQ(**value, std::to_string(per_thread - 1));
        auto session = load_session("c" + std::to_string(t));
        ASSERT_TRUE(session && session->has_value());
        EXPECT_EQ((*session)->qos2_packet_ids, (std::vector<std::uint16_t>{per_thread}));
    }
}

}  // namespace starling::testing
