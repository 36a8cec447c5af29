#include "auth/jwks_cache.h"

#include "auth/jwt_provider.h"

#include "unit/auth/jwt_test_support.h"
#include "unit/auth/test_http_server.h"
#include <gtest/gtest.h>

#include <future>
#include <mutex>

namespace starling::auth {
namespace {

using namespace std::chrono_literals;
using test::key_pair;
using test::scripted_response;
using test::sign;

// A JWKS endpoint whose document (or status) the test replaces at will.
class jwks_endpoint {
  public:
    jwks_endpoint()
        : server_([this](const test::recorded_request&) -> std::optional<scripted_response> {
              std::lock_guard lock(mutex_);
              return scripted_response{status_, document_.dump()};
          }) {}

    void publish(std::vector<nlohmann::json> keys) {
        std::lock_guard lock(mutex_);
        document_ = {{"keys", keys}};
        status_ = 200;
    }
    void fail_with(unsigned status) {
        std::lock_guard lock(mutex_);
        status_ = status;
    }
    std::string url() const { return server_.url("/.well-known/jwks.json"); }
    std::size_t requests() const { return server_.requests().size(); }

  private:
    std::mutex mutex_;
    nlohmann::json document_ = {{"keys", nlohmann::json::array()}};
    unsigned status_ = 200;
    test::test_http_server server_;
};

auth_request with_token(std::string token) {
    auth_request r;
    r.client_id = "dev-1";
    r.password = std::move(token);
    return r;
}

auth_result authenticate(jwt_provider& provider, const auth_request& request) {
    std::promise<auth_result> promise;
    auto future = promise.get_future();
    provider.authenticate(request, [&promise](auth_result r) { promise.set_value(std::move(r)); });
    EXPECT_EQ(future.wait_for(10s), std::future_status::ready) << "provider never answered";
    return future.get();
}

class jwks_provider : public ::testing::Test {
  protected:
    std::unique_ptr<jwt_provider> make() {
        jwt_provider_options o;
        o.verifier = jwt_verifier_type::jwks;
        o.jwks.endpoint = endpoint_.url();
        o.jwks.headers = {{"X-Tenant", "acme"}};
        o.jwks.refresh_interval = 300s;
        o.jwks.unknown_kid_min_interval = 30s;
        o.jwks.fetch_timeout = 2000ms;
        auto p = std::make_unique<jwt_provider>(std::move(o), io_.executor(), clock_);
        p->start();
        return p;
    }
    nlohmann::json claims() const { return {{"exp", clock_.epoch_seconds() + 600}}; }

