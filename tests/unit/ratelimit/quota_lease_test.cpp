#include "ratelimit/quota_lease.h"

#include "adapters/embedded/shared_counters.h"

#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <future>
#include <mutex>
#include <optional>
#include <system_error>
#include <thread>
#include <vector>

namespace starling::ratelimit {
namespace {

using namespace std::chrono_literals;

class manual_clock final : public clock {
  public:
    steady_point steady_now() const override {
        std::lock_guard lock(mutex_);
        return steady_;
    }
    system_point system_now() const override {
        std::lock_guard lock(mutex_);
        return system_point{} + std::chrono::hours(24 * 365 * 50) + (steady_ - steady_point{});
    }
    void advance(std::chrono::nanoseconds d) {
        std::lock_guard lock(mutex_);
        steady_ += d;
    }

  private:
    mutable std::mutex mutex_;
    steady_point steady_{std::chrono::hours(1)};
};

// A store whose calls the test answers one by one (or that fails them), recording each.
class fake_counters final : public shared_counters {
  public:
    struct call {
        bool refund = false;
        std::int64_t tokens = 0;
        callback<std::int64_t> done;
    };
    std::deque<call> calls;
    std::vector<std::int64_t> refunds;

    void add(std::string, std::int64_t, callback<std::int64_t> done) override { done(0); }
    void get(std::string, callback<std::int64_t> done) override { done(0); }
    void try_consume(std::string key, std::vector<bandwidth>, std::int64_t tokens,
                     callback<std::int64_t> done) override {
        EXPECT_EQ(key, "totalMsgsLimit::bucket");
        calls.push_back(call{.refund = false, .tokens = tokens, .done = std::move(done)});
    }
    void refund(std::string, std::vector<bandwidth>, std::int64_t tokens,
                callback<std::int64_t> done) override {
        refunds.push_back(tokens);
        done(tokens);
    }
    bool healthy() const override { return true; }

