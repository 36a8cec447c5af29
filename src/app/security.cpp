#include "app/security.h"

#include "auth/basic_provider.h"
#include "auth/credentials.h"
#include "auth/x509_provider.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <fstream>
#include <future>
#include <optional>
#include <sstream>
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
        spec.client_id_pattern = e.client_id_pattern;
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
// regex or IP address) fails start-up naming it. The regex syntax is the list's (RE2,
// auth/pattern.h), so the list itself is the validator.
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

client_type client_type_of(const std::string& name) {
    return name == "APPLICATION" ? client_type::application : client_type::device;
}

auth::http_headers headers_of(const std::map<std::string, std::string>& map) {
    return {map.begin(), map.end()};
}

// The providers' validation_error() names their TBMQ field ("<tbmqField>: <reason>"); the
// operator needs the Starling key, so each field is translated (an unknown one keeps the
// section). Field names are the ones the options structs document.
struct field_key {
    std::string_view tbmq_field;
    std::string_view key;
};
constexpr field_key jwt_keys[] = {
    {"jwtVerifierConfiguration.jwtSignAlgorithmConfiguration.secret", "security.mqtt.jwt.secret"},
    {"jwtVerifierConfiguration.jwtSignAlgorithmConfiguration.publicPemKey",
     "security.mqtt.jwt.public-pem-key"},
    {"jwtVerifierConfiguration.endpoint", "security.mqtt.jwt.jwks.endpoint"},
    {"jwtVerifierConfiguration.refreshInterval", "security.mqtt.jwt.jwks.refresh-interval"},
    {"authRules", "security.mqtt.jwt.auth-rules"},
};
constexpr field_key http_keys[] = {
    {"restEndpointUrl", "security.mqtt.http.endpoint"},
    {"requestMethod", "security.mqtt.http.method"},
    {"readTimeoutMs", "security.mqtt.http.read-timeout-ms"},
    {"maxParallelRequestsCount", "security.mqtt.http.max-parallel-requests"},
    {"credentials", "security.mqtt.http.credentials"},
    {"authRules", "security.mqtt.http.auth-rules"},
};

template <class Options, std::size_t N>
std::optional<std::string> options_error(const Options& options, const field_key (&keys)[N],
                                         std::string_view section) {
    auto why = options.validation_error();
    if (!why) {
        return std::nullopt;
    }
    const auto colon = why->find(": ");
    const std::string_view field =
        colon == std::string::npos ? std::string_view{} : std::string_view(*why).substr(0, colon);
    for (const auto& k : keys) {
        if (field == k.tbmq_field) {
            return fmt::format("{}: {}", k.key, why->substr(colon + 2));
        }
    }
    return fmt::format("{}: {}", section, *why);
}

// security.mqtt.jwt.public-pem-key: inline PEM when it starts with "-----BEGIN", else a file
// path (so a key can be mounted as a file, or given whole through the environment).
std::string read_pem_key(const std::string& value) {
    if (value.empty() || value.starts_with("-----BEGIN")) {
        return value;
    }
    std::ifstream in(value, std::ios::binary);
    if (!in) {
        throw std::runtime_error(
            fmt::format("security.mqtt.jwt.public-pem-key: \"{}\" is not a PEM key and cannot "
                        "be read as a file",
                        value));
    }
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
}

auth::jwt_provider_options jwt_options(const config::jwt_auth_section& c) {
    auth::jwt_provider_options o;
    o.default_client_type = client_type_of(c.default_client_type);
    o.verifier = c.verifier == "JWKS" ? auth::jwt_verifier_type::jwks
                                      : auth::jwt_verifier_type::algorithm_based;
    o.algorithm = c.algorithm == "PEM_KEY" ? auth::jwt_sign_algorithm::pem_key
                                           : auth::jwt_sign_algorithm::hmac_based;
    o.secret = c.secret;
    if (o.verifier == auth::jwt_verifier_type::algorithm_based &&
        o.algorithm == auth::jwt_sign_algorithm::pem_key) {
        o.public_pem_key = read_pem_key(c.public_pem_key);
    }
    o.jwks.endpoint = c.jwks_endpoint;
    o.jwks.headers = headers_of(c.jwks_headers);
    o.jwks.refresh_interval = c.jwks_refresh_interval;
    o.auth_claims = c.auth_claims;
    o.client_type_claims = c.client_type_claims;
    o.auth_rules.publish = c.auth_rules.pub;
    o.auth_rules.subscribe = c.auth_rules.sub;
    o.pub_auth_rule_claim = c.pub_auth_rule_claim;
    o.sub_auth_rule_claim = c.sub_auth_rule_claim;
    o.allow_tokens_without_exp = c.allow_tokens_without_exp;
    return o;
}