    test::io_thread io_;
    test::manual_clock clock_;
    jwks_endpoint endpoint_;
};

TEST_F(jwks_provider, unknown_kid_triggers_a_refresh_at_most_once_per_interval) {
    const auto a = key_pair::rsa();
    const auto b = key_pair::ec();
    endpoint_.publish({a.jwk("key-a")});
    auto provider = make();
    const auto* cache = provider->jwks_for_test();

    // The first token waits for the start-up fetch.
    const auto first = authenticate(
        *provider, with_token(sign(JWT_ALG_RS256, a.private_pem(), claims(), "key-a")));
    ASSERT_EQ(first.outcome, verdict::allow) << first.reason;
    EXPECT_EQ(cache->fetch_count(), 1u);

    // Later the identity provider rotates in key-b: a token signed with it makes the cache
    // refetch (the start-up fetch is more than unknown_kid_min_interval ago).
    endpoint_.publish({a.jwk("key-a"), b.jwk("key-b")});
    clock_.advance(31s);
    const auto rotated = authenticate(
        *provider, with_token(sign(JWT_ALG_ES256, b.private_pem(), claims(), "key-b")));
    ASSERT_EQ(rotated.outcome, verdict::allow) << rotated.reason;
    EXPECT_EQ(cache->fetch_count(), 2u);
    EXPECT_EQ(cache->key_count(), 2u);

    // A made-up kid right after a fetch: no new request to the endpoint.
    const auto c = key_pair::rsa();
    const auto unknown = sign(JWT_ALG_RS256, c.private_pem(), claims(), "key-c");
    const auto denied = authenticate(*provider, with_token(unknown));
    EXPECT_EQ(denied.outcome, verdict::deny);
    EXPECT_NE(denied.reason.find("unknown kid"), std::string::npos) << denied.reason;
    EXPECT_EQ(cache->fetch_count(), 2u);

    // Once the interval has passed, an unknown kid may refetch again.
    clock_.advance(31s);
    EXPECT_EQ(authenticate(*provider, with_token(unknown)).outcome, verdict::deny);
    EXPECT_EQ(cache->fetch_count(), 3u);
    EXPECT_EQ(endpoint_.requests(), 3u);

    // Known keys are answered from the cache without a fetch.
    EXPECT_EQ(
        authenticate(*provider, with_token(sign(JWT_ALG_RS256, a.private_pem(), claims(), "key-a")))
            .outcome,
        verdict::allow);
    EXPECT_EQ(cache->fetch_count(), 3u);
}

TEST_F(jwks_provider, kid_of_one_key_does_not_verify_a_token_signed_by_another) {
    const auto a = key_pair::rsa();
    const auto b = key_pair::rsa();
    endpoint_.publish({a.jwk("key-a"), b.jwk("key-b")});
    auto provider = make();
    const auto r = authenticate(
        *provider, with_token(sign(JWT_ALG_RS256, b.private_pem(), claims(), "key-a")));
    EXPECT_EQ(r.outcome, verdict::deny);
    EXPECT_TRUE(r.bad_credentials);
}

TEST_F(jwks_provider, token_without_kid_uses_the_only_key) {
    const auto a = key_pair::ec();
    endpoint_.publish({a.jwk("only")});
    auto provider = make();
    EXPECT_EQ(
        authenticate(*provider, with_token(sign(JWT_ALG_ES256, a.private_pem(), claims()))).outcome,
        verdict::allow);
}

TEST_F(jwks_provider, unreachable_endpoint_fails_closed_as_unavailable) {
    endpoint_.fail_with(503);
    auto provider = make();
    const auto a = key_pair::rsa();
    const auto r =
        authenticate(*provider, with_token(sign(JWT_ALG_RS256, a.private_pem(), claims(), "k")));
    EXPECT_EQ(r.outcome, verdict::deny);
    EXPECT_TRUE(is_provider_unavailable(r)) << r.reason;
    EXPECT_NE(r.reason.find("503"), std::string::npos) << r.reason;
}

TEST(jwk, rsa_and_ec_keys_convert_and_name_their_algorithms) {
    const auto rsa = key_pair::rsa();
    auto k = key_from_jwk(rsa.jwk("r1"));
    ASSERT_TRUE(k);
    EXPECT_EQ(k->kid, "r1");
    EXPECT_EQ(k->family, key_family::rsa);
    EXPECT_EQ(k->pem, rsa.public_pem());

    const auto ec = key_pair::ec();
    k = key_from_jwk(ec.jwk("e1"));
    ASSERT_TRUE(k);
    EXPECT_EQ(k->family, key_family::ec);
    EXPECT_EQ(k->algorithms, std::vector<std::string>{"ES256"});
    EXPECT_EQ(k->pem, ec.public_pem());
}

TEST(jwk, unusable_keys_are_rejected_with_a_reason) {
    std::string why;
    EXPECT_FALSE(key_from_jwk({{"kty", "oct"}, {"k", "c2VjcmV0"}}, &why));
    EXPECT_NE(why.find("kty"), std::string::npos);

    const auto ec = key_pair::ec();
    auto j = ec.jwk("e1");
    j["crv"] = "P-192";
    EXPECT_FALSE(key_from_jwk(j, &why));
    EXPECT_NE(why.find("crv"), std::string::npos);

    j = ec.jwk("e1");
    j["x"] = "AAAA";
    EXPECT_FALSE(key_from_jwk(j, &why));

    j = ec.jwk("e1");
    j["use"] = "enc";
    EXPECT_FALSE(key_from_jwk(j, &why));

    // Members of the wrong JSON type are refused with a reason, never thrown.
    j = ec.jwk("e1");
    j["kty"] = 7;
    EXPECT_FALSE(key_from_jwk(j, &why));
    j = ec.jwk("e1");
    j["crv"] = nlohmann::json::array();
    EXPECT_FALSE(key_from_jwk(j, &why));
    j = ec.jwk("e1");
    j["use"] = false;
    EXPECT_FALSE(key_from_jwk(j, &why));
    j = ec.jwk("e1");
    j["kid"] = 1;
    auto unnamed = key_from_jwk(j, &why);
    ASSERT_TRUE(unnamed);
    EXPECT_EQ(unnamed->kid, "");

    const auto rsa = key_pair::rsa();
    j = rsa.jwk("r1");
    j["alg"] = "ES256";
    EXPECT_FALSE(key_from_jwk(j, &why));
    j["alg"] = "RS256";
    auto k = key_from_jwk(j, &why);
    ASSERT_TRUE(k);
    EXPECT_EQ(k->algorithms, std::vector<std::string>{"RS256"});

    EXPECT_FALSE(keys_from_jwks("[]", &why));
    auto keys = keys_from_jwks(
        nlohmann::json{{"keys", {rsa.jwk("r1"), nlohmann::json{{"kty", "oct"}}}}}.dump());
    ASSERT_TRUE(keys);
    EXPECT_EQ(keys->size(), 1u);
}

}  // namespace
}  // namespace starling::auth
