#include "auth/basic_provider.h"

#include "auth/password.h"

#include <spdlog/spdlog.h>

#include <algorithm>

namespace starling::auth {
namespace {

// Bounds the verification cache; past it, expired entries are swept and, if still full, the
// cache is cleared (a flood of distinct passwords must not grow memory).
constexpr std::size_t verified_cache_limit = 100000;

}  // namespace

basic_provider::basic_provider(metadata_store& store, worker_pool& pool,
                               basic_auth_strategy strategy, const starling::clock& clock,
                               std::chrono::milliseconds verified_ttl)
    : store_(store), pool_(pool), strategy_(strategy), clock_(clock), verified_ttl_(verified_ttl) {}

void basic_provider::authenticate(const auth_request& request,
                                  std::function<void(auth_result)> done) {
    auto ids = basic_credentials_ids(strategy_, request.client_id, request.username);
    if (ids.empty()) {
        done(auth_result{.outcome = verdict::not_applicable, .reason = "no basic credentials id"});
        return;
    }
    const auto lane = request.suspect ? worker_pool::lane::low : worker_pool::lane::normal;
    store_.find_credentials(ids, [this, ids, password = request.password,
                                  client_id = request.client_id, lane, done = std::move(done)](
                                     result<std::vector<client_credentials>> rows) mutable {
        if (!rows) {
            done(auth_result{.outcome = verdict::deny,
                             .reason = "credentials store error: " + rows.error().message(),
                             .bad_credentials = false,
                             .failed = true});
            return;
        }
        std::vector<candidate> candidates;
        for (const auto& id : ids) {  // most specific id first
            for (auto& row : *rows) {
                if (row.credentials_id != id || row.credentials_type != credentials_type_basic) {
                    continue;
                }
                std::string why;
                auto parsed = parse_basic_credentials(row.credentials_value, &why);
                if (!parsed) {
                    spdlog::warn("credentials {}: unusable MQTT_BASIC value: {}",
                                 row.credentials_id, why);
                    continue;
                }
                candidates.push_back({row.type, row.credentials_id, std::move(*parsed)});
            }
        }
        if (candidates.empty()) {
            done(auth_result{.outcome = verdict::not_applicable,
                             .reason = "no MQTT_BASIC credentials"});
            return;
        }
        verify(std::move(candidates), std::move(password), std::move(client_id), lane,
               std::move(done));
    });
}

auth_result basic_provider::accepted(const candidate& c, const std::string& client_id) {
    if (!client_id_allowed(c.credentials.client_id_pattern, client_id)) {
        // The right password for credentials that may not use this client id: not authorized
        // (0x87), not bad credentials — and never "not applicable", which could fall through
        // to anonymous access.
        return auth_result{.outcome = verdict::deny,
                           .reason = "client id not allowed by clientIdPattern '" +
                                     c.credentials.client_id_pattern->source() +
                                     "' of credentials " + c.credentials_id,
                           .bad_credentials = false};
    }
    return auth_result{.outcome = verdict::allow,
                       .type = c.type,
                       .rules = c.credentials.rules,
                       .reason = "credentials " + c.credentials_id};
}

std::optional<auth_result> basic_provider::decided_without_bcrypt(
    const std::vector<candidate>& candidates, const std::optional<std::string>& password,
    const std::string& client_id) {
    const std::string offered_sha = password ? sha256_hex(*password) : std::string("-");
    for (const auto& c : candidates) {
        bool ok = false;
        if (!c.credentials.password_hash) {
            ok = true;
        } else if (password) {
            ok = verified_recently(*c.credentials.password_hash + '\n' + offered_sha);
            if (!ok) {
                return std::nullopt;  // this candidate needs bcrypt, and it comes first
            }
        }
        if (ok) {
            return accepted(c, client_id);
        }
    }
    if (!password) {
        return auth_result{
            .outcome = verdict::deny, .reason = "password required", .bad_credentials = true};
    }
    return std::nullopt;
}

void basic_provider::verify(std::vector<candidate> candidates, std::optional<std::string> password,
                            std::string client_id, worker_pool::lane lane,
                            std::function<void(auth_result)> done) {
    // A password verified within the last minute (or credentials without one) need no bcrypt:
    // answered here, never queued behind a flood of verifications.
    if (auto decided = decided_without_bcrypt(candidates, password, client_id)) {
        done(std::move(*decided));
        return;
    }
    auto job = [this, candidates = std::move(candidates), password = std::move(password),
                client_id = std::move(client_id), done]() mutable {
        const std::string offered_sha = password ? sha256_hex(*password) : std::string("-");
        for (auto& c : candidates) {
            bool ok = false;
            if (!c.credentials.password_hash) {
                ok = true;  // credentials without a password accept any (as TBMQ)
            } else if (password) {
                auto key = *c.credentials.password_hash + '\n' + offered_sha;
                ok = verified_recently(key);
                if (!ok && bcrypt_verify(*password, *c.credentials.password_hash)) {
                    ok = true;
                    remember_verified(std::move(key));
                }
            }
            if (ok) {
                done(accepted(c, client_id));
                return;
            }
        }
        done(auth_result{.outcome = verdict::deny,
                         .reason = password ? "wrong password" : "password required",
                         .bad_credentials = true});
    };
    // Waited too long behind other verifications, or no room to wait: load shedding, not a
    // failure of the credentials store (auth_result::shed).
    auto expired = [done] {
        done(auth_result{.outcome = verdict::deny,
                         .reason = "auth worker queue timeout",
                         .bad_credentials = false,
                         .shed = true});
    };
    if (!pool_.submit(std::move(job), std::move(expired), lane)) {
        done(auth_result{.outcome = verdict::deny,
                         .reason = "auth worker pool busy",
                         .bad_credentials = false,
                         .shed = true});
    }
}

bool basic_provider::verified_recently(const std::string& key) {
    std::lock_guard lock(cache_mutex_);
    auto it = verified_.find(key);
    if (it == verified_.end()) {
        return false;
    }
    if (clock_.steady_now() >= it->second) {
        verified_.erase(it);
        return false;
    }
    return true;
}

void basic_provider::remember_verified(std::string key) {
    if (verified_ttl_.count() <= 0) {
        return;
    }
    const auto now = clock_.steady_now();
    std::lock_guard lock(cache_mutex_);
    if (verified_.size() >= verified_cache_limit) {
        std::erase_if(verified_, [now](const auto& entry) { return now >= entry.second; });
        if (verified_.size() >= verified_cache_limit) {
            verified_.clear();
        }
    }
    verified_[std::move(key)] = now + verified_ttl_;
}

}  // namespace starling::auth
