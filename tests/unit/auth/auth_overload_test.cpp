// Authentication under a flood (hardening issue, item 2): load shedding is not a provider
// failure, failed attempts are limited per source address, suspects queue behind everyone,
// and a recently verified password never waits for bcrypt.

#include "adapters/embedded/sqlite_metadata_store.h"
#include "auth/authenticator.h"
#include "auth/basic_provider.h"
#include "auth/credentials.h"
#include "auth/worker_pool.h"
#include "metrics/registry.h"

#include "auth_test_support.h"
#include "support/temp_dir.h"
#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
#include <future>
#include <mutex>
#include <vector>

namespace starling::auth {
namespace {

using namespace std::chrono_literals;
using testing::allow_result;
using testing::deny_result;
using testing::manual_clock;
using testing::scripted_provider;

auth_result shed_result() {
    return auth_result{.outcome = verdict::deny,
                       .reason = "auth worker pool busy",
                       .bad_credentials = false,
                       .shed = true};
}

class overload_test : public ::testing::Test {
  protected:
    overload_test() { timers_.start(); }
    ~overload_test() override { timers_.stop(); }

    scripted_provider* build(std::optional<auth_result> answer, authenticator_options options) {
        auto p = std::make_unique<scripted_provider>("MQTT_BASIC", std::move(answer));
        auto* raw = p.get();
        std::vector<std::unique_ptr<auth_provider>> providers;
        providers.push_back(std::move(p));
        auth_ = std::make_unique<authenticator>(options, std::move(providers), timers_,
                                                metrics_.auth(), clock_);
        return raw;
    }

    auth_decision run(std::string address, std::string password = "pw",
                      std::string client_id = "c") {
        std::promise<auth_decision> p;
        auto f = p.get_future();
        auth_->authenticate(auth_request{.client_id = std::move(client_id),
                                         .username = "u",
                                         .password = std::move(password),
                                         .remote_address = std::move(address)},
                            [&p](auth_decision d) { p.set_value(std::move(d)); });
        EXPECT_EQ(f.wait_for(5s), std::future_status::ready);
        return f.get();
    }

    double counter(const std::string& line_start) {
        const auto text = metrics_.serialize();
        const auto at = text.find("\n" + line_start);
        if (at == std::string::npos) {
            return 0;
        }
        const auto end = text.find('\n', at + 1);
        const auto line = text.substr(at + 1, end - at - 1);
        return std::stod(line.substr(line.rfind(' ') + 1));
    }

    manual_clock clock_;
    actor::timer_service timers_{"overload-test-timers"};
    metrics::registry metrics_;
    std::unique_ptr<authenticator> auth_;
};

TEST_F(overload_test, shedding_never_opens_the_circuit_breaker_and_fails_closed_as_busy) {
    auto* provider = build(shed_result(), {.allow_anonymous = true, .breaker_threshold = 3});
    for (int i = 0; i < 10; ++i) {
        auto d = run("10.0.0.1:1");
        EXPECT_EQ(d.result.outcome, verdict::deny) << "never the anonymous fallback";
        EXPECT_TRUE(d.result.shed);
        EXPECT_FALSE(d.result.failed);
    }
    EXPECT_FALSE(auth_->breaker_open_for_test("MQTT_BASIC"));
    EXPECT_EQ(provider->calls.load(), 10) << "never skipped";
    provider->set_answer(allow_result());
    EXPECT_EQ(run("10.0.0.1:1").result.outcome, verdict::allow) << "no cool-down to sit out";
    EXPECT_EQ(counter("authProviderShed_total{provider=\"MQTT_BASIC\"}"), 10);
    EXPECT_EQ(counter("authFailures_total{provider=\"none\",reason=\"shed\"}"), 10);
}

TEST_F(overload_test, real_failures_still_open_it) {
    build(testing::failed_result(), {.breaker_threshold = 3});
    for (int i = 0; i < 3; ++i) {
        (void)run("10.0.0.1:1");
    }
    EXPECT_TRUE(auth_->breaker_open_for_test("MQTT_BASIC"));
}

TEST_F(overload_test, failed_attempts_are_limited_per_address_and_refill) {
    auto* provider =
        build(deny_result(), {.cache_ttl = 0ms, .failed_attempts_per_address = {{3, 30}}});
    for (int i = 0; i < 3; ++i) {
        auto d = run("192.0.2.7:" + std::to_string(1000 + i));
        EXPECT_TRUE(d.result.bad_credentials);
        EXPECT_FALSE(d.throttled);
    }
    auto throttled = run("192.0.2.7:2000");
    EXPECT_TRUE(throttled.throttled);
    EXPECT_EQ(throttled.result.outcome, verdict::deny);
    EXPECT_EQ(provider->calls.load(), 3) << "a throttled attempt costs no provider call";
    // Another address is not affected.
    EXPECT_FALSE(run("192.0.2.8:1").throttled);
    // One token per 10 s comes back.
    clock_.advance(9999ms);
    EXPECT_TRUE(run("192.0.2.7:1").throttled);
    clock_.advance(1ms);
    EXPECT_FALSE(run("192.0.2.7:1").throttled);
    EXPECT_EQ(counter("authFailures_total{provider=\"none\",reason=\"throttled\"}"), 2);
}

// Records what the authenticator tells it about the request, and denies.
class suspect_spy final : public auth_provider {
  public:
    std::string_view name() const override { return "SPY"; }
    void authenticate(const auth_request& r, std::function<void(auth_result)> done) override {
        {
            std::lock_guard lock(mutex_);
            seen_.push_back(r.suspect);
        }
        done(deny_result());
    }
    std::vector<bool> seen() {
        std::lock_guard lock(mutex_);
        return seen_;
    }