auth::http_provider_options http_options(const config::http_auth_section& c) {
    auth::http_provider_options o;
    o.rest_endpoint_url = c.endpoint;
    o.request_method = c.method;
    o.headers = headers_of(c.headers);
    if (!c.username.empty() || !c.password.empty()) {
        o.basic_username = c.username;
        o.basic_password = c.password;
    }
    if (!c.request_body.empty()) {
        o.request_body = c.request_body;  // empty: TBMQ's default template
    }
    o.read_timeout = c.read_timeout;
    o.max_parallel_requests = c.max_parallel_requests;
    o.default_client_type = client_type_of(c.default_client_type);
    o.auth_rules.publish = c.auth_rules.pub;
    o.auth_rules.subscribe = c.auth_rules.sub;
    return o;
}

bool listed(const config::mqtt_security_section& sec, std::string_view name) {
    return std::find(sec.auth_providers.begin(), sec.auth_providers.end(), name) !=
           sec.auth_providers.end();
}

}  // namespace

std::optional<std::string> provider_config_error(const config::broker_config& cfg) {
    const auto& sec = cfg.security.mqtt;
    try {
        if (sec.jwt.enabled && listed(sec, "JWT")) {
            if (auto why = options_error(jwt_options(sec.jwt), jwt_keys, "security.mqtt.jwt")) {
                return why;
            }
        }
        if (sec.http.enabled && listed(sec, "HTTP")) {
            if (auto why = options_error(http_options(sec.http), http_keys, "security.mqtt.http")) {
                return why;
            }
        }
    } catch (const std::runtime_error& e) {
        return std::string(e.what());  // read_pem_key: the file cannot be read
    }
    return std::nullopt;
}

security_parts build_security(const config::broker_config& cfg, metadata_store& metadata,
                              metrics::auth_probe& probe,
                              boost::asio::any_io_executor io_executor) {
    const auto& sec = cfg.security.mqtt;
    security_parts parts;
    if (auto why = provider_config_error(cfg)) {
        throw std::runtime_error(*why);
    }
    upsert_credentials(cfg, metadata);
    parts.blocked = make_blocked(cfg);
    // A verification still queued after half the provider timeout is shed (answered "busy",
    // not a provider failure) while the CONNECT can still be told so, rather than timing out.
    parts.pool = std::make_unique<auth::worker_pool>("auth-verify", sec.basic.verify_threads,
                                                     verify_queue_limit, sec.provider_timeout / 2);
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
        } else if (name == "JWT") {
            if (!sec.jwt.enabled) {
                continue;
            }
            auto jwt = std::make_unique<auth::jwt_provider>(jwt_options(sec.jwt), io_executor);
            parts.jwt = jwt.get();
            providers.push_back(std::move(jwt));
            names.push_back(name);
        } else if (name == "HTTP") {
            if (!sec.http.enabled) {
                continue;
            }
            auto http = std::make_unique<auth::http_provider>(http_options(sec.http), io_executor);
            parts.http = http.get();
            providers.push_back(std::move(http));
            names.push_back(name);
        }
    }
    spdlog::info("MQTT authentication: providers [{}], anonymous {}, basic strategy {}",
                 fmt::join(names, ", "), sec.allow_anonymous ? "allowed" : "refused",
                 config::to_string(sec.basic.auth_strategy));
    auth::authenticator_options options{.allow_anonymous = sec.allow_anonymous,
                                        .provider_timeout = sec.provider_timeout,
                                        .cache_ttl = sec.auth_cache_ttl,
                                        .breaker_threshold = sec.circuit_breaker.failure_threshold,
                                        .breaker_cooldown = sec.circuit_breaker.cool_down,
                                        .failed_attempts_per_address = sec.failed_auth_per_address};
    parts.timers = std::make_unique<actor::timer_service>("auth-timers");
    parts.timers->start();
    parts.authenticator = std::make_unique<auth::authenticator>(
        options, std::move(providers), *parts.timers, probe, system_clock::instance());
    return parts;
}

}  // namespace starling::app
