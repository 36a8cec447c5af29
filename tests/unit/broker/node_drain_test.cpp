// node_drain: listeners close before anyone is disconnected, every connected client is
// disconnected exactly once (including one whose CONNECT completes during the drain), no
// faster than the rate, and stop() ends a slow drain at once and refuses a later start.

#include "broker/node_drain.h"

#include <gtest/gtest.h>

#include <chrono>
#include <map>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

namespace starling::broker {
namespace {

using namespace std::chrono_literals;
using steady = std::chrono::steady_clock;

// The node's clients as the drain sees them: connected ids; a disconnect closes at once unless
// the client is "sticky" (its close completes only when the test lets it go).
class fake_clients {
  public:
    explicit fake_clients(int n) {
        for (int i = 0; i < n; ++i) {
            connected_.insert("c" + std::to_string(i));
        }
    }

    node_drain::hooks hooks() {
        return {.stop_accepting =
                    [this] {
                        std::lock_guard lock(mutex_);
                        accepting_ = false;
                        for (auto& id : connect_on_stop_) {
                            connected_.insert(id);  // a CONNECT accepted just before
                        }
                    },
                .connected =
                    [this] {
                        std::lock_guard lock(mutex_);
                        return std::vector<std::string>(connected_.begin(), connected_.end());
                    },
                .disconnect =
                    [this](const std::string& id, const std::string& reference,
                           std::function<void(bool)> closed) {
                        bool was = false;
                        {
                            std::lock_guard lock(mutex_);
                            EXPECT_FALSE(accepting_) << "a client went before the listeners";
                            told_[id]++;
                            references_.insert(reference);
                            at_.push_back(steady::now());
                            if (!sticky_.contains(id)) {
                                was = connected_.erase(id) > 0;
                            }
                        }
                        closed(was);
                    },
                .now_ms = [] { return std::int64_t{1000}; }};
    }

    void connect_when_listeners_stop(std::string id) { connect_on_stop_.push_back(std::move(id)); }
    void make_sticky(std::string id) { sticky_.insert(std::move(id)); }
    void release(const std::string& id) {
        std::lock_guard lock(mutex_);
        connected_.erase(id);
    }
    std::map<std::string, int> told() const {
        std::lock_guard lock(mutex_);
        return told_;
    }
    std::vector<steady::time_point> times() const {
        std::lock_guard lock(mutex_);
        return at_;
    }
    std::set<std::string> references() const {
        std::lock_guard lock(mutex_);
        return references_;
    }

  private:
    mutable std::mutex mutex_;
    bool accepting_ = true;
    std::set<std::string> connected_;
    std::vector<std::string> connect_on_stop_;
    std::set<std::string> sticky_;
    std::map<std::string, int> told_;
    std::set<std::string> references_;
    std::vector<steady::time_point> at_;
};

// Waits (bounded) for the drain to report `want`.
bool reaches(const node_drain& drain, node_drain::state want) {
    const auto deadline = steady::now() + 20s;
    while (drain.current().current != want) {
        if (steady::now() > deadline) {
            return false;
        }
        std::this_thread::sleep_for(1ms);
    }
    return true;
}

TEST(node_drain, serving_until_started) {
    fake_clients clients(3);
    node_drain drain(clients.hooks());
    const auto p = drain.current();
    EXPECT_EQ(p.current, node_drain::state::serving);
    EXPECT_EQ(p.started_at_ms, 0);
    EXPECT_EQ(p.remaining, 0u);
    EXPECT_TRUE(clients.told().empty());
}

TEST(node_drain, disconnects_every_client_once_including_late_connects) {
    fake_clients clients(50);
    clients.connect_when_listeners_stop("late");
    node_drain drain(clients.hooks());
    ASSERT_TRUE(drain.start({.rate = 100000, .server_reference = "other:1883"}));
    ASSERT_TRUE(reaches(drain, node_drain::state::drained));
    const auto told = clients.told();
    EXPECT_EQ(told.size(), 51u);
    for (const auto& [id, times] : told) {
        EXPECT_EQ(times, 1) << id;
    }
    EXPECT_TRUE(told.contains("late"));
    EXPECT_EQ(clients.references(), std::set<std::string>{"other:1883"});
    const auto p = drain.current();
    EXPECT_EQ(p.disconnected, 51u);
    EXPECT_EQ(p.remaining, 0u);
    EXPECT_EQ(p.started_at_ms, 1000);
    EXPECT_EQ(p.drained_at_ms, 1000);
    EXPECT_EQ(p.server_reference, "other:1883");
}

TEST(node_drain, never_faster_than_the_rate) {
    // The k-th disconnect (from 0) is due at start + k / rate: 20 at 200/s span at least 95 ms.
    // Measured from before start(), not from the first disconnect: that one may itself come a
    // little after its due time, and the next one is due by the schedule, not after it.
    fake_clients clients(20);
    node_drain drain(clients.hooks());
    const auto before_start = steady::now();
    ASSERT_TRUE(drain.start({.rate = 200}));
    ASSERT_TRUE(reaches(drain, node_drain::state::drained));
    const auto at = clients.times();
    ASSERT_EQ(at.size(), 20u);
    EXPECT_GE(at.back() - before_start, 94ms);
    for (std::size_t k = 1; k < at.size(); ++k) {
        EXPECT_GE(at[k] - before_start, std::chrono::microseconds(4999 * k))
            << k;  // double slots round down
    }
}

TEST(node_drain, a_client_still_closing_is_not_told_twice) {
    fake_clients clients(3);
    clients.make_sticky("c1");
    node_drain drain(clients.hooks());
    ASSERT_TRUE(drain.start({.rate = 100000, .recheck = 5ms}));
    // c0 and c2 went; c1 was told and is still closing: the drain waits for it.
    const auto deadline = steady::now() + 20s;
    while (clients.told().size() < 3 && steady::now() < deadline) {
        std::this_thread::sleep_for(1ms);
    }
    ASSERT_EQ(clients.told().size(), 3u);
    EXPECT_EQ(drain.current().current, node_drain::state::draining);
    EXPECT_EQ(drain.current().remaining, 1u);
    clients.release("c1");
    ASSERT_TRUE(reaches(drain, node_drain::state::drained));
    EXPECT_EQ(clients.told().at("c1"), 1);
    EXPECT_EQ(drain.current().disconnected, 2u);  // c1's close was not the drain's
}

TEST(node_drain, starts_once_and_stop_ends_a_slow_drain) {
    fake_clients clients(100);
    node_drain drain(clients.hooks());
    ASSERT_TRUE(drain.start({.rate = 1}));
    EXPECT_FALSE(drain.start({.rate = 1000}));  // the first drain's settings stay
    EXPECT_EQ(drain.current().rate, 1);
    const auto asked = steady::now();
    drain.stop();  // 99 disconnects were still minutes away
    EXPECT_LT(steady::now() - asked, 5s);
    EXPECT_LE(clients.told().size(), 2u);
    EXPECT_EQ(drain.current().current, node_drain::state::draining);
    EXPECT_GE(drain.current().remaining, 98u);
    EXPECT_FALSE(drain.start({.rate = 1000}));
}

TEST(node_drain, stop_before_start_refuses_start) {
    fake_clients clients(1);
    node_drain drain(clients.hooks());
    drain.stop();
    EXPECT_FALSE(drain.start({}));
    EXPECT_EQ(drain.current().current, node_drain::state::serving);
    EXPECT_TRUE(clients.told().empty());
}

}  // namespace
}  // namespace starling::broker