  private:
    std::mutex mutex_;
    std::vector<bool> seen_;
};

TEST_F(overload_test, an_address_that_failed_recently_is_marked_suspect) {
    auto spy = std::make_unique<suspect_spy>();
    auto* raw = spy.get();
    std::vector<std::unique_ptr<auth_provider>> providers;
    providers.push_back(std::move(spy));
    auth_ = std::make_unique<authenticator>(
        authenticator_options{.cache_ttl = 0ms, .failed_attempts_per_address = {{10, 10}}},
        std::move(providers), timers_, metrics_.auth(), clock_);
    (void)run("[2001:db8::1]:5");  // fails: the address is suspect from now on
    (void)run("[2001:db8::1]:6");
    (void)run("198.51.100.1:1");   // another address is not
    clock_.advance(1s);            // one token back, two failures spent: still suspect
    (void)run("[2001:db8::1]:7");  // three spent now
    clock_.advance(3s);            // all tokens back, but it failed 3 s ago: still suspect
    (void)run("[2001:db8::1]:8");
    clock_.advance(10s);  // a whole window without a failure: the same as never having failed
    (void)run("[2001:db8::1]:9");
    EXPECT_EQ(raw->seen(), (std::vector<bool>{false, true, false, true, true, false}));
}

TEST_F(overload_test, the_failure_table_is_bounded) {
    build(
        deny_result(),
        {.cache_ttl = 0ms, .failed_attempts_per_address = {{1, 3600}}, .max_tracked_addresses = 2});
    (void)run("10.0.0.1:1");  // .1 used its one attempt
    EXPECT_TRUE(run("10.0.0.1:1").throttled);
    (void)run("10.0.0.2:1");
    (void)run("10.0.0.3:1");  // .1 is forgotten (least recently failing)
    EXPECT_FALSE(run("10.0.0.1:1").throttled);
}

// --------------------------------------------------------------------- worker_pool

TEST(worker_pool_lanes, normal_work_overtakes_queued_low_priority_work) {
    worker_pool pool("lanes-test", 1, 100);
    std::mutex mutex;
    std::condition_variable cv;
    bool release = false;
    std::vector<std::string> order;
    std::promise<void> blocker_started;
    // Occupy the only worker so what follows queues up.
    ASSERT_TRUE(pool.submit([&] {
        blocker_started.set_value();
        std::unique_lock lock(mutex);
        cv.wait(lock, [&] { return release; });
    }));
    blocker_started.get_future().wait();
    std::promise<void> all_done;
    std::atomic<int> remaining{4};
    auto job = [&](std::string name) {
        return [&, name] {
            {
                std::lock_guard lock(mutex);
                order.push_back(name);
            }
            if (--remaining == 0) {
                all_done.set_value();
            }
        };
    };
    ASSERT_TRUE(pool.submit(job("low-1"), {}, worker_pool::lane::low));
    ASSERT_TRUE(pool.submit(job("low-2"), {}, worker_pool::lane::low));
    ASSERT_TRUE(pool.submit(job("normal-1")));
    ASSERT_TRUE(pool.submit(job("normal-2")));
    {
        std::lock_guard lock(mutex);
        release = true;
    }
    cv.notify_all();
    all_done.get_future().wait();
    EXPECT_EQ(order, (std::vector<std::string>{"normal-1", "normal-2", "low-1", "low-2"}));
}

TEST(worker_pool_lanes, jobs_that_waited_too_long_expire_instead_of_running) {
    manual_clock clock;
    worker_pool pool("expiry-test", 1, 100, 500ms, clock);
    std::mutex mutex;
    std::condition_variable cv;
    bool release = false;
    std::promise<void> blocker_started;
    ASSERT_TRUE(pool.submit([&] {
        blocker_started.set_value();
        std::unique_lock lock(mutex);
        cv.wait(lock, [&] { return release; });
    }));
    blocker_started.get_future().wait();
    std::atomic<int> ran{0};
    std::promise<void> expired;
    std::promise<void> fresh_ran;
    ASSERT_TRUE(pool.submit([&] { ++ran; }, [&] { expired.set_value(); }, worker_pool::lane::low));
    clock.advance(501ms);  // the queued job is now too old
    ASSERT_TRUE(pool.submit([&] { fresh_ran.set_value(); }));
    {
        std::lock_guard lock(mutex);
        release = true;
    }
    cv.notify_all();
    expired.get_future().wait();
    fresh_ran.get_future().wait();
    EXPECT_EQ(ran.load(), 0);
    EXPECT_EQ(pool.expired(), 1U);
}

TEST(worker_pool_lanes, each_lane_is_bounded) {
    worker_pool pool("bound-test", 1, 1);
    std::mutex mutex;
    std::condition_variable cv;
    bool release = false;
    std::promise<void> blocker_started;
    ASSERT_TRUE(pool.submit([&] {
        blocker_started.set_value();
        std::unique_lock lock(mutex);
        cv.wait(lock, [&] { return release; });
    }));
    blocker_started.get_future().wait();
    EXPECT_TRUE(pool.submit([] {}));
    EXPECT_FALSE(pool.submit([] {})) << "normal lane full";
    EXPECT_TRUE(pool.submit([] {}, {}, worker_pool::lane::low)) << "the low lane has its own room";
    EXPECT_FALSE(pool.submit([] {}, {}, worker_pool::lane::low));
    {
        std::lock_guard lock(mutex);
        release = true;
    }
    cv.notify_all();
}

// ------------------------------------------------------------------ basic_provider

class basic_overload_test : public ::testing::Test {
  protected:
    basic_overload_test() {
        adapters::embedded::sqlite_metadata_store::options opts;
        opts.data_dir = dir_.path();
        auto store = adapters::embedded::sqlite_metadata_store::open(opts, clock_);
        EXPECT_TRUE(store);
        store_ = std::move(store.value());
        std::string why;
        auto row = to_credentials_row({.name = "dev",
                                       .credentials_type = "MQTT_BASIC",
                                       .username = "dev",
                                       .password = "dev-pw"},
                                      &why, 4);
        EXPECT_TRUE(row) << why;
        std::promise<status> saved;
        store_->save_credentials(std::move(*row), [&](status st) { saved.set_value(st); });
        EXPECT_TRUE(saved.get_future().get());
    }
    ~basic_overload_test() override { store_->stop(); }

