#include "auth/credentials.h"

#include "auth/password.h"
#include "auth/pattern.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <cstdint>

namespace starling::auth {
namespace {

using json = nlohmann::json;

std::error_code invalid() { return std::make_error_code(std::errc::invalid_argument); }

void set_why(std::string* why, std::string text) {
    if (why != nullptr) {
        *why = std::move(text);
    }
}

// Compiles one pattern list (RE2, pattern.h); a pattern RE2 refuses is an error naming it.
bool compile(const json& list, std::vector<pattern>& out, std::string* why) {
    if (!list.is_array()) {
        set_why(why, "a rule pattern list must be a JSON array of strings");
        return false;
    }
    for (const auto& item : list) {
        if (!item.is_string()) {
            set_why(why, "a rule pattern must be a string");
            return false;
        }
        const auto& source = item.get_ref<const std::string&>();
        std::string error;
        auto compiled = pattern::compile(source, &error);
        if (!compiled) {
            set_why(why, fmt::format("invalid rule pattern '{}': {}", source, error));
            return false;
        }
        out.push_back(std::move(*compiled));
    }
    return true;
}

const json* find_either(const json& object, const char* a, const char* b) {
    if (auto it = object.find(a); it != object.end() && !it->is_null()) {
        return &*it;
    }
    if (auto it = object.find(b); it != object.end() && !it->is_null()) {
        return &*it;
    }
    return nullptr;
}

result<std::shared_ptr<const topic_rules>> rules_from(const json* rules, std::string* why) {
    if (rules == nullptr || rules->is_null()) {
        return topic_rules::everything();
    }
    if (!rules->is_object()) {
        set_why(why, "authRules must be a JSON object");
        return invalid();
    }
    auto out = std::make_shared<topic_rules>();
    const json* pub = find_either(*rules, "pubAuthRulePatterns", "pub");
    const json* sub = find_either(*rules, "subAuthRulePatterns", "sub");
    // A direction without a list is open, as TBMQ's allow-all default.
    if (pub == nullptr) {
        out->publish.emplace_back(".*");
    } else if (!compile(*pub, out->publish, why)) {
        return invalid();
    }
    if (sub == nullptr) {
        out->subscribe.emplace_back(".*");
    } else if (!compile(*sub, out->subscribe, why)) {
        return invalid();
    }
    return std::shared_ptr<const topic_rules>(std::move(out));
}

std::optional<std::string> optional_string(const json& object, const char* key) {
    auto it = object.find(key);
    if (it == object.end() || !it->is_string()) {
        return std::nullopt;
    }
    return it->get<std::string>();
}

// "clientIdPattern": absent or null = any client id; otherwise a string RE2 compiles.
bool client_id_pattern_from(const json& doc, std::optional<pattern>& out, std::string* why) {
    auto it = doc.find("clientIdPattern");
    if (it == doc.end() || it->is_null()) {
        return true;
    }
    if (!it->is_string()) {
        set_why(why, "clientIdPattern must be a string");
        return false;
    }
    std::string error;
    auto compiled = pattern::compile(it->get_ref<const std::string&>(), &error);
    if (!compiled) {
        set_why(why, fmt::format("invalid clientIdPattern '{}': {}",
                                 it->get_ref<const std::string&>(), error));
        return false;
    }
    out = std::move(*compiled);
    return true;
}

}  // namespace

bool client_id_allowed(const std::optional<pattern>& client_id_pattern,
                       std::string_view client_id) {
    return !client_id_pattern || client_id_pattern->full_match(client_id);
}

std::optional<basic_auth_strategy> parse_basic_auth_strategy(std::string_view text) {
    if (text == "BOTH" || text == "CLIENT_ID_AND_USERNAME") {
        return basic_auth_strategy::both;
    }
    if (text == "CLIENT_ID") {
        return basic_auth_strategy::client_id;
    }
    if (text == "USERNAME") {
        return basic_auth_strategy::username;
    }
    return std::nullopt;
}

std::string client_id_credentials_id(std::string_view client_id) {
    return fmt::format("client_id|{}", client_id);
}
std::string username_credentials_id(std::string_view username) {
    return fmt::format("username|{}", username);
}
std::string mixed_credentials_id(std::string_view username, std::string_view client_id) {
    return fmt::format("mixed|{}|{}", username, client_id);
}
std::string ssl_credentials_id(std::string_view cn) { return fmt::format("ssl|{}", cn); }

std::vector<std::string> basic_credentials_ids(basic_auth_strategy strategy,
                                               std::string_view client_id,
                                               const std::optional<std::string>& username) {
    std::vector<std::string> ids;
    const bool by_username = strategy != basic_auth_strategy::client_id;
    const bool by_client_id = strategy != basic_auth_strategy::username;
    if (strategy == basic_auth_strategy::both && username && !client_id.empty()) {
        ids.push_back(mixed_credentials_id(*username, client_id));
    }
    if (by_username && username) {
        ids.push_back(username_credentials_id(*username));
    }
    if (by_client_id && !client_id.empty()) {
        ids.push_back(client_id_credentials_id(client_id));
    }
    return ids;
}

result<basic_credentials> parse_basic_credentials(std::string_view text, std::string* why) {
    const json doc = json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (!doc.is_object()) {
        set_why(why, "MQTT_BASIC credentials value is not a JSON object");
        return invalid();
    }
    basic_credentials out;
    out.client_id = optional_string(doc, "clientId");
    out.username = optional_string(doc, "userName");
    out.password_hash = optional_string(doc, "password");
    if (!client_id_pattern_from(doc, out.client_id_pattern, why)) {
        return invalid();
    }
    const json* rules = nullptr;
    if (auto it = doc.find("authRules"); it != doc.end()) {
        rules = &*it;
    }
    auto compiled = rules_from(rules, why);
    if (!compiled) {
        return compiled.error();
    }
    out.rules = std::move(*compiled);
    return out;
}

result<std::shared_ptr<const topic_rules>> parse_auth_rules(std::string_view text,
                                                            std::string* why) {
    if (text.empty()) {
        return topic_rules::everything();
    }
    const json doc = json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (doc.is_discarded()) {
        set_why(why, "authRules is not valid JSON");
        return invalid();
    }
    return rules_from(&doc, why);
}

bool cn_pattern_matches(std::string_view cn_pattern, std::string_view cn) {
    const auto compiled = pattern::compile(cn_pattern);
    return compiled && compiled->full_match(cn);
}

result<x509_credentials> parse_x509_credentials(std::string_view text, std::string_view leaf_cn,
                                                std::string* why) {
    const json doc = json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (!doc.is_object()) {
        set_why(why, "X_509 credentials value is not a JSON object");
        return invalid();
    }
    x509_credentials out;
    out.cert_cn_pattern = optional_string(doc, "certCnPattern").value_or("");
    if (auto it = doc.find("certCnIsRegex"); it != doc.end() && it->is_boolean()) {
        out.cert_cn_is_regex = it->get<bool>();
    }
    if (!client_id_pattern_from(doc, out.client_id_pattern, why)) {
        return invalid();
    }
    auto mapping = doc.find("authRulesMapping");
    if (mapping == doc.end() || !mapping->is_object()) {
        set_why(why, "X_509 credentials without authRulesMapping");
        return invalid();
    }
    std::shared_ptr<topic_rules> merged;
    for (const auto& [key, rules] : mapping->items()) {
        if (!cn_pattern_matches(key, leaf_cn)) {
            continue;
        }
        auto compiled = rules_from(&rules, why);
        if (!compiled) {
            return compiled.error();
        }
        if (!merged) {
            merged = std::make_shared<topic_rules>();
        }
        const auto& r = **compiled;
        merged->allow_all = merged->allow_all || r.allow_all;
        merged->publish.insert(merged->publish.end(), r.publish.begin(), r.publish.end());
        merged->subscribe.insert(merged->subscribe.end(), r.subscribe.begin(), r.subscribe.end());
    }
    out.rules = std::move(merged);
    return out;
}

result<client_credentials> to_credentials_row(const credentials_spec& spec, std::string* why,
                                              unsigned bcrypt_cost) {
    client_credentials row;
    row.name = spec.name;
    row.type = spec.type;
    row.credentials_type = spec.credentials_type;
    json rules = nullptr;
    if (spec.publish_patterns || spec.subscribe_patterns) {
        rules = json::object();
        rules["pubAuthRulePatterns"] =
            spec.publish_patterns ? json(*spec.publish_patterns) : json::array({".*"});
        rules["subAuthRulePatterns"] =
            spec.subscribe_patterns ? json(*spec.subscribe_patterns) : json::array({".*"});
        // Fail at start-up, not at the first CONNECT, on a pattern that does not compile.
        if (!rules_from(&rules, why)) {
            return invalid();
        }
    }
    if (spec.client_id_pattern) {
        if (auto error = pattern::check(*spec.client_id_pattern); !error.empty()) {
            set_why(why, fmt::format("invalid client-id-pattern '{}': {}", *spec.client_id_pattern,
                                     error));
            return invalid();
        }
    }
    const json client_id_pattern =
        spec.client_id_pattern ? json(*spec.client_id_pattern) : json(nullptr);
    if (spec.credentials_type == credentials_type_basic) {
        if (!spec.client_id && !spec.username) {
            set_why(why, "MQTT_BASIC credentials need a client-id, a username or both");
            return invalid();
        }
        if (spec.cert_cn) {
            set_why(why, "cert-cn belongs to X_509 credentials, not MQTT_BASIC");
            return invalid();
        }
        json value = json::object();
        value["clientId"] = spec.client_id ? json(*spec.client_id) : json(nullptr);
        value["userName"] = spec.username ? json(*spec.username) : json(nullptr);
        value["password"] = nullptr;
        if (spec.password) {
            if (is_bcrypt_hash(*spec.password)) {
                value["password"] = *spec.password;
            } else {
                auto hashed = bcrypt_hash(*spec.password, bcrypt_cost);
                if (!hashed) {
                    set_why(why, "bcrypt hashing of the password failed");
                    return invalid();
                }
                value["password"] = *hashed;
            }
        }
        value["authRules"] = rules;
        if (!client_id_pattern.is_null()) {
            value["clientIdPattern"] = client_id_pattern;
        }
        row.credentials_value = value.dump();
        if (spec.client_id && spec.username) {
            row.credentials_id = mixed_credentials_id(*spec.username, *spec.client_id);
        } else if (spec.username) {
            row.credentials_id = username_credentials_id(*spec.username);
        } else {
            row.credentials_id = client_id_credentials_id(*spec.client_id);
        }
        return row;
    }
    if (spec.credentials_type == credentials_type_x509) {
        if (!spec.cert_cn || spec.cert_cn->empty()) {
            set_why(why, "X_509 credentials need cert-cn (or cert-cn-regex)");
            return invalid();
        }
        if (spec.cert_cn_is_regex) {
            // A CN pattern that does not compile would match nothing at CONNECT: refuse it here.
            if (auto error = pattern::check(*spec.cert_cn); !error.empty()) {
                set_why(why, fmt::format("invalid cert-cn-regex '{}': {}", *spec.cert_cn, error));
                return invalid();
            }
        }
        if (spec.password || spec.username || spec.client_id) {
            set_why(why, "X_509 credentials take cert-cn, not client-id/username/password");
            return invalid();
        }
        json value = json::object();
        value["certCnPattern"] = *spec.cert_cn;
        value["certCnIsRegex"] = spec.cert_cn_is_regex;
        value["authRulesMapping"] = json::object();
        value["authRulesMapping"][".*"] =
            rules.is_null() ? json{{"pubAuthRulePatterns", {".*"}}, {"subAuthRulePatterns", {".*"}}}
                            : rules;
        if (!client_id_pattern.is_null()) {
            value["clientIdPattern"] = client_id_pattern;
        }
        row.credentials_value = value.dump();
        row.credentials_id = ssl_credentials_id(*spec.cert_cn);
        return row;
    }
    set_why(why,
            fmt::format("credentials type '{}' is not MQTT_BASIC or X_509", spec.credentials_type));
    return invalid();
}

}  // namespace starling::auth
