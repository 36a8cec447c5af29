#include "auth/authenticator.h"

#include "metrics/registry.h"

#include "auth_test_support.h"
#include <gtest/gtest.h>

#include <future>

namespace starling::auth {
namespace {

using namespace std::chrono_literals;
using testing::allow_result;
using testing::deny_result;
using testing::failed_result;
using testing::manual_clock;
using testing::pass_result;
using testing::scripted_provider;

class authenticator_test : public ::testing::Test {
  protected:
    authenticator_test() { timers_.start(); }
    ~authenticator_test() override { timers_.stop(); }

    // Builds the chain; returns raw pointers to the providers it now owns.
    std::vector<scripted_provider*> build(
        std::vector<std::pair<std::string, std::optional<auth_result>>> script,
        authenticator_options options = {}) {
        std::vector<std::unique_ptr<auth_provider>> providers;
        std::vector<scripted_provider*> raw;
        for (auto& [name, answer] : script) {
            auto p = std::make_unique<scripted_provider>(name, answer);
            raw.push_back(p.get());
            providers.push_back(std::move(p));
        }
        auth_ = std::make_unique<authenticator>(options, std::move(providers), timers_,
                                                metrics_.auth(), clock_);
        return raw;
    }

    auth_decision run(auth_request request) {
        std::promise<auth_decision> p;
        auto f = p.get_future();
        auth_->authenticate(std::move(request), [&p](auth_decision d) { p.set_value(d); });
        EXPECT_EQ(f.wait_for(5s), std::future_status::ready) << "authenticator never answered";
        return f.get();
    }

    static auth_request request(std::string client_id = "c1",
                                std::optional<std::string> password = "pw") {
        return auth_request{.client_id = std::move(client_id),
                            .username = "u",
                            .password = std::move(password),
                            .remote_address = "127.0.0.1:5000"};
    }

    std::string scrape() { return metrics_.serialize(); }

