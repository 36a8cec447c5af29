#include "auth/provider_support.h"

#include "auth/pattern.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <cstdint>

namespace starling::auth {

result<std::shared_ptr<const topic_rules>> compile_topic_rules(
    const std::vector<std::string>& publish, const std::vector<std::string>& subscribe,
    std::string* bad_pattern) {
    auto rules = std::make_shared<topic_rules>();
    const auto compile = [&](const std::vector<std::string>& sources,
                             std::vector<pattern>& out) -> bool {
        for (const auto& source : sources) {
            auto compiled = pattern::compile(source);
            if (!compiled) {
                if (bad_pattern != nullptr) {
                    *bad_pattern = source;
                }
                return false;
            }
            out.push_back(std::move(*compiled));
        }
        return true;
    };
    if (!compile(publish, rules->publish) || !compile(subscribe, rules->subscribe)) {
        return std::make_error_code(std::errc::invalid_argument);
    }
    const auto only_any = [](const std::vector<std::string>& p) {
        return p.size() == 1 && p.front() == ".*";
    };
    // Both lists exactly ".*" (the default): skip regex matching on every PUBLISH.
    rules->allow_all = only_any(publish) && only_any(subscribe);
    return std::shared_ptr<const topic_rules>(std::move(rules));
}

bool is_provider_unavailable(const auth_result& result) {
    return result.outcome == verdict::deny && result.reason.starts_with(unavailable_prefix);
}

auth_result make_deny(std::string reason, bool bad_credentials) {
    auth_result r;
    r.outcome = verdict::deny;
    r.reason = std::move(reason);
    r.bad_credentials = bad_credentials;
    return r;
}

namespace {

// Sets `failed` where auth_result has it: the seam on main gained `bool failed` (the
// authenticator's circuit-breaker signal) after this branch was cut; this compiles either way.
template <class Result>
void mark_failed(Result& r) {
    if constexpr (requires { r.failed = true; }) {
        r.failed = true;
    }
}

}  // namespace

auth_result make_unavailable(std::string_view detail) {
    // Not the client's fault, but the client is not let in either (fail closed): MQTT 5 has
    // "server unavailable" only in CONNACK 0x88, which the authenticator may choose; the
    // default here is "not authorized".
    auto r = make_deny(std::string(unavailable_prefix) + std::string(detail), false);
    mark_failed(r);
    return r;
}

auth_result make_allow(client_type type, std::shared_ptr<const topic_rules> rules,
                       std::string reason) {
    auth_result r;
    r.outcome = verdict::allow;
    r.type = type;
    r.rules = std::move(rules);
    r.reason = std::move(reason);
    r.bad_credentials = false;
    return r;
}

std::optional<client_type> parse_client_type(std::string_view text) {
    std::string upper(text);
    std::transform(upper.begin(), upper.end(), upper.begin(),
                   [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
    if (upper == "DEVICE") {
        return client_type::device;
    }
    if (upper == "APPLICATION") {
        return client_type::application;
    }
    return std::nullopt;
}

std::string substitute_identity(std::string_view pattern, const auth_request& request) {
    static constexpr std::string_view client_id_token = "${clientId}";
    static constexpr std::string_view username_token = "${username}";
    std::string out;
    out.reserve(pattern.size());
    for (std::size_t i = 0; i < pattern.size();) {
        if (pattern.substr(i).starts_with(client_id_token)) {
            out += request.client_id;
            i += client_id_token.size();
        } else if (pattern.substr(i).starts_with(username_token)) {
            out += request.username.value_or("");
            i += username_token.size();
        } else {
            out += pattern[i++];
        }
    }
    return out;
}

std::string json_escape(std::string_view text) {
    std::string quoted = nlohmann::json(std::string(text))
                             .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    return quoted.substr(1, quoted.size() - 2);
}

}  // namespace starling::auth
