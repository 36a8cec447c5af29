#include "auth/admin_users.h"

#include "auth/password.h"
#include "auth/random_uuid.h"
#include "ratelimit/token_bucket.h"

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include <unordered_map>

namespace starling::auth {
namespace {

// Addresses whose failed logins are remembered; past this the table is emptied (bounded
// memory: a guesser rotating addresses gains at most a fresh allowance per address).
constexpr std::size_t max_tracked_addresses = 10000;

// bcrypt of an unguessable string: an unknown user name is checked against it, so it costs
// as long as a wrong password.
constexpr std::string_view timing_hash =
    "$2b$10$w62GEN2WS5yoimRQ8VFPAOoSNRzEElPBMlWq9.pUozXaChQBtdch2";

}  // namespace

struct admin_users::failure_table {
    std::unordered_map<std::string, ratelimit::token_bucket> buckets;
};

std::string_view to_string(login_outcome outcome) {
    switch (outcome) {
        case login_outcome::ok:
            return "ok";
        case login_outcome::wrong_credentials:
            return "wrong_credentials";
        case login_outcome::throttled:
            return "throttled";
        case login_outcome::busy:
            return "busy";
        case login_outcome::store_error:
            return "store_error";
    }
    return "unknown";
}

std::vector<admin_user> parse_admin_users(const std::optional<std::string>& document) {
    std::vector<admin_user> users;
    if (!document) {
        return users;
    }
    const auto json = nlohmann::json::parse(*document, nullptr, false);
    if (!json.is_object() || !json.contains("users") || !json["users"].is_array()) {
        spdlog::warn("admin users: the stored document is not readable; no admin user");
        return users;
    }
    for (const auto& u : json["users"]) {
        if (!u.is_object() || !u.value("username", nlohmann::json()).is_string() ||
            !u.value("passwordHash", nlohmann::json()).is_string()) {
            continue;
        }
        users.push_back(admin_user{.id = u.value("id", ""),
                                   .username = u["username"].get<std::string>(),
                                   .authority = u.value("authority", "SYS_ADMIN"),
                                   .password_hash = u["passwordHash"].get<std::string>(),
                                   .created_time_ms = u.value("createdTime", std::int64_t{0})});
    }
    return users;
}

std::string serialize_admin_users(const std::vector<admin_user>& users) {
    nlohmann::json list = nlohmann::json::array();
    for (const auto& u : users) {
        list.push_back({{"id", u.id},
                        {"username", u.username},
                        {"authority", u.authority},
                        {"passwordHash", u.password_hash},
                        {"createdTime", u.created_time_ms}});
    }
    return nlohmann::json{{"users", list}}.dump(-1, ' ', false,
                                                nlohmann::json::error_handler_t::replace);
}

admin_users::admin_users(metadata_store& store, worker_pool& pool,
                         std::vector<bandwidth> failed_logins_per_address,
                         const starling::clock& clock)
    : store_(store),
      pool_(pool),
      failed_logins_per_address_(std::move(failed_logins_per_address)),
      clock_(clock),
      failures_(std::make_unique<failure_table>()) {}

admin_users::~admin_users() = default;

void admin_users::ensure_first_admin(std::string username, std::string password,
                                     std::function<void(result<bool>)> done) {
    store_.get_setting(
        std::string(settings_key),
        [this, username = std::move(username), password = std::move(password),
         done = std::move(done)](result<std::optional<std::string>> stored) mutable {
            if (!stored) {
                done(result<bool>(boost::system::in_place_error, stored.error()));
                return;
            }
            if (!parse_admin_users(stored.value()).empty()) {
                done(false);
                return;
            }
            auto job = [this, username = std::move(username), password = std::move(password),
                        done]() mutable {
                auto hash = bcrypt_hash(password);
                if (!hash) {
                    done(result<bool>(boost::system::in_place_error,
                                      std::make_error_code(std::errc::operation_not_supported)));
                    return;
                }
                const admin_user user{.id = random_uuid(),
                                      .username = std::move(username),
                                      .password_hash = std::move(*hash),
                                      .created_time_ms = clock_.epoch_ms()};
                store_.put_setting(
                    std::string(settings_key), serialize_admin_users({user}), [done](status st) {
                        if (!st) {
                            done(result<bool>(boost::system::in_place_error, st.error()));
                            return;
                        }
                        done(true);
                    });
            };
            if (!pool_.submit(std::move(job))) {
                done(result<bool>(boost::system::in_place_error,
                                  std::make_error_code(std::errc::resource_unavailable_try_again)));
            }
        });
}

void admin_users::check_login(std::string address, std::string username, std::string password,
                              std::function<void(login_outcome)> done) {
    if (!may_try(address)) {
        done(login_outcome::throttled);
        return;
    }
    store_.get_setting(
        std::string(settings_key),
        [this, address = std::move(address), username = std::move(username),
         password = std::move(password),
         done = std::move(done)](result<std::optional<std::string>> stored) mutable {
            if (!stored) {
                done(login_outcome::store_error);
                return;
            }
            std::string hash(timing_hash);
            bool known = false;
            for (auto& u : parse_admin_users(stored.value())) {
                if (u.username == username) {
                    hash = std::move(u.password_hash);
                    known = true;
                    break;
                }
            }
            auto job = [this, address, password = std::move(password), hash = std::move(hash),
                        known, done]() mutable {
                const bool ok = bcrypt_verify(password, hash) && known;
                if (!ok) {
                    record_failure(address);
                }
                done(ok ? login_outcome::ok : login_outcome::wrong_credentials);
            };
            if (!pool_.submit(std::move(job), [done] { done(login_outcome::busy); })) {
                done(login_outcome::busy);
            }
        });
}

void admin_users::exists(std::string username, std::function<void(result<bool>)> done) {
    store_.get_setting(std::string(settings_key),
                       [username = std::move(username),
                        done = std::move(done)](result<std::optional<std::string>> stored) {
                           if (!stored) {
                               done(result<bool>(boost::system::in_place_error, stored.error()));
                               return;
                           }
                           for (const auto& u : parse_admin_users(stored.value())) {
                               if (u.username == username) {
                                   done(true);
                                   return;
                               }
                           }
                           done(false);
                       });
}

bool admin_users::may_try(const std::string& address) {
    if (failed_logins_per_address_.empty()) {
        return true;
    }
    std::lock_guard lock(failures_mutex_);
    auto it = failures_->buckets.find(address);
    return it == failures_->buckets.end() || it->second.available(clock_.steady_now()) > 0;
}

void admin_users::record_failure(const std::string& address) {
    if (failed_logins_per_address_.empty()) {
        return;
    }
    const auto now = clock_.steady_now();
    std::lock_guard lock(failures_mutex_);
    auto& buckets = failures_->buckets;
    if (buckets.size() >= max_tracked_addresses && !buckets.contains(address)) {
        buckets.clear();
    }
    auto it = buckets.try_emplace(address, failed_logins_per_address_, now).first;
    (void)it->second.try_acquire(now);
}

}  // namespace starling::auth
