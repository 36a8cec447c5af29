#include "app/admin_login.h"

#include "auth/base64url.h"
#include "starling/clock.h"

#include <nlohmann/json.hpp>
#include <openssl/rand.h>
#include <spdlog/spdlog.h>

#include <array>
#include <chrono>
#include <future>
#include <stdexcept>

namespace starling::app {
namespace {

constexpr std::string_view signing_key_setting = "jwt_signing_key";
constexpr auto store_wait = std::chrono::seconds(30);

template <class T>
T wait_for(std::future<T>& f, std::string_view what) {
    if (f.wait_for(store_wait) != std::future_status::ready) {
        throw std::runtime_error(std::string(what) + ": the metadata store did not answer in " +
                                 std::to_string(store_wait.count()) + " s");
    }
    return f.get();
}

std::optional<std::string> read_stored_key(metadata_store& store) {
    std::promise<result<std::optional<std::string>>> got;
    auto f = got.get_future();
    store.get_setting(
        std::string(signing_key_setting),
        [&got](result<std::optional<std::string>> r) { got.set_value(std::move(r)); });
    auto stored = wait_for(f, "security.jwt.token-signing-key");
    if (!stored) {
        throw std::runtime_error("security.jwt.token-signing-key: cannot read the stored key: " +
                                 stored.error().message());
    }
    if (!stored.value()) {
        return std::nullopt;
    }
    const auto doc = nlohmann::json::parse(*stored.value(), nullptr, false);
    if (!doc.is_object() || !doc.value("key", nlohmann::json()).is_string()) {
        return std::nullopt;
    }
    auto key = auth::base64url_decode(doc["key"].get<std::string>());
    if (!key || key->size() < 32) {
        return std::nullopt;
    }
    return key;
}

// The configured key, or the one kept in the store (made and stored on the first start).
std::string signing_key(const config::broker_config& cfg, metadata_store& store) {
    if (!cfg.security.jwt.token_signing_key.empty()) {
        return cfg.security.jwt.token_signing_key;
    }
    if (auto key = read_stored_key(store)) {
        return *key;
    }
    std::array<unsigned char, 32> bytes{};
    if (RAND_bytes(bytes.data(), static_cast<int>(bytes.size())) != 1) {
        throw std::runtime_error("security.jwt.token-signing-key: no randomness to make one");
    }
    const std::string fresh(reinterpret_cast<const char*>(bytes.data()), bytes.size());
    std::promise<status> put;
    auto f = put.get_future();
    store.put_setting(std::string(signing_key_setting),
                      nlohmann::json{{"key", auth::base64url_encode(fresh)}}.dump(),
                      [&put](status st) { put.set_value(st); });
    if (auto st = wait_for(f, "security.jwt.token-signing-key"); !st) {
        throw std::runtime_error("security.jwt.token-signing-key: cannot store a generated key: " +
                                 st.error().message());
    }
    spdlog::info(
        "admin login: generated a token signing key and stored it in the metadata "
        "store (set security.jwt.token-signing-key to choose one)");
    // Another node may have stored its own meanwhile: use whatever the store holds now.
    auto kept = read_stored_key(store);
    return kept ? *kept : fresh;
}

}  // namespace

admin_login_parts build_admin_login(const config::broker_config& cfg, metadata_store& store,
                                    auth::worker_pool& pool) {
    admin_login_parts parts;
    const auto& sec = cfg.security;
    if (!sec.admin.enabled) {
        parts.access = http::api_access(sec.admin_token);
        return parts;
    }
    parts.tokens = std::make_unique<auth::admin_tokens>(
        auth::admin_token_options{.signing_key = signing_key(cfg, store),
                                  .issuer = sec.jwt.token_issuer,
                                  .access_ttl = sec.jwt.token_expiration_time,
                                  .refresh_ttl = sec.jwt.refresh_token_exp_time});
    parts.users =
        std::make_unique<auth::admin_users>(store, pool, sec.admin.failed_logins_per_address);
    parts.access =
        http::api_access(sec.admin_token, [tokens = parts.tokens.get()](std::string_view bearer) {
            return tokens
                ->verify(bearer, auth::admin_token_kind::access,
                         system_clock::instance().epoch_ms() / 1000)
                .has_value();
        });
    if (!sec.admin.password.empty()) {
        std::promise<result<bool>> created;
        auto f = created.get_future();
        parts.users->ensure_first_admin(sec.admin.username, sec.admin.password,
                                        [&created](result<bool> r) { created.set_value(r); });
        auto made = wait_for(f, "security.admin.password");
        if (!made) {
            throw std::runtime_error("security.admin.password: cannot create the first admin: " +
                                     made.error().message());
        }
        if (made.value()) {
            spdlog::info("admin login: created the first admin user {}", sec.admin.username);
        }
    }
    return parts;
}

}  // namespace starling::app
