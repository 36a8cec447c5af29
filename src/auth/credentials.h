#pragma once

// The credentials documents of mqtt_client_credentials.credentials_value, in TBMQ's JSON
// format (so rows exported from TBMQ work unchanged):
//   MQTT_BASIC {"clientId", "userName", "password" (bcrypt or null),
//               "authRules": {"pubAuthRulePatterns": [...], "subAuthRulePatterns": [...]}}
//   X_509      {"certCnPattern", "certCnIsRegex", "authRulesMapping": {"<regex>": {...}}}
// and the credentials ids they are looked up by (TBMQ's ProtocolUtil). Starling adds an
// optional "clientIdPattern" to both (a whole-string RE2 pattern, pattern.h): the client ids
// the credentials may connect with. Without it, credentials found by username (or certificate)
// connect with any client id — and so may resume any session of that id.
//
// Rules: a missing "authRules" allows everything (as TBMQ's allow-all default ".*"); a present
// but empty pattern list allows nothing in that direction. Pure functions, any thread.

#include "auth/provider.h"
#include "base/result.h"
#include "starling/metadata_store.h"

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace starling::auth {

// security.mqtt.basic.auth-strategy: which credentials ids a CONNECT is looked up by.
enum class basic_auth_strategy : std::uint8_t { both, client_id, username };

std::optional<basic_auth_strategy> parse_basic_auth_strategy(std::string_view text);

inline constexpr std::string_view credentials_type_basic = "MQTT_BASIC";
inline constexpr std::string_view credentials_type_x509 = "X_509";

// "client_id|<id>", "username|<u>", "mixed|<u>|<id>", "ssl|<cn>".
std::string client_id_credentials_id(std::string_view client_id);
std::string username_credentials_id(std::string_view username);
std::string mixed_credentials_id(std::string_view username, std::string_view client_id);
std::string ssl_credentials_id(std::string_view cn);

// The ids to look up for a CONNECT, most specific first (mixed, username, client id).
std::vector<std::string> basic_credentials_ids(basic_auth_strategy strategy,
                                               std::string_view client_id,
                                               const std::optional<std::string>& username);

struct basic_credentials {
    std::optional<std::string> client_id;
    std::optional<std::string> username;
    std::optional<std::string> password_hash;  // bcrypt; nullopt = no password required
    std::shared_ptr<const topic_rules> rules;
    std::optional<pattern> client_id_pattern;  // nullopt = any client id
};

// True when credentials bound to `client_id_pattern` (nullopt = unbound) may connect with
// `client_id` (the id as the client sent it; an empty one matches only a pattern that accepts
// the empty string).
bool client_id_allowed(const std::optional<pattern>& client_id_pattern, std::string_view client_id);

// Parses a MQTT_BASIC document; invalid JSON or a bad regex → std::errc::invalid_argument,
// with the detail in `why` when given.
result<basic_credentials> parse_basic_credentials(std::string_view json,
                                                  std::string* why = nullptr);

// Compiles {"pubAuthRulePatterns": [...], "subAuthRulePatterns": [...]} given as JSON text
// (aliases "pub"/"sub"); empty text = allow everything.
result<std::shared_ptr<const topic_rules>> parse_auth_rules(std::string_view json,
                                                            std::string* why = nullptr);

struct x509_credentials {
    std::string cert_cn_pattern;
    bool cert_cn_is_regex = false;
    // The rules of every authRulesMapping entry whose key (a regex) matches the leaf CN,
    // merged; null when no entry matches.
    std::shared_ptr<const topic_rules> rules;
    std::optional<pattern> client_id_pattern;  // nullopt = any client id
};

// Parses an X_509 document for a client whose leaf certificate has `leaf_cn`.
result<x509_credentials> parse_x509_credentials(std::string_view json, std::string_view leaf_cn,
                                                std::string* why = nullptr);

// True when `cn` matches the credential's certCnPattern (a whole-string RE2 match, pattern.h).
// A pattern that does not compile matches nothing.
bool cn_pattern_matches(std::string_view cn_pattern, std::string_view cn);

// One entry of security.mqtt.credentials (YAML), as the operator wrote it.
struct credentials_spec {
    std::string name;
    client_type type = client_type::device;
    std::string credentials_type;  // MQTT_BASIC or X_509
    std::optional<std::string> client_id;
    std::optional<std::string> username;
    std::optional<std::string> password;  // plain text, or a bcrypt hash kept as is
    std::optional<std::string> cert_cn;   // X_509: the CN (a regex when cert_cn_is_regex)
    bool cert_cn_is_regex = false;
    std::optional<std::vector<std::string>> publish_patterns;    // nullopt = allow all
    std::optional<std::vector<std::string>> subscribe_patterns;  // nullopt = allow all
    std::optional<std::string> client_id_pattern;                // nullopt = any client id
};

// The metadata-store row for a spec: credentials id, JSON value (a plain password is bcrypt
// hashed here — slow, start-up only). Errors name what is wrong in `why`.
result<client_credentials> to_credentials_row(const credentials_spec& spec, std::string* why,
                                              unsigned bcrypt_cost = 10);

}  // namespace starling::auth
