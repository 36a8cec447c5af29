#pragma once

// Pieces shared by the JWT and HTTP providers: compiling topic-rule patterns, the "provider
// unavailable" signal for the authenticator's circuit breaker, and small result builders.
// Stateless functions; safe from any thread.

#include "auth/base64url.h"
#include "auth/provider.h"
#include "base/result.h"

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace starling::auth {

// TBMQ `authRules`: patterns (RE2 syntax) a topic must match whole. The default allows
// everything.
struct auth_rules_options {
    std::vector<std::string> publish{".*"};    // pubAuthRulePatterns
    std::vector<std::string> subscribe{".*"};  // subAuthRulePatterns
};

// Compiles patterns into topic_rules (RE2, pattern.h); a pattern RE2 refuses is an error and
// `bad_pattern` names it. Never throws.
result<std::shared_ptr<const topic_rules>> compile_topic_rules(
    const std::vector<std::string>& publish, const std::vector<std::string>& subscribe,
    std::string* bad_pattern = nullptr);

// A deny caused by the provider's backend (HTTP status other than 2xx/401/403, transport
// error, timeout, overload, JWKS endpoint unreachable) rather than by the credentials: deny,
// not bad credentials, `failed = true` where auth_result has that field (the authenticator's
// circuit-breaker signal), and a reason starting with this prefix.
inline constexpr std::string_view unavailable_prefix = "provider unavailable: ";

bool is_provider_unavailable(const auth_result& result);

auth_result make_deny(std::string reason, bool bad_credentials = true);
auth_result make_unavailable(std::string_view detail);
auth_result make_allow(client_type type, std::shared_ptr<const topic_rules> rules,
                       std::string reason = {});

// "DEVICE" / "APPLICATION" (case-insensitive); anything else → nullopt.
std::optional<client_type> parse_client_type(std::string_view text);

// Replaces ${clientId} and ${username} (absent username → empty) in `pattern`.
std::string substitute_identity(std::string_view pattern, const auth_request& request);

// `text` as the inside of a JSON string literal (quotes, backslashes and control characters
// escaped; invalid UTF-8 replaced by U+FFFD so the document stays valid).
std::string json_escape(std::string_view text);

}  // namespace starling::auth