    // Answers the oldest draw with `granted` (or an error); returns what it asked for.
    std::int64_t answer(std::optional<std::int64_t> granted) {
        EXPECT_FALSE(calls.empty());
        if (calls.empty()) {
            return 0;
        }
        auto c = std::move(calls.front());
        calls.pop_front();
        if (granted) {
            c.done(std::min(*granted, c.tokens));
        } else {
            c.done(std::make_error_code(std::errc::not_connected));
        }
        return c.tokens;
    }
    std::int64_t answer_all_asked() {
        EXPECT_FALSE(calls.empty());
        return answer(calls.empty() ? 0 : calls.front().tokens);
    }
};

quota_options options(std::vector<bandwidth> limits, std::int64_t block = 10,
                      std::chrono::milliseconds lease_return = 1000ms) {
    quota_options o;
    o.limits = std::move(limits);
    o.block_size = block;
    o.lease_return = lease_return;
    return o;
}

struct verdicts {
    std::vector<quota_verdict> got;
    quota_lease::verdict_callback sink() {
        return [this](quota_verdict v) { got.push_back(v); };
    }
};

TEST(quota_lease, block_size_derives_from_the_lowest_sustained_rate) {
    EXPECT_EQ(quota_lease::derive_block_size({{1000, 1}, {50000, 60}}, 0), 83);  // 833/s / 10
    EXPECT_EQ(quota_lease::derive_block_size({{5, 1}}, 0), 1);                   // never 0
    EXPECT_EQ(quota_lease::derive_block_size({{1000, 1}}, 7), 7);                // configured
}

TEST(quota_lease, charges_from_a_drawn_block_without_asking_the_store_again) {
    manual_clock clk;
    fake_counters store;
    auto lease = quota_lease::create(store, clk, options({{1000, 1}}, 10));
    verdicts v;
    // Nothing drawn yet: the first charge waits for a draw of its cost plus one block.
    EXPECT_EQ(lease->charge(1, v.sink()), std::nullopt);
    ASSERT_EQ(store.calls.size(), 1u);
    EXPECT_EQ(store.answer_all_asked(), 11);
    ASSERT_EQ(v.got.size(), 1u);
    EXPECT_EQ(v.got[0], quota_verdict::admitted);
    EXPECT_EQ(lease->balance(), 10);
    // The next four come from the balance, no store call.
    for (int i = 0; i < 4; ++i) {
        EXPECT_EQ(lease->charge(1, v.sink()), quota_verdict::admitted);
    }
    EXPECT_TRUE(store.calls.empty());
    EXPECT_EQ(lease->balance(), 6);
}

TEST(quota_lease, refills_in_the_background_before_the_balance_runs_dry) {
    manual_clock clk;
    fake_counters store;
    auto lease = quota_lease::create(store, clk, options({{1000, 1}}, 10));
    verdicts v;
    lease->charge(1, v.sink());
    store.answer_all_asked();  // balance 10
    for (int i = 0; i < 5; ++i) {
        EXPECT_EQ(lease->charge(1, v.sink()), quota_verdict::admitted);
    }
    // Half a block left: one refill draw is on its way, and charges keep passing meanwhile.
    ASSERT_EQ(store.calls.size(), 1u);
    EXPECT_EQ(store.calls.front().tokens, 10);
    EXPECT_EQ(lease->charge(1, v.sink()), quota_verdict::admitted);
    EXPECT_EQ(store.calls.size(), 1u);  // still one draw in flight, not one per charge
    store.answer_all_asked();
    EXPECT_EQ(lease->balance(), 14);
}

TEST(quota_lease, draws_the_shortfall_of_a_charge_larger_than_the_block) {
    manual_clock clk;
    fake_counters store;
    auto lease = quota_lease::create(store, clk, options({{1000, 1}}, 10));
    verdicts v;
    lease->charge(1, v.sink());
    store.answer_all_asked();  // balance 10
    // Fan-out 49: cost 50 > balance 10 > block: the charge waits for 50 + 10 more.
    EXPECT_EQ(lease->charge(50, v.sink()), std::nullopt);
    EXPECT_EQ(store.answer_all_asked(), 60);
    ASSERT_EQ(v.got.size(), 2u);
    EXPECT_EQ(v.got[1], quota_verdict::admitted);
    EXPECT_EQ(lease->balance(), 20);
}

TEST(quota_lease, refuses_when_the_bucket_is_short_and_raises_the_indicator) {
    manual_clock clk;
    fake_counters store;
    auto lease = quota_lease::create(store, clk, options({{1000, 1}}, 10));
    verdicts v;
    EXPECT_EQ(lease->charge(30, v.sink()), std::nullopt);
    store.answer(12);  // asked 40, the bucket had 12
    ASSERT_EQ(v.got.size(), 1u);
    EXPECT_EQ(v.got[0], quota_verdict::refused);
    EXPECT_EQ(lease->balance(), 12);  // what was drawn stays usable for smaller charges
    EXPECT_EQ(lease->charge(5, v.sink()), quota_verdict::admitted);
    const auto s = lease->state();
    EXPECT_TRUE(s.reached);
    EXPECT_GT(s.reached_at_ms, 0);
    EXPECT_FALSE(s.degraded);
    // Within the empty backoff a charge the balance cannot cover is refused without a call.
    store.calls.clear();  // the background refill the charge above started
    EXPECT_EQ(lease->charge(30, v.sink()), quota_verdict::refused);
    EXPECT_TRUE(store.calls.empty());
}

TEST(quota_lease, charge_now_overdraws_at_most_a_tenth_of_a_second_of_budget) {
    manual_clock clk;
    fake_counters store;
    // 1000/s sustained: a configured block of 1 still allows a debt of 100 (a tenth of a second).
    auto lease = quota_lease::create(store, clk, options({{1000, 1}}, 1));
    EXPECT_EQ(lease->overdraft_limit(), 100);
    for (int i = 0; i < 100; ++i) {
        ASSERT_EQ(lease->charge_now(1), quota_verdict::admitted) << i;
    }
    EXPECT_EQ(lease->charge_now(1), quota_verdict::refused);
    ASSERT_EQ(store.calls.size(), 1u);  // one draw in flight, not one per charge
}

TEST(quota_lease, charge_now_overdraws_at_most_one_block_and_the_next_draw_pays_it) {
    manual_clock clk;
    fake_counters store;
    auto lease = quota_lease::create(store, clk, options({{100, 1}}, 10));
    EXPECT_EQ(lease->overdraft_limit(), 10);
    // Nothing drawn: a delivery cannot wait, so it overdraws and starts a draw.
    EXPECT_EQ(lease->charge_now(4), quota_verdict::admitted);
    EXPECT_EQ(lease->balance(), -4);
    ASSERT_EQ(store.calls.size(), 1u);
    EXPECT_EQ(store.calls.front().tokens, 14);  // the debt plus one block
    EXPECT_EQ(lease->charge_now(6), quota_verdict::admitted);
    EXPECT_EQ(lease->charge_now(1), quota_verdict::refused);  // past one block of debt
    store.answer_all_asked();
    EXPECT_EQ(lease->balance(), 4);
    // A short draw means the bucket is empty: no overdraft until the backoff passed.
    EXPECT_EQ(lease->charge_now(4), quota_verdict::admitted);
    ASSERT_EQ(store.calls.size(), 1u);
    store.answer(0);
    EXPECT_EQ(lease->charge_now(1), quota_verdict::refused);
    clk.advance(lease->empty_backoff());
    EXPECT_EQ(lease->charge_now(1), quota_verdict::admitted);
}

TEST(quota_lease, returns_the_unused_balance_every_lease_return_period) {
    manual_clock clk;
    fake_counters store;
    auto lease = quota_lease::create(store, clk, options({{1000, 1}}, 10, 1000ms));
    verdicts v;
    lease->charge(3, v.sink());
    store.answer_all_asked();  // balance 10
    clk.advance(999ms);
    lease->tick();
    EXPECT_TRUE(store.refunds.empty());
    clk.advance(1ms);
    lease->tick();
    ASSERT_EQ(store.refunds.size(), 1u);
    EXPECT_EQ(store.refunds[0], 10);
    EXPECT_EQ(lease->balance(), 0);
    clk.advance(1000ms);
    lease->tick();
    EXPECT_EQ(store.refunds.size(), 1u);  // nothing left to return
}

TEST(quota_lease, returned_tokens_end_the_empty_backoff) {
    manual_clock clk;
    fake_counters store;
    auto lease = quota_lease::create(store, clk, options({{20, 3600}}, 10, 100ms));
    verdicts v;
    lease->charge(1, v.sink());
    store.answer(5);  // short: the bucket is empty, balance 4
    EXPECT_EQ(v.got.back(), quota_verdict::admitted);
    clk.advance(100ms);
    lease->tick();  // the 4 go back to the bucket
    ASSERT_EQ(store.refunds.size(), 1u);
    ASSERT_GT(lease->empty_backoff(), 100ms);  // still inside it
    // The bucket is known to hold the returned tokens: the charge asks for them.
    EXPECT_EQ(lease->charge(1, v.sink()), std::nullopt);
    EXPECT_EQ(store.calls.size(), 1u);
}

TEST(quota_lease, lease_return_zero_keeps_the_tokens) {
    manual_clock clk;
    fake_counters store;
    auto lease = quota_lease::create(store, clk, options({{1000, 1}}, 10, 0ms));
    verdicts v;
    lease->charge(1, v.sink());
    store.answer_all_asked();
    clk.advance(60s);
    lease->tick();
    EXPECT_TRUE(store.refunds.empty());
    EXPECT_EQ(lease->balance(), 10);
}

TEST(quota_lease, store_unreachable_admits_within_the_grace_then_refuses_as_degraded) {
    manual_clock clk;
    fake_counters store;
    auto lease = quota_lease::create(store, clk, options({{1000, 1}}, 10));
    verdicts v;
    EXPECT_EQ(lease->charge(1, v.sink()), std::nullopt);
    store.answer(std::nullopt);  // the store fails
    ASSERT_EQ(v.got.size(), 1u);
    EXPECT_EQ(v.got[0], quota_verdict::admitted_in_grace);
    EXPECT_TRUE(lease->state().degraded);
    clk.advance(quota_lease::store_grace - 1ms);
    EXPECT_EQ(lease->charge(1, v.sink()), quota_verdict::admitted_in_grace);
    EXPECT_EQ(lease->charge_now(1), quota_verdict::admitted_in_grace);
    clk.advance(1ms);
    EXPECT_EQ(lease->charge(1, v.sink()), quota_verdict::degraded);
    EXPECT_EQ(lease->charge_now(1), quota_verdict::degraded);
    EXPECT_FALSE(lease->state().reached);  // the budget is unknown, not spent
    // The probe draw finds the store back: charges are counted again.
    lease->tick();
    ASSERT_EQ(store.calls.size(), 1u);
    store.answer_all_asked();
    EXPECT_FALSE(lease->state().degraded);
    EXPECT_EQ(lease->charge(1, v.sink()), quota_verdict::admitted);
}

TEST(quota_lease, a_store_that_does_not_answer_counts_as_unreachable) {
    manual_clock clk;
    fake_counters store;
    auto lease = quota_lease::create(store, clk, options({{1000, 1}}, 10));
    verdicts v;
    EXPECT_EQ(lease->charge(1, v.sink()), std::nullopt);
    clk.advance(quota_lease::answer_timeout);
    lease->tick();
    ASSERT_EQ(v.got.size(), 1u);
    EXPECT_EQ(v.got[0], quota_verdict::admitted_in_grace);
    // The grace counts from when the draw was sent.
    clk.advance(quota_lease::store_grace - quota_lease::answer_timeout);
    EXPECT_EQ(lease->charge(1, v.sink()), quota_verdict::degraded);
    // A late answer is still accounted.
    store.answer_all_asked();
    EXPECT_FALSE(lease->state().degraded);
    EXPECT_EQ(lease->balance(), 11);
}

TEST(quota_lease, the_indicator_clears_when_acknowledged_or_five_minutes_after_first_raised) {
    manual_clock clk;
    fake_counters store;
    auto lease = quota_lease::create(store, clk, options({{1000, 1}}, 10));
    verdicts v;
    lease->charge(5, v.sink());
    store.answer(0);
    EXPECT_TRUE(lease->state().reached);
    EXPECT_TRUE(lease->acknowledge());
    EXPECT_FALSE(lease->state().reached);
    EXPECT_FALSE(lease->acknowledge());
    // Raised again; later refusals do not extend it.
    EXPECT_EQ(lease->charge(5, v.sink()), quota_verdict::refused);
    const auto first = lease->state().reached_at_ms;
    clk.advance(4min);
    EXPECT_EQ(lease->charge(5, v.sink()), std::nullopt);
    store.answer(0);
    EXPECT_EQ(v.got.back(), quota_verdict::refused);
    EXPECT_EQ(lease->state().reached_at_ms, first);
    clk.advance(1min);
    EXPECT_FALSE(lease->state().reached);
}

TEST(quota_lease, enforces_the_configured_rate_over_two_minutes_on_the_embedded_store) {
    manual_clock clk;
    adapters::embedded::embedded_shared_counters store(clk);
    // 100:1,600:60 — sustained 10/s, block 1.
    auto lease = quota_lease::create(store, clk, options({{100, 1}, {600, 60}}, 0, 1000ms));
    std::int64_t admitted = 0;
    // 50 charges per second for 120 s, ticking as the lease thread would.
    for (int ms = 0; ms < 120'000; ms += 20) {
        const auto v = lease->charge(1, [](quota_verdict) { FAIL() << "embedded answers inline"; });
        ASSERT_TRUE(v.has_value());
        if (is_admitted(*v)) {
            ++admitted;
        }
        clk.advance(20ms);
        if (ms % 100 == 0) {
            lease->tick();
        }
    }
    // Bucket4j greedy over 120 s: the 600 burst plus 10/s refill = 600 + 1200. The refund of
    // unused tokens can only give back what was drawn, never more.
    EXPECT_LE(admitted, 1800);
    EXPECT_GE(admitted, 1800 - 20);
}

TEST(quota_lease, two_leases_share_one_bucket) {
    manual_clock clk;
    adapters::embedded::embedded_shared_counters store(clk);
    auto a = quota_lease::create(store, clk, options({{100, 60}}, 10, 1000ms));
    auto b = quota_lease::create(store, clk, options({{100, 60}}, 10, 1000ms));
    std::int64_t admitted = 0;
    for (int i = 0; i < 200; ++i) {
        auto& lease = i % 2 == 0 ? a : b;
        if (is_admitted(*lease->charge(1, [](quota_verdict) {}))) {
            ++admitted;
        }
    }
    // Every token of the bucket was either charged or is still held by one of the leases.
    EXPECT_EQ(admitted + a->balance() + b->balance(), 100);
    EXPECT_GE(admitted, 100 - 2 * 10);
    const std::int64_t held = a->balance() + b->balance();
    // Lease return: both go idle and give their tokens back; one node alone can now use them.
    clk.advance(1000ms);
    a->tick();
    b->tick();
    EXPECT_EQ(a->balance() + b->balance(), 0);
    std::int64_t more = 0;
    while (is_admitted(*a->charge(1, [](quota_verdict) {}))) {
        ++more;
    }
    EXPECT_GE(more, held);
}

}  // namespace
}  // namespace starling::ratelimit

