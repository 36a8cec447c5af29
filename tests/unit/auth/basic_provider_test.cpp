#include "auth/basic_provider.h"

#include "adapters/embedded/sqlite_metadata_store.h"
#include "auth/credentials.h"
#include "auth/password.h"

#include "auth_test_support.h"
#include "support/temp_dir.h"
#include <gtest/gtest.h>

#include <future>

namespace starling::auth {
namespace {

using namespace std::chrono_literals;

class basic_provider_test : public ::testing::Test {
  protected:
    basic_provider_test() {
        adapters::embedded::sqlite_metadata_store::options opts;
        opts.data_dir = dir_.path();
        auto store = adapters::embedded::sqlite_metadata_store::open(opts, clock_);
        EXPECT_TRUE(store);
        store_ = std::move(store.value());
    }
    ~basic_provider_test() override {
        pool_.stop();
        store_->stop();
    }

    void add(credentials_spec spec) {
        std::string why;
        auto row = to_credentials_row(spec, &why, 4);
        ASSERT_TRUE(row) << why;
        std::promise<status> saved;
        store_->save_credentials(std::move(*row), [&](status st) { saved.set_value(st); });
        ASSERT_TRUE(saved.get_future().get());
    }

    auth_result run(basic_auth_strategy strategy, std::string client_id,
                    std::optional<std::string> username, std::optional<std::string> password) {
        basic_provider provider(*store_, pool_, strategy, clock_);
        std::promise<auth_result> p;
        auto f = p.get_future();
        provider.authenticate(auth_request{.client_id = std::move(client_id),
                                           .username = std::move(username),
                                           .password = std::move(password)},
                              [&p](auth_result r) { p.set_value(std::move(r)); });
        EXPECT_EQ(f.wait_for(10s), std::future_status::ready);
        return f.get();
    }

    starling::testing::temp_dir dir_;
    testing::manual_clock clock_;
    worker_pool pool_{"auth-test", 2, 100};
    std::unique_ptr<adapters::embedded::sqlite_metadata_store> store_;
};

TEST_F(basic_provider_test, right_password_allows_with_rules_and_type) {
    add({.name = "alice",
         .type = client_type::application,
         .credentials_type = "MQTT_BASIC",
         .username = "alice",
         .password = "pw",
         .publish_patterns = std::vector<std::string>{"alice/.*"}});
    auto r = run(basic_auth_strategy::both, "any-client", "alice", "pw");
    EXPECT_EQ(r.outcome, verdict::allow);
    EXPECT_EQ(r.type, client_type::application);
    ASSERT_TRUE(r.rules);
    EXPECT_TRUE(r.rules->may_publish("alice/x"));
    EXPECT_FALSE(r.rules->may_publish("bob/x"));

    r = run(basic_auth_strategy::both, "any-client", "alice", "wrong");
    EXPECT_EQ(r.outcome, verdict::deny);
    EXPECT_TRUE(r.bad_credentials);
    r = run(basic_auth_strategy::both, "any-client", "alice", std::nullopt);
    EXPECT_EQ(r.outcome, verdict::deny);
}

TEST_F(basic_provider_test, unknown_credentials_pass_to_the_next_provider) {
    auto r = run(basic_auth_strategy::both, "c", "nobody", "pw");
    EXPECT_EQ(r.outcome, verdict::not_applicable);
}

TEST_F(basic_provider_test, strategy_chooses_the_ids_looked_up) {
    add({.name = "by-id", .credentials_type = "MQTT_BASIC", .client_id = "dev1", .password = "p1"});
    add({.name = "by-user", .credentials_type = "MQTT_BASIC", .username = "bob", .password = "p2"});
    add({.name = "mixed",
         .credentials_type = "MQTT_BASIC",
         .client_id = "dev2",
         .username = "carol",
         .password = "p3"});
    EXPECT_EQ(run(basic_auth_strategy::client_id, "dev1", std::nullopt, "p1").outcome,
              verdict::allow);
    EXPECT_EQ(run(basic_auth_strategy::username, "dev1", std::nullopt, "p1").outcome,
              verdict::not_applicable);
    EXPECT_EQ(run(basic_auth_strategy::username, "x", "bob", "p2").outcome, verdict::allow);
    EXPECT_EQ(run(basic_auth_strategy::client_id, "x", "bob", "p2").outcome,
              verdict::not_applicable);
    EXPECT_EQ(run(basic_auth_strategy::both, "dev2", "carol", "p3").outcome, verdict::allow);
    // mixed credentials need both halves.
    EXPECT_EQ(run(basic_auth_strategy::both, "other", "carol", "p3").outcome,
              verdict::not_applicable);
}

TEST_F(basic_provider_test, credentials_without_password_accept_any) {
    add({.name = "open", .credentials_type = "MQTT_BASIC", .client_id = "open-dev"});
    EXPECT_EQ(run(basic_auth_strategy::both, "open-dev", std::nullopt, std::nullopt).outcome,
              verdict::allow);
}

TEST_F(basic_provider_test, credentials_bound_to_client_ids_refuse_others) {
    add({.name = "bob",
         .credentials_type = "MQTT_BASIC",
         .username = "bob",
         .password = "pw",
         .client_id_pattern = "bob(-.*)?"});
    EXPECT_EQ(run(basic_auth_strategy::both, "bob", "bob", "pw").outcome, verdict::allow);
    EXPECT_EQ(run(basic_auth_strategy::both, "bob-phone", "bob", "pw").outcome, verdict::allow);
    // The right password with another client id: not authorized, never "not applicable"
    // (which could fall through to anonymous access).
    for (const char* other : {"alice", "xbob", "bob2", ""}) {
        auto r = run(basic_auth_strategy::both, other, "bob", "pw");
        EXPECT_EQ(r.outcome, verdict::deny) << other;
        EXPECT_FALSE(r.bad_credentials) << other;
        EXPECT_NE(r.reason.find("clientIdPattern"), std::string::npos) << r.reason;
    }
    // A wrong password is still bad credentials, whatever the id.
    auto r = run(basic_auth_strategy::both, "alice", "bob", "wrong");
    EXPECT_EQ(r.outcome, verdict::deny);
    EXPECT_TRUE(r.bad_credentials);
    // The verdict recorded without bcrypt (a password verified within the minute) is bound
    // the same way.
    EXPECT_EQ(run(basic_auth_strategy::both, "bob", "bob", "pw").outcome, verdict::allow);
    EXPECT_EQ(run(basic_auth_strategy::both, "alice", "bob", "pw").outcome, verdict::deny);
}

TEST_F(basic_provider_test, store_failure_is_a_failure_not_a_denial) {
    store_->stop();  // every later call fails
    auto r = run(basic_auth_strategy::both, "c", "u", "pw");
    EXPECT_TRUE(r.failed);
    EXPECT_FALSE(r.bad_credentials);
}

}  // namespace
}  // namespace starling::auth
