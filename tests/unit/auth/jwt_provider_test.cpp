#include "auth/jwt_provider.h"

#include "actor/timer_service.h"
#include "auth/authenticator.h"
#include "metrics/registry.h"

#include "unit/auth/jwt_test_support.h"
#include "unit/auth/provider_test_support.h"
#include "unit/auth/test_http_server.h"
#include <gtest/gtest.h>

#include <future>
#include <regex>

namespace starling::auth {
namespace {

using namespace std::chrono_literals;
using test::key_pair;
using test::sign;

const std::string secret = "0123456789abcdef0123456789abcdef-test";

auth_request make_request(std::optional<std::string> password, std::string client_id = "dev-1",
                          std::string username = "alice") {
    auth_request r;
    r.client_id = std::move(client_id);
    r.username = std::move(username);
    r.password = std::move(password);
    r.remote_address = "127.0.0.1:4000";
    return r;
}

using test::authenticate;
using test::matches;

class jwt_hmac : public ::testing::Test {
  protected:
    jwt_provider make(jwt_provider_options o = {}) {
        o.secret = secret;
        return jwt_provider(std::move(o), io_.executor(), clock_);
    }
    nlohmann::json claims(std::int64_t exp_in_s = 3600) const {
        return {{"sub", "dev-1"}, {"exp", clock_.epoch_seconds() + exp_in_s}};
    }

