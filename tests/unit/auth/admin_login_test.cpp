// The management API's admin login: token signing and checking (admin_tokens), the users kept
// in the metadata store, the first admin, and the per-address limit on failed logins
// (admin_users) — against the real SQLite store.

#include "adapters/embedded/sqlite_metadata_store.h"
#include "auth/admin_tokens.h"
#include "auth/admin_users.h"
#include "auth/base64url.h"
#include "auth/password.h"

#include "auth_test_support.h"
#include "support/temp_dir.h"
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <future>

namespace starling::auth {
namespace {

using namespace std::chrono_literals;

const std::string key(32, 'k');
constexpr std::int64_t now = 1'764'000'000;

admin_tokens signer(std::string signing_key = key, std::string issuer = "starling") {
    return admin_tokens(admin_token_options{.signing_key = std::move(signing_key),
                                            .issuer = std::move(issuer),
                                            .access_ttl = 100s,
                                            .refresh_ttl = 1000s});
}

std::string part(const std::string& token, int index) {
    std::size_t begin = 0;
    for (int i = 0; i < index; ++i) {
        begin = token.find('.', begin) + 1;
    }
    return token.substr(begin, token.find('.', begin) - begin);
}

TEST(base64url, round_trips_every_length) {
    std::string bytes;
    for (int n = 0; n < 70; ++n) {
        EXPECT_EQ(base64url_decode(base64url_encode(bytes)), bytes) << n;
        bytes.push_back(static_cast<char>(n * 37));
    }
    EXPECT_EQ(base64url_encode("\xfb\xff"), "-_8");  // the URL-safe alphabet, no padding
}

TEST(admin_tokens, an_issued_token_verifies_as_its_own_kind_only) {
    const auto tokens = signer();
    const auto access = tokens.issue("ops", admin_token_kind::access, now);
    const auto refresh = tokens.issue("ops", admin_token_kind::refresh, now);
    auto claims = tokens.verify(access, admin_token_kind::access, now);
    ASSERT_TRUE(claims);
    EXPECT_EQ(claims->subject, "ops");
    EXPECT_EQ(claims->issued_at_s, now);
    EXPECT_EQ(claims->expires_at_s, now + 100);
    EXPECT_EQ(tokens.verify(refresh, admin_token_kind::refresh, now)->expires_at_s, now + 1000);
    EXPECT_FALSE(tokens.verify(access, admin_token_kind::refresh, now));
    EXPECT_FALSE(tokens.verify(refresh, admin_token_kind::access, now));
    EXPECT_NE(tokens.issue("ops", admin_token_kind::access, now), access);  // distinct jti
}

TEST(admin_tokens, expiry_is_exclusive) {
    const auto tokens = signer();
    const auto access = tokens.issue("ops", admin_token_kind::access, now);
    EXPECT_TRUE(tokens.verify(access, admin_token_kind::access, now + 99));
    EXPECT_FALSE(tokens.verify(access, admin_token_kind::access, now + 100));
}

TEST(admin_tokens, another_key_or_issuer_is_refused) {
    const auto access = signer().issue("ops", admin_token_kind::access, now);
    EXPECT_FALSE(signer(std::string(32, 'x')).verify(access, admin_token_kind::access, now));
    EXPECT_FALSE(signer(key, "someone-else").verify(access, admin_token_kind::access, now));
}

TEST(admin_tokens, any_changed_part_is_refused) {
    const auto tokens = signer();
    const auto access = tokens.issue("ops", admin_token_kind::access, now);
    // Claims rewritten (subject changed) with the old signature.
    auto claims = nlohmann::json::parse(*base64url_decode(part(access, 1)));
    claims["sub"] = "root";
    const auto forged =
        part(access, 0) + "." + base64url_encode(claims.dump()) + "." + part(access, 2);
    EXPECT_FALSE(tokens.verify(forged, admin_token_kind::access, now));
    // alg "none" with no signature.
    const auto none =
        base64url_encode(R"({"alg":"none","typ":"JWT"})") + "." + part(access, 1) + ".";
    EXPECT_FALSE(tokens.verify(none, admin_token_kind::access, now));
    // Every single-character change of the token.
    for (std::size_t i = 0; i < access.size(); ++i) {
        auto changed = access;
        changed[i] = changed[i] == 'A' ? 'B' : 'A';
        if (changed != access) {
            EXPECT_FALSE(tokens.verify(changed, admin_token_kind::access, now)) << i;
        }
    }
    for (const char* junk : {"", ".", "..", "a.b.c", "a.b.c.d", "...."}) {
        EXPECT_FALSE(tokens.verify(junk, admin_token_kind::access, now)) << junk;
    }
}

// What a holder of the key could make by hand: signed correctly, but not what issue() makes.
std::string hand_signed(const nlohmann::json& header, const nlohmann::json& claims) {
    const auto input = base64url_encode(header.dump()) + "." + base64url_encode(claims.dump());
    unsigned char mac[EVP_MAX_MD_SIZE];
    unsigned int mac_len = 0;
    HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()),
         reinterpret_cast<const unsigned char*>(input.data()), input.size(), mac, &mac_len);
    return input + "." +
           base64url_encode(std::string_view(reinterpret_cast<const char*>(mac), mac_len));
}