    auth_result run(basic_provider& provider, std::string password, bool suspect = false) {
        std::promise<auth_result> p;
        auto f = p.get_future();
        provider.authenticate(auth_request{.client_id = "c",
                                           .username = "dev",
                                           .password = std::move(password),
                                           .suspect = suspect},
                              [&p](auth_result r) { p.set_value(std::move(r)); });
        EXPECT_EQ(f.wait_for(10s), std::future_status::ready);
        return f.get();
    }

    starling::testing::temp_dir dir_;
    manual_clock clock_;
    std::unique_ptr<adapters::embedded::sqlite_metadata_store> store_;
};

TEST_F(basic_overload_test, a_recently_verified_password_needs_no_worker) {
    worker_pool pool("basic-fast", 1, 100);
    basic_provider provider(*store_, pool, basic_auth_strategy::both, clock_);
    EXPECT_EQ(run(provider, "dev-pw").outcome, verdict::allow);  // bcrypt once
    pool.stop();  // no worker any more: only the verification cache can answer
    EXPECT_EQ(run(provider, "dev-pw").outcome, verdict::allow);
    const auto wrong = run(provider, "wrong");
    EXPECT_TRUE(wrong.shed) << "a full (stopped) pool sheds; it is not a store failure";
    EXPECT_FALSE(wrong.failed);
}

}  // namespace
}  // namespace starling::auth