    manual_clock clock_;
    actor::timer_service timers_{"auth-test-timers"};
    metrics::registry metrics_;
    std::unique_ptr<authenticator> auth_;
};

TEST_F(authenticator_test, first_definitive_answer_wins_in_order) {
    auto p = build({{"A", pass_result()}, {"B", allow_result()}, {"C", deny_result()}});
    auto d = run(request());
    EXPECT_EQ(d.result.outcome, verdict::allow);
    EXPECT_EQ(d.provider, "B");
    EXPECT_EQ(d.result.type, client_type::application);
    ASSERT_TRUE(d.result.rules);  // a provider without rules allows everything
    EXPECT_TRUE(d.result.rules->may_publish("x"));
    EXPECT_EQ(p[0]->calls, 1);
    EXPECT_EQ(p[1]->calls, 1);
    EXPECT_EQ(p[2]->calls, 0);

    build({{"A", deny_result(false)}, {"B", allow_result()}});
    d = run(request());
    EXPECT_EQ(d.result.outcome, verdict::deny);
    EXPECT_FALSE(d.result.bad_credentials);
    EXPECT_EQ(d.provider, "A");
    EXPECT_NE(scrape().find(R"(authFailures_total{provider="A",reason="not_authorized"} 1)"),
              std::string::npos);
}

TEST_F(authenticator_test, nobody_decides_anonymous_decides) {
    build({{"A", pass_result()}}, {.allow_anonymous = false});
    auto d = run(request());
    EXPECT_EQ(d.result.outcome, verdict::deny);
    EXPECT_TRUE(d.result.bad_credentials);  // credentials were offered and nobody took them
    d = run(request("c2", std::nullopt));
    EXPECT_EQ(d.result.outcome, verdict::deny);

    build({{"A", pass_result()}}, {.allow_anonymous = true});
    d = run(request());
    EXPECT_EQ(d.result.outcome, verdict::allow);
    EXPECT_EQ(d.result.reason, "anonymous");
    EXPECT_TRUE(d.result.rules->allow_all);
}

TEST_F(authenticator_test, a_failure_is_never_anonymous_and_the_next_provider_is_asked) {
    auto p = build({{"A", failed_result()}, {"B", pass_result()}}, {.allow_anonymous = true});
    auto d = run(request());
    EXPECT_EQ(d.result.outcome, verdict::deny);
    EXPECT_TRUE(d.result.failed);
    EXPECT_EQ(d.provider, "A");
    EXPECT_EQ(p[1]->calls, 1);

    p = build({{"A", failed_result()}, {"B", allow_result()}});
    d = run(request());
    EXPECT_EQ(d.result.outcome, verdict::allow);
    EXPECT_EQ(d.provider, "B");
}

TEST_F(authenticator_test, a_silent_provider_times_out_and_its_late_answer_is_ignored) {
    auto p = build({{"slow", std::nullopt}}, {.provider_timeout = 50ms});
    auto d = run(request());
    EXPECT_EQ(d.result.outcome, verdict::deny);
    EXPECT_EQ(d.result.reason, "slow: provider timed out");
    EXPECT_TRUE(d.result.failed);
    p[0]->release_parked(allow_result());  // too late: must not call done a second time
    EXPECT_NE(scrape().find(R"(authProviderTimeouts_total{provider="slow"} 1)"), std::string::npos);
}

TEST_F(authenticator_test, circuit_breaker_skips_a_failing_provider_then_tries_again) {
    auto p = build({{"A", failed_result()}, {"B", pass_result()}}, {.allow_anonymous = true,
                                                                    .cache_ttl = 0ms,
                                                                    .breaker_threshold = 3,
                                                                    .breaker_cooldown = 10s});
    for (int i = 0; i < 3; ++i) {
        EXPECT_EQ(run(request()).result.outcome, verdict::deny);
    }
    EXPECT_TRUE(auth_->breaker_open_for_test("A"));
    EXPECT_EQ(p[0]->calls, 3);
    // Open: A is skipped, so nobody fails and anonymous applies.
    auto d = run(request());
    EXPECT_EQ(p[0]->calls, 3);
    EXPECT_EQ(d.result.outcome, verdict::allow);
    EXPECT_NE(scrape().find(R"(authProviderSkipped_total{provider="A"} 1)"), std::string::npos);
    // After the cool-down one trial goes through; a success closes the breaker.
    clock_.advance(10s);
    p[0]->set_answer(allow_result());
    d = run(request());
    EXPECT_EQ(p[0]->calls, 4);
    EXPECT_EQ(d.provider, "A");
    EXPECT_FALSE(auth_->breaker_open_for_test("A"));
}

TEST_F(authenticator_test, definitive_results_are_cached_per_credentials_until_the_ttl) {
    auto p = build({{"A", allow_result()}}, {.cache_ttl = 1000ms});
    EXPECT_FALSE(run(request()).from_cache);
    auto d = run(request());
    EXPECT_TRUE(d.from_cache);
    EXPECT_EQ(d.provider, "A");
    EXPECT_EQ(p[0]->calls, 1);
    // Another password or client id is another key.
    run(request("c1", "other"));
    run(request("c2"));
    EXPECT_EQ(p[0]->calls, 3);
    clock_.advance(1001ms);
    EXPECT_FALSE(run(request()).from_cache);
    EXPECT_EQ(p[0]->calls, 4);
    // Failures are never cached.
    p[0]->set_answer(failed_result());
    clock_.advance(1001ms);
    run(request());
    run(request());
    EXPECT_EQ(p[0]->calls, 6);
}

// A provider that bounds its verdict (a JWT's exp) caps the cache entry: an allow is never
// served from the cache after it.
TEST_F(authenticator_test, a_cached_allow_never_outlives_the_providers_valid_for) {
    auto bounded = allow_result();
    bounded.valid_for = 10s;
    auto p = build({{"A", bounded}}, {.cache_ttl = 60s});
    EXPECT_FALSE(run(request()).from_cache);
    clock_.advance(9s);
    EXPECT_TRUE(run(request()).from_cache);
    EXPECT_EQ(p[0]->calls, 1);
    clock_.advance(1s);  // the token's exp: the entry is gone, the provider decides again
    EXPECT_FALSE(run(request()).from_cache);
    EXPECT_EQ(p[0]->calls, 2);
    // Nothing left (an exp already passed, within the provider's leeway): not cached at all.
    bounded.valid_for = 0ms;
    p[0]->set_answer(bounded);
    clock_.advance(11s);
    EXPECT_FALSE(run(request()).from_cache);
    EXPECT_FALSE(run(request()).from_cache);
    EXPECT_EQ(p[0]->calls, 4);
}

TEST_F(authenticator_test, after_stop_no_verdict_is_delivered) {
    auto p = build({{"slow", std::nullopt}}, {.provider_timeout = 20ms});
    std::atomic<int> answers{0};
    auth_->authenticate(request(), [&](auth_decision) { ++answers; });
    ASSERT_EQ(p[0]->calls, 1);
    auth_->stop();
    p[0]->release_parked(allow_result());  // a late answer during shutdown
    auth_->authenticate(request("c2"), [&](auth_decision) { ++answers; });
    // The timeout of the first call fires after stop as well: drain the timer thread.
    std::promise<void> fired;
    timers_.schedule_after(40ms, [&] { fired.set_value(); });
    ASSERT_EQ(fired.get_future().wait_for(5s), std::future_status::ready);
    EXPECT_EQ(answers, 0);
    EXPECT_EQ(p[0]->calls, 1);  // nothing new was asked after stop
}

}  // namespace
}  // namespace starling::auth