TEST(admin_tokens, a_signed_token_without_the_required_claims_is_refused) {
    const auto tokens = signer();
    const nlohmann::json header = {{"alg", "HS256"}, {"typ", "JWT"}};
    const nlohmann::json full = {{"sub", "ops"},
                                 {"scopes", {"SYS_ADMIN"}},
                                 {"iss", "starling"},
                                 {"iat", now},
                                 {"exp", now + 100}};
    ASSERT_TRUE(tokens.verify(hand_signed(header, full), admin_token_kind::access, now));
    for (const char* name : {"sub", "scopes", "iss", "iat", "exp"}) {
        auto claims = full;
        claims.erase(name);
        EXPECT_FALSE(tokens.verify(hand_signed(header, claims), admin_token_kind::access, now))
            << name;
    }
    for (const auto& [name, value] : std::vector<std::pair<std::string, nlohmann::json>>{
             {"sub", ""},
             {"scopes", nlohmann::json::array({"SYS_ADMIN", "REFRESH_TOKEN"})},
             {"exp", "later"}}) {
        auto claims = full;
        claims[name] = value;
        EXPECT_FALSE(tokens.verify(hand_signed(header, claims), admin_token_kind::access, now))
            << name;
    }
    EXPECT_FALSE(
        tokens.verify(hand_signed({{"alg", "HS512"}}, full), admin_token_kind::access, now));
}

class admin_users_test : public ::testing::Test {
  protected:
    admin_users_test() {
        adapters::embedded::sqlite_metadata_store::options opts;
        opts.data_dir = dir_.path();
        auto store = adapters::embedded::sqlite_metadata_store::open(opts, clock_);
        EXPECT_TRUE(store);
        store_ = std::move(store.value());
    }
    ~admin_users_test() override {
        pool_.stop();
        store_->stop();
    }

    admin_users make(std::vector<bandwidth> limits = {}) {
        return admin_users(*store_, pool_, std::move(limits), clock_);
    }
    static bool ensure(admin_users& users, const std::string& name, const std::string& password) {
        std::promise<result<bool>> made;
        users.ensure_first_admin(name, password, [&](result<bool> r) { made.set_value(r); });
        auto r = made.get_future().get();
        EXPECT_TRUE(r);
        return r && r.value();
    }
    static login_outcome login(admin_users& users, const std::string& address,
                               const std::string& name, const std::string& password) {
        std::promise<login_outcome> outcome;
        users.check_login(address, name, password, [&](login_outcome o) { outcome.set_value(o); });
        return outcome.get_future().get();
    }
    static bool exists(admin_users& users, const std::string& name) {
        std::promise<result<bool>> known;
        users.exists(name, [&](result<bool> r) { known.set_value(r); });
        auto r = known.get_future().get();
        EXPECT_TRUE(r);
        return r && r.value();
    }

    starling::testing::temp_dir dir_;
    testing::manual_clock clock_;
    worker_pool pool_{"admin-test", 2, 100};
    std::unique_ptr<adapters::embedded::sqlite_metadata_store> store_;
};