    test::io_thread io_;
    test::manual_clock clock_;
};

TEST_F(jwt_hmac, good_token_is_allowed_with_default_type_and_rules) {
    auto provider = make();
    const auto r = authenticate(provider, make_request(sign(JWT_ALG_HS256, secret, claims())));
    ASSERT_EQ(r.outcome, verdict::allow) << r.reason;
    EXPECT_EQ(r.type, client_type::device);
    ASSERT_TRUE(r.rules);
    EXPECT_TRUE(r.rules->allow_all);
}

TEST_F(jwt_hmac, hs384_and_hs512_are_accepted) {
    auto provider = make();
    EXPECT_EQ(authenticate(provider, make_request(sign(JWT_ALG_HS384, secret, claims()))).outcome,
              verdict::allow);
    EXPECT_EQ(authenticate(provider, make_request(sign(JWT_ALG_HS512, secret, claims()))).outcome,
              verdict::allow);
}

TEST_F(jwt_hmac, no_password_is_not_applicable) {
    auto provider = make();
    EXPECT_EQ(authenticate(provider, make_request(std::nullopt)).outcome, verdict::not_applicable);
}

TEST_F(jwt_hmac, wrong_secret_is_denied_as_bad_credentials) {
    auto provider = make();
    const auto token = sign(JWT_ALG_HS256, "another-secret-that-is-32-bytes-long!!", claims());
    const auto r = authenticate(provider, make_request(token));
    EXPECT_EQ(r.outcome, verdict::deny);
    EXPECT_TRUE(r.bad_credentials);
    EXPECT_NE(r.reason.find("signature"), std::string::npos) << r.reason;
}

TEST_F(jwt_hmac, tampered_payload_is_denied) {
    auto provider = make();
    const auto token = sign(JWT_ALG_HS256, secret, claims());
    const auto first = token.find('.');
    const auto second = token.find('.', first + 1);
    nlohmann::json forged = claims();
    forged["sub"] = "admin";
    const auto tampered =
        token.substr(0, first + 1) + test::base64url(forged.dump()) + token.substr(second);
    EXPECT_EQ(authenticate(provider, make_request(tampered)).outcome, verdict::deny);
}

TEST_F(jwt_hmac, garbage_and_alg_none_are_denied) {
    auto provider = make();
    for (const std::string bad : {"", "not-a-token", "a.b", "a.b.c.d", "!!!.???.***"}) {
        const auto r = authenticate(provider, make_request(bad));
        EXPECT_EQ(r.outcome, verdict::deny) << bad;
        EXPECT_TRUE(r.bad_credentials);
    }
    const auto none = test::unsigned_token({{"alg", "none"}, {"typ", "JWT"}}, claims());
    const auto r = authenticate(provider, make_request(none));
    EXPECT_EQ(r.outcome, verdict::deny);
    EXPECT_NE(r.reason.find("algorithm"), std::string::npos) << r.reason;
}

TEST_F(jwt_hmac, expired_token_is_denied_but_skew_is_tolerated) {
    auto provider = make();
    const auto expired = sign(JWT_ALG_HS256, secret, claims(-60));
    const auto r = authenticate(provider, make_request(expired));
    EXPECT_EQ(r.outcome, verdict::deny);
    EXPECT_NE(r.reason.find("expired"), std::string::npos) << r.reason;

    const auto just_expired = sign(JWT_ALG_HS256, secret, claims(-2));  // within 5 s leeway
    EXPECT_EQ(authenticate(provider, make_request(just_expired)).outcome, verdict::allow);

    // The same token ages out as the clock moves on.
    const auto token = sign(JWT_ALG_HS256, secret, claims(30));
    EXPECT_EQ(authenticate(provider, make_request(token)).outcome, verdict::allow);
    clock_.advance(40s);
    EXPECT_EQ(authenticate(provider, make_request(token)).outcome, verdict::deny);
}

TEST_F(jwt_hmac, token_before_nbf_is_denied) {
    auto provider = make();
    auto c = claims();
    c["nbf"] = clock_.epoch_seconds() + 60;
    const auto token = sign(JWT_ALG_HS256, secret, c);
    const auto r = authenticate(provider, make_request(token));
    EXPECT_EQ(r.outcome, verdict::deny);
    EXPECT_NE(r.reason.find("nbf"), std::string::npos) << r.reason;
    clock_.advance(61s);
    EXPECT_EQ(authenticate(provider, make_request(token)).outcome, verdict::allow);
}

TEST_F(jwt_hmac, non_numeric_exp_is_denied) {
    auto provider = make();
    auto c = claims();
    c["exp"] = "tomorrow";
    EXPECT_EQ(authenticate(provider, make_request(sign(JWT_ALG_HS256, secret, c))).outcome,
              verdict::deny);
}

TEST_F(jwt_hmac, auth_claims_with_placeholders_must_match) {
    jwt_provider_options o;
    o.auth_claims = {{"sub", "${clientId}"}, {"user", "${username}"}, {"tenant", "acme"}};
    auto provider = make(o);
    auto c = claims();
    c["user"] = "alice";
    c["tenant"] = "acme";
    const auto token = sign(JWT_ALG_HS256, secret, c);

    EXPECT_EQ(authenticate(provider, make_request(token, "dev-1", "alice")).outcome,
              verdict::allow);

    const auto other_client = authenticate(provider, make_request(token, "dev-2", "alice"));
    EXPECT_EQ(other_client.outcome, verdict::deny);
    EXPECT_FALSE(other_client.bad_credentials);  // valid token, not for this client
    EXPECT_NE(other_client.reason.find("'sub'"), std::string::npos) << other_client.reason;

    c.erase("tenant");
    const auto missing =
        authenticate(provider, make_request(sign(JWT_ALG_HS256, secret, c), "dev-1", "alice"));
    EXPECT_EQ(missing.outcome, verdict::deny);
    EXPECT_NE(missing.reason.find("missing"), std::string::npos) << missing.reason;
}

TEST_F(jwt_hmac, client_type_claims_flip_the_default_type) {
    jwt_provider_options o;
    o.client_type_claims = {{"role", "app"}};
    auto provider = make(o);
    auto c = claims();
    c["role"] = "app";
    const auto app = authenticate(provider, make_request(sign(JWT_ALG_HS256, secret, c)));
    ASSERT_EQ(app.outcome, verdict::allow);
    EXPECT_EQ(app.type, client_type::application);

    c["role"] = "sensor";
    const auto dev = authenticate(provider, make_request(sign(JWT_ALG_HS256, secret, c)));
    ASSERT_EQ(dev.outcome, verdict::allow);
    EXPECT_EQ(dev.type, client_type::device);

    jwt_provider_options app_default;
    app_default.default_client_type = client_type::application;
    auto provider2 = make(app_default);
    const auto plain = authenticate(provider2, make_request(sign(JWT_ALG_HS256, secret, claims())));
    EXPECT_EQ(plain.type, client_type::application);
}

TEST_F(jwt_hmac, rule_claims_override_configured_rules_per_side) {
    jwt_provider_options o;
    o.pub_auth_rule_claim = "pub";
    o.sub_auth_rule_claim = "sub_rules";
    o.auth_rules.publish = {"configured/.*"};
    o.auth_rules.subscribe = {"configured/.*"};
    auto provider = make(o);

    auto c = claims();
    c["pub"] = {"devices/dev-1/.*", "status"};
    const auto r = authenticate(provider, make_request(sign(JWT_ALG_HS256, secret, c)));
    ASSERT_EQ(r.outcome, verdict::allow) << r.reason;
    ASSERT_TRUE(r.rules);
    EXPECT_TRUE(matches(r.rules->publish, "devices/dev-1/temp"));
    EXPECT_TRUE(matches(r.rules->publish, "status"));
    EXPECT_FALSE(matches(r.rules->publish, "configured/x"));
    // No sub claim: the configured rules apply on that side.
    EXPECT_TRUE(matches(r.rules->subscribe, "configured/x"));
    EXPECT_FALSE(matches(r.rules->subscribe, "devices/dev-1/temp"));

    const auto none = authenticate(provider, make_request(sign(JWT_ALG_HS256, secret, claims())));
    ASSERT_EQ(none.outcome, verdict::allow);
    EXPECT_TRUE(matches(none.rules->publish, "configured/x"));
    EXPECT_FALSE(matches(none.rules->publish, "other"));

    c["sub_rules"] = "([unclosed";
    const auto bad = authenticate(provider, make_request(sign(JWT_ALG_HS256, secret, c)));
    EXPECT_EQ(bad.outcome, verdict::deny);
    EXPECT_FALSE(bad.bad_credentials);

    c["sub_rules"] = 42;
    EXPECT_EQ(authenticate(provider, make_request(sign(JWT_ALG_HS256, secret, c))).outcome,
              verdict::deny);
}

class jwt_pem : public ::testing::Test {
  protected:
    jwt_provider make(const std::string& public_pem) {
        jwt_provider_options o;
        o.algorithm = jwt_sign_algorithm::pem_key;
        o.public_pem_key = public_pem;
        return jwt_provider(std::move(o), io_.executor(), clock_);
    }
    nlohmann::json claims() const { return {{"exp", clock_.epoch_seconds() + 600}}; }

