#include "app/security.h"

#include "auth/basic_provider.h"
#include "auth/credentials.h"
#include "auth/x509_provider.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <future>
#include <stdexcept>

namespace starling::app {
namespace {

// Bounded queue of bcrypt jobs: beyond it a CONNECT is refused as "busy" (a failure).
constexpr std::size_t verify_queue_limit = 10000;

void upsert_credentials(const config::broker_config& cfg, metadata_store& metadata) {
    const auto& entries = cfg.security.mqtt.credentials;
    for (std::size_t i = 0; i < entries.size(); ++i) {
        const auto& e = entries[i];
        auth::credentials_spec spec;
        spec.name = e.name;
        spec.type = e.type == "APPLICATION" ? client_type::application : client_type::device;
        spec.credentials_type = e.credentials_type;
        spec.client_id = e.client_id;
        spec.username = e.username;
        spec.password = e.password;
        spec.cert_cn = e.cert_cn;
        spec.cert_cn_is_regex = e.cert_cn_is_regex;
        spec.publish_patterns = e.pub;
        spec.subscribe_patterns = e.sub;
        std::string why;
        auto row = auth::to_credentials_row(spec, &why);
        if (!row) {
            throw std::runtime_error(
                fmt::format("security.mqtt.credentials[{}] ({}): {}", i, e.name, why));
        }
        std::promise<status> saved;
        auto result = saved.get_future();
        const auto credentials_id = row->credentials_id;
        metadata.save_credentials(std::move(*row),
                                  [&saved](status st) { saved.set_value(std::move(st)); });
        if (auto st = result.get(); !st) {
            throw std::runtime_error(
                fmt::format("security.mqtt.credentials[{}] ({}): not saved: {}", i, e.name,
                            st.error().message()));
        }
        spdlog::info("credentials {} ({}) upserted from configuration", credentials_id, e.name);
    }
}

// Builds the block list from security.mqtt.blocked-clients; an entry the list refuses (bad
// regex or IP address) fails start-up naming it. The regex syntax is the list's (Boost, Perl
// syntax), so the list itself is the validator.
std::unique_ptr<auth::blocked_clients> make_blocked(const config::broker_config& cfg) {
    auto type_of = [](const std::string& name) {
        if (name == "USERNAME") {
            return auth::block_type::username;
        }
        if (name == "IP_ADDRESS") {
            return auth::block_type::ip_address;
        }
        if (name == "REGEX") {
            return auth::block_type::regex;
        }
        return auth::block_type::client_id;
    };
    auto target_of = [](const std::string& name) {
        if (name == "USERNAME") {
            return auth::regex_target::username;
        }
        if (name == "IP_ADDRESS") {
            return auth::regex_target::ip_address;
        }
        return auth::regex_target::client_id;
    };
    auto blocked = std::make_unique<auth::blocked_clients>();
    std::size_t i = 0;
    for (const auto& e : cfg.security.mqtt.blocked_clients) {
        auth::blocked_entry entry{.type = type_of(e.type),
                                  .value = e.value,
                                  .expires_at_ms = e.expiration_time_ms,
                                  .description = e.description,
                                  .target = target_of(e.regex_match_target)};
        if (auto why = auth::blocked_clients::describe_error(entry)) {
            throw std::runtime_error(
                fmt::format("security.mqtt.blocked-clients[{}].value: {}", i, *why));
        }
        (void)blocked->add(std::move(entry));
        ++i;
    }
    return blocked;
}

auth::basic_auth_strategy to_auth(config::basic_auth_strategy s) {
    switch (s) {
        case config::basic_auth_strategy::client_id:
            return auth::basic_auth_strategy::client_id;
        case config::basic_auth_strategy::username:
            return auth::basic_auth_strategy::username;
        case config::basic_auth_strategy::both:
            break;
    }
    return auth::basic_auth_strategy::both;
}

}  // namespace

security_parts build_security(const config::broker_config& cfg, metadata_store& metadata,
                              actor::timer_service& timers, metrics::auth_probe& probe) {
    const auto& sec = cfg.security.mqtt;
    security_parts parts;
    upsert_credentials(cfg, metadata);
    parts.blocked = make_blocked(cfg);
    parts.pool = std::make_unique<auth::worker_pool>("auth-verify", sec.basic.verify_threads,
                                                     verify_queue_limit);
    std::vector<std::unique_ptr<auth::auth_provider>> providers;
    std::vector<std::string> names;
    for (const auto& name : sec.auth_providers) {
        if (name == "MQTT_BASIC") {
            if (!sec.basic.enabled) {
                continue;
            }
            providers.push_back(std::make_unique<auth::basic_provider>(
                metadata, *parts.pool, to_auth(sec.basic.auth_strategy), system_clock::instance()));
            names.push_back(name);
        } else if (name == "X_509") {
            if (!sec.ssl.enabled) {
                continue;
            }
            providers.push_back(std::make_unique<auth::x509_provider>(
                auth::x509_options{
                    .trust_store = sec.ssl.trust_store,
                    .skip_validity_check = sec.ssl.skip_validity_check_for_client_cert},
                metadata, *parts.pool, system_clock::instance()));
            names.push_back(name);
        } else {
            // JWT and HTTP are built by their own module (not in this build yet).
            spdlog::debug("auth provider {} is not available in this build; skipped", name);
        }
    }
    spdlog::info("MQTT authentication: providers [{}], anonymous {}, basic strategy {}",
                 fmt::join(names, ", "), sec.allow_anonymous ? "allowed" : "refused",
                 config::to_string(sec.basic.auth_strategy));
    auth::authenticator_options options{.allow_anonymous = sec.allow_anonymous,
                                        .provider_timeout = sec.provider_timeout,
                                        .cache_ttl = sec.auth_cache_ttl,
                                        .breaker_threshold = sec.circuit_breaker.failure_threshold,
                                        .breaker_cooldown = sec.circuit_breaker.cool_down};
    parts.authenticator = std::make_unique<auth::authenticator>(
        options, std::move(providers), timers, probe, system_clock::instance());
    return parts;
}

}  // namespace starling::app
