#include "ratelimit/shared_limit.h"

#include <gtest/gtest.h>

#include <functional>
#include <system_error>

namespace starling::ratelimit {
namespace {

using namespace std::chrono_literals;

// A store whose bucket answers with whatever `answer` returns, or never (answer unset).
class scripted_counters final : public shared_counters {
  public:
    std::function<result<std::int64_t>(std::int64_t)> answer;
    callback<std::int64_t> parked;  // a call never answered (kept so it is not destroyed)

    void add(std::string, std::int64_t, callback<std::int64_t> done) override { done(0); }
    void get(std::string, callback<std::int64_t> done) override { done(0); }
    void try_consume(std::string, std::vector<bandwidth>, std::int64_t tokens,
                     callback<std::int64_t> done) override {
        if (!answer) {
            parked = std::move(done);
            return;
        }
        done(answer(tokens));
    }
    void refund(std::string, std::vector<bandwidth>, std::int64_t,
                callback<std::int64_t> done) override {
        done(0);
    }
    bool healthy() const override { return static_cast<bool>(answer); }
};

TEST(shared_limit, passes_on_what_the_store_grants) {
    scripted_counters store;
    store.answer = [](std::int64_t tokens) { return result<std::int64_t>(tokens - 3); };
    shared_limit limit(store, "k", {{10, 1}}, 1s);
    const auto g = limit.acquire(10);
    EXPECT_EQ(g.granted, 7);
    EXPECT_FALSE(g.failed_open);
    EXPECT_EQ(limit.acquire(0).granted, 0);  // nothing asked, nothing charged
}

TEST(shared_limit, a_store_error_lets_everything_through) {
    scripted_counters store;
    store.answer = [](std::int64_t) {
        return result<std::int64_t>(std::make_error_code(std::errc::not_connected));
    };
    shared_limit limit(store, "k", {{10, 1}}, 1s);
    const auto g = limit.acquire(25);
    EXPECT_EQ(g.granted, 25);
    EXPECT_TRUE(g.failed_open);
    EXPECT_EQ(g.error, std::errc::not_connected);
}

TEST(shared_limit, a_store_that_does_not_answer_in_time_lets_everything_through) {
    scripted_counters store;  // never answers
    shared_limit limit(store, "k", {{10, 1}}, 20ms);
    const auto g = limit.acquire(4);
    EXPECT_EQ(g.granted, 4);
    EXPECT_TRUE(g.failed_open);
    EXPECT_EQ(g.error, std::errc::timed_out);
    // The late answer lands in state the finished call no longer reads.
    ASSERT_TRUE(store.parked);
    store.parked(result<std::int64_t>(0));
}

}  // namespace
}  // namespace starling::ratelimit