namespace starling::ratelimit {
namespace {

// A store that answers on its own thread, later, like the Redis adapter's worker.
class threaded_counters final : public shared_counters {
  public:
    explicit threaded_counters(std::int64_t tokens) : tokens_(tokens) {
        worker_ = std::thread([this] { run(); });
    }
    ~threaded_counters() override {
        {
            std::lock_guard lock(mutex_);
            stopping_ = true;
        }
        cv_.notify_all();
        worker_.join();
    }
    void add(std::string, std::int64_t, callback<std::int64_t> done) override { done(0); }
    void get(std::string, callback<std::int64_t> done) override { done(0); }
    void try_consume(std::string, std::vector<bandwidth>, std::int64_t tokens,
                     callback<std::int64_t> done) override {
        post([this, tokens, done = std::move(done)] {
            const std::int64_t granted = std::min(tokens, tokens_);
            tokens_ -= granted;
            drawn_ += granted;
            done(granted);
        });
    }
    void refund(std::string, std::vector<bandwidth>, std::int64_t tokens,
                callback<std::int64_t> done) override {
        post([this, tokens, done = std::move(done)] {
            tokens_ += tokens;
            drawn_ -= tokens;
            done(tokens);
        });
    }
    bool healthy() const override { return true; }
    // Tokens out of the bucket now (drawn less refunded), once every queued call ran.
    std::int64_t drawn() {
        std::promise<std::int64_t> p;
        post([&] { p.set_value(drawn_); });
        return p.get_future().get();
    }

