#include "contract/device_inbox/device_inbox_contract.h"

#include <algorithm>
#include <set>
#include <thread>

namespace starling::testing {

// Appends from several threads to one client: each call is atomic, so the ids handed out are
// exactly 1..N with no duplicates, and the inbox holds every message once.
TEST_P(device_inbox_concurrency, concurrent_appends_to_one_client_get_distinct_ids) {
    constexpr int threads = 4;
    constexpr int batches_per_thread = 25;
    constexpr std::size_t batch_size = 4;
    inbox_ = make({.max_messages = 65535, .default_ttl_ms = 60000});

    std::vector<std::vector<std::uint16_t>> assigned(threads);
    std::vector<std::thread> workers;
    for (int t = 0; t < threads; ++t) {
        workers.emplace_back([&, t] {
            for (int b = 0; b < batches_per_thread; ++b) {
                auto r = append_to(*inbox_, "shared",
                                   entries(batch_size, "t" + std::to_string(t) + "-"));
                if (r) {
                    assigned[t].insert(assigned[t].end(), r->packet_ids.begin(),
                                       r->packet_ids.end());
                }
            }
        });
    }
    for (auto& w : workers) {
        w.join();
    }

    std::set<std::uint16_t> all;
    std::size_t total = 0;
    for (const auto& ids : assigned) {
        // A batch's ids are consecutive: one call is one atomic step of the counter.
        for (std::size_t i = 0; i < ids.size(); i += batch_size) {
            EXPECT_EQ(ids[i + batch_size - 1], ids[i] + batch_size - 1);
        }
        all.insert(ids.begin(), ids.end());
        total += ids.size();
    }
    const std::size_t expected = threads * batches_per_thread * batch_size;
    EXPECT_EQ(total, expected);
    EXPECT_EQ(all.size(), expected);
    EXPECT_EQ(*all.begin(), 1);
    EXPECT_EQ(*all.rbegin(), expected);
    EXPECT_EQ(pending_ids("shared").size(), expected);
}

// Different clients from different threads, mixing every operation: each client's inbox ends
// exactly as its own sequence of calls says.
TEST_P(device_inbox_concurrency, concurrent_clients_do_not_interfere) {
    constexpr int threads = 4;
    std::vector<std::thread> workers;
    for (int t = 0; t < threads; ++t) {
        workers.emplace_back([&, t] {
            const std::string client = "client-" + std::to_string(t);
            for (int round = 0; round < 10; ++round) {
                auto r = append_to(*inbox_, client, entries(3));
                if (!r) {
                    continue;
                }
                const auto id0 = r->packet_ids[0];
                (void)await<status>([&](auto done) { inbox_->remove(client, id0, done); });
                (void)await<status>(
                    [&](auto done) { inbox_->mark_pubrel(client, r->packet_ids[1], done); });
            }
        });
    }
    for (auto& w : workers) {
        w.join();
    }
    for (int t = 0; t < threads; ++t) {
        auto pending = read("client-" + std::to_string(t));
        ASSERT_TRUE(pending);
        ASSERT_EQ(pending->size(), 20u);
        for (std::size_t i = 0; i < pending->size(); ++i) {
            // Round r left ids 3r+2 (PUBREL marker) and 3r+3.
            const auto round = i / 2;
            EXPECT_EQ((*pending)[i].packet_id, 3 * round + 2 + i % 2);
            EXPECT_EQ((*pending)[i].pubrel, i % 2 == 0);
        }
    }
}

}  // namespace starling::testing