TEST_F(admin_users_test, the_first_admin_is_made_once_and_logs_in) {
    auto users = make();
    EXPECT_FALSE(exists(users, "ops"));
    EXPECT_TRUE(ensure(users, "ops", "pw-1"));
    EXPECT_FALSE(ensure(users, "ops", "pw-2"));    // a user exists: nothing changes
    EXPECT_FALSE(ensure(users, "other", "pw-3"));  // not even under another name
    EXPECT_TRUE(exists(users, "ops"));
    EXPECT_FALSE(exists(users, "other"));
    EXPECT_EQ(login(users, "10.0.0.1", "ops", "pw-1"), login_outcome::ok);
    EXPECT_EQ(login(users, "10.0.0.1", "ops", "pw-2"), login_outcome::wrong_credentials);
    EXPECT_EQ(login(users, "10.0.0.1", "other", "pw-3"), login_outcome::wrong_credentials);
    EXPECT_EQ(login(users, "10.0.0.1", "OPS", "pw-1"), login_outcome::wrong_credentials);
}

TEST_F(admin_users_test, the_password_is_stored_as_bcrypt_only) {
    auto users = make();
    EXPECT_TRUE(ensure(users, "ops", "pw-1"));
    std::promise<result<std::optional<std::string>>> got;
    store_->get_setting(std::string(admin_users::settings_key),
                        [&](result<std::optional<std::string>> r) { got.set_value(r); });
    const auto stored = got.get_future().get();
    ASSERT_TRUE(stored && stored.value());
    EXPECT_EQ(stored.value()->find("pw-1"), std::string::npos);
    const auto parsed = parse_admin_users(*stored.value());
    ASSERT_EQ(parsed.size(), 1U);
    EXPECT_TRUE(is_bcrypt_hash(parsed[0].password_hash));
    EXPECT_EQ(parsed[0].username, "ops");
    EXPECT_EQ(parsed[0].id.size(), 36U);
    EXPECT_EQ(parse_admin_users(serialize_admin_users(parsed))[0].password_hash,
              parsed[0].password_hash);
}

TEST_F(admin_users_test, failed_logins_are_limited_per_address_and_refill) {
    auto users = make({{2, 60}});
    EXPECT_TRUE(ensure(users, "ops", "pw"));
    EXPECT_EQ(login(users, "10.0.0.1", "ops", "x"), login_outcome::wrong_credentials);
    EXPECT_EQ(login(users, "10.0.0.1", "nobody", "x"), login_outcome::wrong_credentials);
    EXPECT_EQ(login(users, "10.0.0.1", "ops", "pw"), login_outcome::throttled);
    EXPECT_EQ(login(users, "10.0.0.2", "ops", "pw"), login_outcome::ok);
    EXPECT_EQ(login(users, "10.0.0.2", "ops", "pw"), login_outcome::ok);  // successes are free
    clock_.advance(30s);                                                  // one of the two back
    EXPECT_EQ(login(users, "10.0.0.1", "ops", "pw"), login_outcome::ok);
}

TEST_F(admin_users_test, an_unreadable_document_holds_no_user) {
    EXPECT_TRUE(parse_admin_users(std::nullopt).empty());
    EXPECT_TRUE(parse_admin_users(std::string("not json")).empty());
    EXPECT_TRUE(parse_admin_users(std::string(R"({"users":[{"username":1}]})")).empty());
}

TEST(admin_users_timing, the_unknown_user_hash_is_a_real_bcrypt_hash) {
    // An unknown name is checked against a fixed hash so it costs what a wrong password costs;
    // a malformed constant would make crypt fail fast and tell names apart by timing.
    EXPECT_FALSE(
        bcrypt_verify("anything", "$2b$10$w62GEN2WS5yoimRQ8VFPAOoSNRzEElPBMlWq9.pUozXaChQBtdch2"));
    EXPECT_TRUE(bcrypt_verify("starling: no such admin user",
                              "$2b$10$w62GEN2WS5yoimRQ8VFPAOoSNRzEElPBMlWq9.pUozXaChQBtdch2"));
}

}  // namespace
}  // namespace starling::auth