  private:
    void post(std::function<void()> fn) {
        {
            std::lock_guard lock(mutex_);
            queue_.push_back(std::move(fn));
        }
        cv_.notify_all();
    }
    void run() {
        std::unique_lock lock(mutex_);
        while (true) {
            cv_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
            if (queue_.empty()) {
                return;
            }
            auto fn = std::move(queue_.front());
            queue_.pop_front();
            lock.unlock();
            fn();
            lock.lock();
        }
    }

    std::mutex mutex_;
    std::condition_variable cv_;
    std::deque<std::function<void()>> queue_;
    bool stopping_ = false;
    std::int64_t tokens_;  // worker thread only
    std::int64_t drawn_ = 0;
    std::thread worker_;
};

TEST(quota_lease_concurrency, charges_from_many_threads_never_create_tokens) {
    constexpr std::int64_t budget = 5000;
    threaded_counters store(budget);
    // A long window: nothing refills; block 7 so draws, waits and overdrafts all happen.
    auto lease =
        quota_lease::create(store, system_clock::instance(), options({{budget, 3600}}, 7, 0ms));
    std::atomic<std::int64_t> admitted{0};
    std::atomic<std::int64_t> later_admitted{0};
    std::atomic<std::int64_t> pending{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < 8; ++t) {
        threads.emplace_back([&, t] {
            for (int i = 0; i < 1000; ++i) {
                const std::int64_t cost = 1 + (i + t) % 5;
                if (i % 3 == 0) {
                    if (is_admitted(lease->charge_now(1))) {
                        admitted += 1;
                    }
                    continue;
                }
                ++pending;
                auto v = lease->charge(cost, [&, cost](quota_verdict verdict) {
                    if (is_admitted(verdict)) {
                        later_admitted += cost;
                    }
                    --pending;
                });
                if (v) {
                    --pending;
                    if (is_admitted(*v)) {
                        admitted += cost;
                    }
                }
            }
        });
    }
    for (auto& t : threads) {
        t.join();
    }
    const auto deadline = std::chrono::steady_clock::now() + 5s;
    while (pending.load() != 0 && std::chrono::steady_clock::now() < deadline) {
        std::this_thread::sleep_for(1ms);  // polling a condition with a deadline
    }
    ASSERT_EQ(pending.load(), 0) << "a waiting charge never got its verdict";
    const std::int64_t charged = admitted + later_admitted;
    const std::int64_t drawn = store.drawn();
    // Whatever was charged was drawn, except a debt of at most the overdraft limit.
    EXPECT_EQ(charged + lease->balance(), drawn);
    EXPECT_LE(charged, budget + lease->overdraft_limit());
    EXPECT_GE(charged, budget - 8 * 5);  // the offered load is far above the budget
}

}  // namespace
}  // namespace starling::ratelimit