    test::io_thread io_;
    test::manual_clock clock_;
};

TEST_F(jwt_pem, rs256_token_is_verified_with_the_public_key) {
    const auto keys = key_pair::rsa();
    auto provider = make(keys.public_pem());
    EXPECT_EQ(
        authenticate(provider, make_request(sign(JWT_ALG_RS256, keys.private_pem(), claims())))
            .outcome,
        verdict::allow);
    EXPECT_EQ(
        authenticate(provider, make_request(sign(JWT_ALG_RS512, keys.private_pem(), claims())))
            .outcome,
        verdict::allow);

    const auto other = key_pair::rsa();
    EXPECT_EQ(
        authenticate(provider, make_request(sign(JWT_ALG_RS256, other.private_pem(), claims())))
            .outcome,
        verdict::deny);
}

TEST_F(jwt_pem, es256_token_is_verified_with_the_public_key) {
    const auto keys = key_pair::ec();
    auto provider = make(keys.public_pem());
    const auto r =
        authenticate(provider, make_request(sign(JWT_ALG_ES256, keys.private_pem(), claims())));
    EXPECT_EQ(r.outcome, verdict::allow) << r.reason;

    const auto other = key_pair::ec();
    EXPECT_EQ(
        authenticate(provider, make_request(sign(JWT_ALG_ES256, other.private_pem(), claims())))
            .outcome,
        verdict::deny);
}

TEST_F(jwt_pem, es256_signature_of_the_wrong_form_is_denied) {
    const auto keys = key_pair::ec();
    auto provider = make(keys.public_pem());
    const auto token = sign(JWT_ALG_ES256, keys.private_pem(), claims());
    const auto dot = token.rfind('.');
    auto raw = base64url_decode(token.substr(dot + 1));
    ASSERT_TRUE(raw);
    ASSERT_EQ(raw->size(), 64u);  // JWS form: R || S, 32 bytes each

    const auto truncated = token.substr(0, dot + 1) + test::base64url(raw->substr(0, 63));
    EXPECT_EQ(authenticate(provider, make_request(truncated)).outcome, verdict::deny);

    std::string flipped = *raw;
    flipped[40] = static_cast<char>(flipped[40] ^ 0x01);
    const auto bad_s = token.substr(0, dot + 1) + test::base64url(flipped);
    EXPECT_EQ(authenticate(provider, make_request(bad_s)).outcome, verdict::deny);

    // A token claiming ES384 for a P-256 key is refused before any signature check.
    auto header = nlohmann::json{{"alg", "ES384"}, {"typ", "JWT"}};
    const auto wrong_alg = test::unsigned_token(header, claims(), test::base64url(*raw));
    EXPECT_EQ(authenticate(provider, make_request(wrong_alg)).outcome, verdict::deny);
}

TEST_F(jwt_pem, public_key_used_as_hmac_secret_is_refused) {
    // The classic algorithm confusion: HS256 "signed" with the public key everyone knows.
    const auto keys = key_pair::rsa();
    auto provider = make(keys.public_pem());
    const auto forged = sign(JWT_ALG_HS256, keys.public_pem(), claims());
    const auto r = authenticate(provider, make_request(forged));
    EXPECT_EQ(r.outcome, verdict::deny);
    EXPECT_NE(r.reason.find("algorithm"), std::string::npos) << r.reason;
}

TEST(jwt_provider_options, validation_names_the_key) {
    jwt_provider_options o;
    ASSERT_TRUE(o.validation_error().has_value()) << "HMAC without a secret";
    EXPECT_NE(o.validation_error()->find("secret"), std::string::npos);
    o.secret = secret;
    EXPECT_FALSE(o.validation_error().has_value());

    o.secret = "short";
    ASSERT_TRUE(o.validation_error().has_value());
    EXPECT_NE(o.validation_error()->find("secret"), std::string::npos);

    o = {};
    o.algorithm = jwt_sign_algorithm::pem_key;
    o.public_pem_key = "-----BEGIN PUBLIC KEY-----\nnope\n-----END PUBLIC KEY-----\n";
    EXPECT_NE(o.validation_error()->find("publicPemKey"), std::string::npos);

    o = {};
    o.verifier = jwt_verifier_type::jwks;
    o.jwks.endpoint = "http://127.0.0.1:1/jwks";
    o.jwks.refresh_interval = 60s;
    EXPECT_NE(o.validation_error()->find("refreshInterval"), std::string::npos);
    o.jwks.refresh_interval = 300s;
    EXPECT_FALSE(o.validation_error().has_value());
    o.jwks.endpoint = "file:///etc/jwks.json";
    EXPECT_NE(o.validation_error()->find("endpoint"), std::string::npos);

    test::io_thread io;
    o = {};
    o.secret = "short";
    EXPECT_THROW(jwt_provider(o, io.executor()), std::invalid_argument);
}

// TBMQ's published example secret passes the length check but anyone can sign with it.
TEST(jwt_provider_options, the_example_secret_is_refused) {
    jwt_provider_options o;
    o.secret = std::string(jwt_example_secret);
    ASSERT_TRUE(o.validation_error().has_value());
    EXPECT_NE(o.validation_error()->find("jwtSignAlgorithmConfiguration.secret"),
              std::string::npos);
    EXPECT_NE(o.validation_error()->find("example"), std::string::npos);
    test::io_thread io;
    EXPECT_THROW(jwt_provider(o, io.executor()), std::invalid_argument);
    // The same bytes as a PEM verifier's unused secret do not matter.
    o.verifier = jwt_verifier_type::jwks;
    o.jwks.endpoint = "http://127.0.0.1:1/jwks";
    EXPECT_FALSE(o.validation_error().has_value());
}

TEST_F(jwt_hmac, token_without_exp_is_denied_unless_allowed) {
    auto provider = make();
    const nlohmann::json forever = {{"sub", "dev-1"}};
    const auto r = authenticate(provider, make_request(sign(JWT_ALG_HS256, secret, forever)));
    EXPECT_EQ(r.outcome, verdict::deny);
    EXPECT_TRUE(r.bad_credentials);
    EXPECT_NE(r.reason.find("no exp"), std::string::npos) << r.reason;

    jwt_provider_options o;
    o.allow_tokens_without_exp = true;
    auto lenient = make(o);
    const auto ok = authenticate(lenient, make_request(sign(JWT_ALG_HS256, secret, forever)));
    ASSERT_EQ(ok.outcome, verdict::allow) << ok.reason;
    EXPECT_FALSE(ok.valid_for.has_value()) << "no exp, no bound of the provider's own";
    // An exp that is there is still checked.
    EXPECT_EQ(authenticate(lenient, make_request(sign(JWT_ALG_HS256, secret, claims(-60)))).outcome,
              verdict::deny);
}

TEST_F(jwt_hmac, an_allow_is_valid_until_the_tokens_exp) {
    auto provider = make();
    const auto r = authenticate(provider, make_request(sign(JWT_ALG_HS256, secret, claims(600))));
    ASSERT_EQ(r.outcome, verdict::allow) << r.reason;
    ASSERT_TRUE(r.valid_for.has_value());
    // exp is whole seconds, the clock is not: between 599 and 600 s left.
    EXPECT_GT(*r.valid_for, 599s);
    EXPECT_LE(*r.valid_for, 600s);
    // Past exp but within the leeway: allowed, with nothing left to cache.
    const auto late = authenticate(provider, make_request(sign(JWT_ALG_HS256, secret, claims(-2))));
    ASSERT_EQ(late.outcome, verdict::allow);
    EXPECT_EQ(late.valid_for, 0ms);
}

// End to end with the authenticator's cache (TTL 60 s) and the manual clock: a token that
// expires in 10 s is served from the cache until then, never after.
TEST_F(jwt_hmac, the_authenticators_cache_ends_at_the_tokens_exp) {
    actor::timer_service timers{"jwt-cache-test"};
    timers.start();
    metrics::registry metrics;
    std::vector<std::unique_ptr<auth_provider>> providers;
    jwt_provider_options o;
    o.secret = secret;
    providers.push_back(std::make_unique<jwt_provider>(std::move(o), io_.executor(), clock_));
    authenticator chain({.cache_ttl = 60s}, std::move(providers), timers, metrics.auth(), clock_);
    const auto token = sign(JWT_ALG_HS256, secret, claims(10));
    auto run = [&] {
        std::promise<auth_decision> p;
        auto f = p.get_future();
        chain.authenticate(make_request(token), [&p](auth_decision d) { p.set_value(d); });
        EXPECT_EQ(f.wait_for(5s), std::future_status::ready);
        return f.get();
    };
    auto d = run();
    ASSERT_EQ(d.result.outcome, verdict::allow) << d.result.reason;
    EXPECT_FALSE(d.from_cache);
    clock_.advance(8s);
    EXPECT_TRUE(run().from_cache);
    clock_.advance(3s);  // 11 s: past exp (still inside the 5 s leeway)
    d = run();
    EXPECT_FALSE(d.from_cache) << "a cached allow outlived the token's exp";
    EXPECT_EQ(d.result.outcome, verdict::allow);
    clock_.advance(5s);  // 16 s: past exp + leeway
    d = run();
    EXPECT_FALSE(d.from_cache);
    EXPECT_EQ(d.result.outcome, verdict::deny);
    chain.stop();
    timers.stop();
}

}  // namespace
}  // namespace starling::auth
