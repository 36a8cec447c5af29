#include "config/loader.h"

#include "auth/pattern.h"
#include "base/assert.h"
#include "base/cgroup.h"
#include "base/text.h"
#include "config/datasource_url.h"
#include "ratelimit/bandwidth_spec.h"

#include <arpa/inet.h>
#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <initializer_list>
#include <limits>
#include <map>
#include <sstream>
#include <thread>
#include <type_traits>
#include <unordered_set>
#include <utility>

namespace starling::config {
namespace {

// ---------------------------------------------------------------------------------------------
// Enum names, shared by parsing and to_string().

constexpr std::array<std::pair<std::string_view, run_mode>, 2> run_mode_names{{
    {"embedded", run_mode::embedded},
    {"cluster", run_mode::cluster},
}};

constexpr std::array<std::pair<std::string_view, fsync_policy>, 3> fsync_policy_names{{
    {"none", fsync_policy::none},
    {"interval", fsync_policy::interval},
    {"always", fsync_policy::always},
}};

constexpr std::array<std::pair<std::string_view, shared_subscription_processing>, 1>
    shared_processing_names{{
        {"ROUND_ROBIN", shared_subscription_processing::round_robin},
    }};

constexpr std::array<std::pair<std::string_view, basic_auth_strategy>, 4> basic_strategy_names{{
    {"BOTH", basic_auth_strategy::both},
    {"CLIENT_ID", basic_auth_strategy::client_id},
    {"USERNAME", basic_auth_strategy::username},
    {"CLIENT_ID_AND_USERNAME", basic_auth_strategy::both},  // TBMQ's name for BOTH
}};

constexpr std::array<std::string_view, 4> auth_provider_names{"MQTT_BASIC", "X_509", "JWT", "HTTP"};

constexpr std::array<std::pair<std::string_view, tls_protocol_version>, 2> tls_protocol_names{{
    {"TLSv1.2", tls_protocol_version::tls_v1_2},
    {"TLSv1.3", tls_protocol_version::tls_v1_3},
}};

constexpr std::array<std::pair<std::string_view, client_auth_type>, 3> client_auth_names{{
    {"none", client_auth_type::none},
    {"requested", client_auth_type::requested},
    {"required", client_auth_type::required},
}};

constexpr std::array<std::string_view, 7> log_levels{"trace", "debug",    "info", "warn",
                                                     "error", "critical", "off"};

template <class E, std::size_t N>
std::string_view name_of(const std::array<std::pair<std::string_view, E>, N>& names, E value) {
    for (const auto& [name, candidate] : names) {
        if (candidate == value) {
            return name;
        }
    }
    return "?";
}

template <class Range>
std::string join(const Range& items, std::string_view separator = ", ") {
    std::string out;
    for (const auto& item : items) {
        if (!out.empty()) {
            out += separator;
        }
        if constexpr (requires { item.first; }) {
            out += item.first;
        } else {
            out += item;
        }
    }
    return out;
}

bool iequals(std::string_view a, std::string_view b) {
    return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
               return std::tolower(static_cast<unsigned char>(x)) ==
                      std::tolower(static_cast<unsigned char>(y));
           });
}

// ---------------------------------------------------------------------------------------------
// A value as found for one key, after placeholder substitution.

struct raw_value {
    std::string_view key;
    std::string text;
    std::string env_used;  // the variable(s) that supplied the value, for error messages
};

[[noreturn]] void reject(const raw_value& value, std::string_view why) {
    std::string message = fmt::format("{}: \"{}\" {}", value.key, value.text, why);
    if (!value.env_used.empty()) {
        message += fmt::format(" (value from environment variable {})", value.env_used);
    }
    throw config_error(std::string(value.key), message);
}

bool valid_env_name(std::string_view name) {
    if (name.empty() || std::isdigit(static_cast<unsigned char>(name.front())) != 0) {
        return false;
    }
    return std::all_of(name.begin(), name.end(), [](char c) {
        return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_';
    });
}

// ${clientId}, ${username} and ${password} are the auth providers' per-CONNECT placeholders
// (TBMQ's spelling), not environment variables: they pass through unchanged.
bool is_provider_placeholder(std::string_view inner) {
    return inner == "clientId" || inner == "username" || inner == "password";
}

// Replaces every ${NAME} and ${NAME:default} in text. The default runs to the closing brace
// and may itself contain ':' (Spring's rule); nesting is not supported.
raw_value substitute(std::string_view key, std::string_view text, const env_lookup& env) {
    raw_value out{key, {}, {}};
    std::size_t pos = 0;
    while (pos < text.size()) {
        const auto open = text.find("${", pos);
        if (open == std::string_view::npos) {
            out.text.append(text.substr(pos));
            break;
        }
        out.text.append(text.substr(pos, open - pos));
        const auto close = text.find('}', open + 2);
        if (close == std::string_view::npos) {
            throw config_error(
                std::string(key),
                fmt::format("{}: \"{}\" has a '${{' without its closing '}}'", key, text));
        }
        const auto inner = text.substr(open + 2, close - open - 2);
        const auto colon = inner.find(':');
        const auto name = inner.substr(0, colon);
        if (is_provider_placeholder(inner)) {
            // Filled per CONNECT by the JWT/HTTP providers (request-body, auth-claims).
            out.text.append(text.substr(open, close + 1 - open));
            pos = close + 1;
            continue;
        }
        if (!valid_env_name(name)) {
            throw config_error(std::string(key),
                               fmt::format("{}: \"{}\" has a malformed placeholder: \"{}\" is not "
                                           "an environment variable name",
                                           key, text, name));
        }
        if (auto found = env(name)) {
            out.text += *found;
            if (!out.env_used.empty()) {
                out.env_used += ", ";
            }
            out.env_used += name;
        } else if (colon != std::string_view::npos) {
            out.text.append(inner.substr(colon + 1));
        } else {
            throw config_error(std::string(key),
                               fmt::format("{}: \"{}\" needs environment variable {}, which is "
                                           "not set",
                                           key, text, name));
        }
        pos = close + 1;
    }
    return out;
}

// ---------------------------------------------------------------------------------------------
// The binder: one table row per key. A row knows the key, its environment variable, its
// default, and how to parse, check and store the value.

using applier = std::function<void(broker_config&, const raw_value&)>;

struct binding {
    key_info info;
    applier apply;
};

template <class T>
struct is_duration : std::false_type {};
template <class Rep, class Period>
struct is_duration<std::chrono::duration<Rep, Period>> : std::true_type {};

template <class Access>
using field_of = std::remove_cvref_t<std::invoke_result_t<Access, broker_config&>>;

std::optional<std::int64_t> parse_integer(std::string_view text) {
    text = base::trim(text);
    std::int64_t value = 0;
    const auto* end = text.data() + text.size();
    auto [ptr, ec] = std::from_chars(text.data(), end, value);
    if (text.empty() || ec != std::errc{} || ptr != end) {
        return std::nullopt;
    }
    return value;
}

// Spring's relaxed booleans, so TBMQ env files carry over.
std::optional<bool> parse_bool(std::string_view text) {
    text = base::trim(text);
    for (std::string_view yes : {"true", "yes", "on", "1"}) {
        if (iequals(text, yes)) {
            return true;
        }
    }
    for (std::string_view no : {"false", "no", "off", "0"}) {
        if (iequals(text, no)) {
            return false;
        }
    }
    return std::nullopt;
}

struct int_rule {
    std::int64_t min;
    std::int64_t max;
    std::string_view unit = {};  // the unit the file uses, shown in messages
    std::int64_t scale = 1;      // file unit -> stored unit (KB -> bytes: 1024)
    std::string_view note = {};  // extra explanation for out-of-range values
};

template <class Access>
binding integer(key_info info, Access access, int_rule rule) {
    using field_type = field_of<Access>;
    if constexpr (is_duration<field_type>::value) {
        STARLING_ASSERT(rule.scale == 1);
        STARLING_ASSERT(rule.max <= std::numeric_limits<typename field_type::rep>::max());
    } else {
        static_assert(std::is_integral_v<field_type>);
        STARLING_ASSERT(rule.min >= 0 || std::is_signed_v<field_type>);
        STARLING_ASSERT(static_cast<std::uint64_t>(rule.max) *
                            static_cast<std::uint64_t>(rule.scale) <=
                        static_cast<std::uint64_t>(std::numeric_limits<field_type>::max()));
    }
    return {info, [access, rule](broker_config& config, const raw_value& value) {
                const auto parsed = parse_integer(value.text);
                if (!parsed) {
                    reject(value, "is not an integer");
                }
                if (*parsed < rule.min || *parsed > rule.max) {
                    std::string why = fmt::format("is out of range ({}..{}{}{}", rule.min, rule.max,
                                                  rule.unit.empty() ? "" : " ", rule.unit);
                    if (!rule.note.empty()) {
                        why += fmt::format("; {}", rule.note);
                    }
                    reject(value, why + ")");
                }
                if constexpr (is_duration<field_type>::value) {
                    access(config) = field_type{*parsed};
                } else {
                    access(config) = static_cast<field_type>(*parsed * rule.scale);
                }
            }};
}

template <class Access>
binding port(key_info info, Access access) {
    static_assert(std::is_same_v<field_of<Access>, std::uint16_t>);
    return {info, [access](broker_config& config, const raw_value& value) {
                const auto parsed = parse_integer(value.text);
                if (!parsed || *parsed < 0 || *parsed > 65535) {
                    reject(value, "is not a valid port (1..65535, or 0 for any)");
                }
                access(config) = static_cast<std::uint16_t>(*parsed);
            }};
}

template <class Access>
binding boolean(key_info info, Access access) {
    return {info, [access](broker_config& config, const raw_value& value) {
                const auto parsed = parse_bool(value.text);
                if (!parsed) {
                    reject(value, "is not a boolean (true or false)");
                }
                access(config) = *parsed;
            }};
}

// A per-listener override: empty = unset (inherit the global value).
template <class Access>
binding optional_boolean(key_info info, Access access) {
    return {info, [access](broker_config& config, const raw_value& value) {
                if (base::trim(value.text).empty()) {
                    access(config) = std::nullopt;
                    return;
                }
                const auto parsed = parse_bool(value.text);
                if (!parsed) {
                    reject(value, "is not a boolean (true, false, or empty to inherit)");
                }
                access(config) = *parsed;
            }};
}

template <class Access, class E, std::size_t N>
binding enumeration(key_info info, Access access,
                    const std::array<std::pair<std::string_view, E>, N>& names) {
    return {info, [access, &names](broker_config& config, const raw_value& value) {
                const auto text = base::trim(value.text);
                for (const auto& [name, candidate] : names) {
                    if (iequals(text, name)) {
                        access(config) = candidate;
                        return;
                    }
                }
                reject(value, fmt::format("is not one of: {}", join(names)));
            }};
}

// Returns why a string is not acceptable, or nullopt when it is.
using string_check = std::optional<std::string> (*)(std::string_view);

template <class Access>
binding text(key_info info, Access access, string_check check = nullptr) {
    return {info, [access, check](broker_config& config, const raw_value& value) {
                if (check != nullptr) {
                    if (auto why = check(value.text)) {
                        reject(value, *why);
                    }
                }
                access(config) = value.text;
            }};
}

// A comma-separated list of provider names (a YAML list arrives joined with commas).
template <class Access>
binding provider_list(key_info info, Access access) {
    return {info, [access](broker_config& config, const raw_value& value) {
                std::vector<std::string> names;
                std::string_view rest = value.text;
                while (!base::trim(rest).empty()) {
                    const auto comma = rest.find(',');
                    const auto name = base::trim(rest.substr(0, comma));
                    if (std::find(auth_provider_names.begin(), auth_provider_names.end(), name) ==
                        auth_provider_names.end()) {
                        reject(value, fmt::format("names '{}', which is not a provider ({})", name,
                                                  join(auth_provider_names)));
                    }
                    if (std::find(names.begin(), names.end(), name) != names.end()) {
                        reject(value, fmt::format("lists '{}' twice", name));
                    }
                    names.emplace_back(name);
                    if (comma == std::string_view::npos) {
                        break;
                    }
                    rest = rest.substr(comma + 1);
                }
                access(config) = std::move(names);
            }};
}

// A comma-separated list of files (each must exist when the list is not empty).
template <class Access>
binding file_list(key_info info, Access access) {
    return {info, [access](broker_config& config, const raw_value& value) {
                std::vector<std::filesystem::path> files;
                std::string_view rest = value.text;
                while (!base::trim(rest).empty()) {
                    const auto comma = rest.find(',');
                    const auto name = base::trim(rest.substr(0, comma));
                    std::error_code ec;
                    if (!std::filesystem::is_regular_file(std::filesystem::path(name), ec)) {
                        reject(value,
                               fmt::format("names '{}', which is not a readable file", name));
                    }
                    files.emplace_back(name);
                    if (comma == std::string_view::npos) {
                        break;
                    }
                    rest = rest.substr(comma + 1);
                }
                access(config) = std::move(files);
            }};
}

// spring.datasource.url: checked here so the error names the key, resolved into host, port,
// database... by resolve(). The message masks a password written in the URL.
template <class Access>
binding datasource_url_text(key_info info, Access access) {
    return {
        info, [access](broker_config& config, const raw_value& value) {
            const auto parsed = parse_datasource_url(value.text);
            if (!parsed.url) {
                std::string shown = value.text;
                const auto scheme_end = shown.find("://");
                const auto at = shown.rfind('@');
                if (scheme_end != std::string::npos && at != std::string::npos && at > scheme_end) {
                    const auto colon = shown.find(':', scheme_end + 3);
                    if (colon != std::string::npos && colon < at) {
                        shown.replace(colon + 1, at - colon - 1, "***");
                    }
                }
                raw_value masked = value;
                masked.text = shown;
                reject(masked, parsed.why);
            }
            access(config) = value.text;
        }};
}

// A rate-limit value that may be empty (= unlimited).
template <class Access>
binding optional_bandwidths(key_info info, Access access) {
    return {info, [access](broker_config& config, const raw_value& value) {
                if (base::trim(value.text).empty()) {
                    access(config) = {};
                    return;
                }
                std::string why;
                auto parsed = ratelimit::parse_bandwidths(value.text, &why);
                if (!parsed) {
                    reject(value, why + " (or empty for no limit)");
                }
                access(config) = std::move(*parsed);
            }};
}

// A port that may be empty (= unset).
template <class Access>
binding optional_port(key_info info, Access access) {
    return {info, [access](broker_config& config, const raw_value& value) {
                if (base::trim(value.text).empty()) {
                    access(config) = std::nullopt;
                    return;
                }
                const auto parsed = parse_integer(value.text);
                if (!parsed || *parsed < 0 || *parsed > 65535) {
                    reject(value, "is not a valid port (1..65535, 0 for any, or empty for none)");
                }
                access(config) = static_cast<std::uint16_t>(*parsed);
            }};
}

// --- string checks

std::optional<std::string> ip_address(std::string_view text) {
    const std::string s(text);
    unsigned char buffer[sizeof(in6_addr)];
    if (inet_pton(AF_INET, s.c_str(), buffer) == 1 || inet_pton(AF_INET6, s.c_str(), buffer) == 1) {
        return std::nullopt;
    }
    return "is not an IPv4 or IPv6 address (use 0.0.0.0 or :: for every interface)";
}

std::optional<std::string> ip_address_or_empty(std::string_view text) {
    if (base::trim(text).empty()) {
        return std::nullopt;
    }
    return ip_address(text);
}

std::optional<std::string> not_empty(std::string_view text) {
    if (base::trim(text).empty()) {
        return "must not be empty";
    }
    return std::nullopt;
}

// "mqttv3.1,mqtt": at least one name, no empty entries.
std::optional<std::string> comma_list(std::string_view text) {
    std::size_t pos = 0;
    while (true) {
        const auto comma = text.find(',', pos);
        const auto item = base::trim(text.substr(
            pos, comma == std::string_view::npos ? std::string_view::npos : comma - pos));
        if (item.empty()) {
            return "must be a comma-separated list of WebSocket subprotocols without empty "
                   "entries (e.g. mqttv3.1,mqtt)";
        }
        if (comma == std::string_view::npos) {
            return std::nullopt;
        }
        pos = comma + 1;
    }
}

std::optional<std::string> known_log_level(std::string_view text) {
    if (std::find(log_levels.begin(), log_levels.end(), text) == log_levels.end()) {
        return fmt::format("is not a known log level ({})", join(log_levels));
    }
    return std::nullopt;
}

// TBMQ's Kafka property strings: "key:value;key:value", "\\;" for a ';' inside a value, blanks
// around keys and values trimmed, empty entries ignored.
std::optional<kafka_properties> parse_kafka_properties(std::string_view text, std::string* why) {
    kafka_properties out;
    std::string entry;
    auto finish = [&]() {
        const std::string e(base::trim(entry));
        entry.clear();
        if (e.empty()) {
            return true;
        }
        const auto colon = e.find(':');
        if (colon == std::string_view::npos || base::trim(e.substr(0, colon)).empty()) {
            *why = fmt::format(
                "has the entry \"{}\", which is not key:value (entries are "
                "separated by ';', write \\; for a ';' inside a value)",
                e);
            return false;
        }
        out[std::string(base::trim(e.substr(0, colon)))] =
            std::string(base::trim(e.substr(colon + 1)));
        return true;
    };
    for (std::size_t i = 0; i < text.size(); ++i) {
        if (text[i] == '\\' && i + 1 < text.size() && text[i + 1] == ';') {
            entry += ';';
            ++i;
        } else if (text[i] == ';') {
            if (!finish()) {
                return std::nullopt;
            }
        } else {
            entry += text[i];
        }
    }
    if (!finish()) {
        return std::nullopt;
    }
    return out;
}

template <class Access>
binding properties(key_info info, Access access) {
    return {info, [access](broker_config& config, const raw_value& value) {
                std::string why;
                auto parsed = parse_kafka_properties(value.text, &why);
                if (!parsed) {
                    reject(value, why);
                }
                access(config) = std::move(*parsed);
            }};
}

// A "limit:seconds[,limit:seconds...]" rate-limit value (src/ratelimit/bandwidth_spec.h).
template <class Access>
binding bandwidths(key_info info, Access access) {
    return {info, [access](broker_config& config, const raw_value& value) {
                std::string why;
                auto parsed = ratelimit::parse_bandwidths(value.text, &why);
                if (!parsed) {
                    reject(value, why);
                }
                access(config) = std::move(*parsed);
            }};
}

std::optional<std::string> kafka_acks(std::string_view text) {
    if (text == "0" || text == "1" || text == "all" || text == "-1") {
        return std::nullopt;
    }
    return "is not a Kafka acks value (0, 1 or all)";
}

std::optional<std::string> kafka_compression(std::string_view text) {
    for (std::string_view codec : {"none", "gzip", "snappy", "lz4", "zstd"}) {
        if (text == codec) {
            return std::nullopt;
        }
    }
    return "is not a Kafka compression type (none, gzip, snappy, lz4 or zstd)";
}

// Node ids and the topic prefix become parts of log topic names, which Kafka restricts to
// [a-zA-Z0-9._-] and 249 characters in all.
constexpr std::size_t max_name_part = 100;

std::optional<std::string> topic_name_part(std::string_view text) {
    if (text.size() > max_name_part) {
        return fmt::format("is longer than {} characters (it becomes part of log topic names)",
                           max_name_part);
    }
    const auto bad = std::find_if(text.begin(), text.end(), [](char c) {
        return std::isalnum(static_cast<unsigned char>(c)) == 0 && c != '.' && c != '_' && c != '-';
    });
    if (bad != text.end()) {
        return fmt::format(
            "contains '{}'; only letters, digits, '.', '_' and '-' are allowed (it becomes part "
            "of log topic names)",
            *bad);
    }
    return std::nullopt;
}

std::optional<std::string> one_of_names(std::string_view text,
                                        std::initializer_list<std::string_view> names) {
    if (std::find(names.begin(), names.end(), text) != names.end()) {
        return std::nullopt;
    }
    std::string list;
    for (auto name : names) {
        list += (list.empty() ? "" : ", ") + std::string(name);
    }
    return fmt::format("is not one of: {}", list);
}

std::optional<std::string> client_type_name(std::string_view text) {
    return one_of_names(text, {"DEVICE", "APPLICATION"});
}
std::optional<std::string> jwt_verifier_name(std::string_view text) {
    return one_of_names(text, {"ALGORITHM_BASED", "JWKS"});
}
std::optional<std::string> jwt_algorithm_name(std::string_view text) {
    return one_of_names(text, {"HMAC_BASED", "PEM_KEY"});
}
std::optional<std::string> http_method_name(std::string_view text) {
    return one_of_names(text, {"GET", "POST", "PUT", "PATCH", "DELETE"});
}
std::optional<std::string> non_empty_text(std::string_view text) {
    if (text.empty()) {
        return std::string("must not be empty");
    }
    return std::nullopt;
}
// HS256 wants a key at least as long as its output (RFC 7518 §3.2).
std::optional<std::string> signing_key_text(std::string_view text) {
    if (!text.empty() && text.size() < 32) {
        return std::string(
            "is shorter than 32 bytes (HS256 needs at least 32; leave it empty "
            "to have one generated)");
    }
    return std::nullopt;
}
// TBMQ's three connection types.
std::optional<std::string> redis_connection_type(std::string_view text) {
    if (text == "standalone" || text == "sentinel" || text == "cluster") {
        return std::nullopt;
    }
    return std::string("is not one of: standalone, sentinel, cluster");
}

// "host:port,host:port" (spaces around items allowed; an IPv6 host in brackets: [::1]:26379).
template <class Access>
binding host_port_list(key_info info, Access access) {
    return {info, [access](broker_config& config, const raw_value& value) {
                std::vector<std::pair<std::string, std::uint16_t>> out;
                std::string_view rest = value.text;
                while (!base::trim(rest).empty()) {
                    const auto comma = rest.find(',');
                    const auto item = base::trim(rest.substr(0, comma));
                    const auto colon = item.rfind(':');
                    auto host = colon == std::string_view::npos ? item : item.substr(0, colon);
                    if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
                        host = host.substr(1, host.size() - 2);
                    }
                    const auto port =
                        colon == std::string_view::npos
                            ? std::nullopt
                            : base::parse_number<std::uint16_t>(item.substr(colon + 1));
                    if (host.empty() || !port || *port == 0) {
                        reject(value, fmt::format("'{}' is not host:port", item));
                    }
                    out.emplace_back(std::string(host), *port);
                    if (comma == std::string_view::npos) {
                        break;
                    }
                    rest = rest.substr(comma + 1);
                }
                access(config) = std::move(out);
            }};
}

// Spelling a field access as a lambda per row keeps each row on one line; the macro exists
// only to spare that boilerplate and is undefined right after the table.
#define FIELD(path) \
    [](broker_config & c) -> auto& { return c.path; }

constexpr std::int64_t u32_max = std::numeric_limits<std::uint32_t>::max();
constexpr std::int64_t i64_max = std::numeric_limits<std::int64_t>::max();

// Adding a key: a field in broker_config.h, a row here, a line in config/starling.yml (and
// its row in docs/configuration.md). Tests check that the file and this table agree.
const std::vector<binding>& bindings() {
    static const std::vector<binding> table{
        // --- starling
        enumeration({"starling.mode", "STARLING_MODE", "embedded"}, FIELD(starling.mode),
                    run_mode_names),
        text({"starling.data_dir", "STARLING_DATA_DIR", "./data"}, FIELD(starling.data_dir),
             not_empty),
        text({"starling.log_level", "STARLING_LOG_LEVEL", "info"}, FIELD(starling.log_level),
             known_log_level),
        text({"starling.log_format", "STARLING_LOG_FORMAT", "text"}, FIELD(starling.log_format),
             [](std::string_view t) {
                 return one_of_names(t, {"text", "json"});
             }),
        integer({"starling.shutdown_timeout_sec", "TBMQ_GRACEFUL_SHUTDOWN_TIMEOUT_SEC", "10"},
                FIELD(starling.shutdown_timeout), {.min = 0, .max = 3600, .unit = "s"}),
        integer({"starling.drain.rate", "STARLING_DRAIN_RATE", "500"}, FIELD(starling.drain_rate),
                {.min = 1, .max = 1000000, .unit = "connections/s"}),
        text({"starling.drain.server_reference", "STARLING_DRAIN_SERVER_REFERENCE", ""},
             FIELD(starling.drain_server_reference)),
        // --- service
        text({"service.id", "TB_SERVICE_ID", ""}, FIELD(service.id), topic_name_part),
        integer({"service.heartbeat-interval", "TB_SERVICE_HEARTBEAT_INTERVAL", "5000"},
                FIELD(service.heartbeat_interval), {.min = 100, .max = 600000, .unit = "ms"}),
        // --- integrations
        boolean({"integrations.executor.enabled", "INTEGRATIONS_EXECUTOR_ENABLED", "true"},
                FIELD(integrations.executor_enabled)),
        integer({"integrations.refresh-interval", "INTEGRATIONS_REFRESH_INTERVAL", "10000"},
                FIELD(integrations.refresh_interval), {.min = 100, .max = 3'600'000, .unit = "ms"}),
        // --- server (HTTP)
        text({"server.address", "HTTP_BIND_ADDRESS", "0.0.0.0"}, FIELD(server.address), ip_address),
        port({"server.port", "HTTP_BIND_PORT", "8083"}, FIELD(server.port)),
        text({"server.api.address", "HTTP_API_BIND_ADDRESS", ""}, FIELD(server.api_address),
             ip_address_or_empty),
        optional_port({"server.api.port", "HTTP_API_BIND_PORT", ""}, FIELD(server.api_port)),
        integer({"server.max-connections", "HTTP_MAX_CONNECTIONS", "256"},
                FIELD(server.max_connections), {.min = 1, .max = 1'000'000}),
        integer({"server.max-connections-per-address", "HTTP_MAX_CONNECTIONS_PER_ADDRESS", "32"},
                FIELD(server.max_connections_per_address),
                {.min = 0, .max = 1'000'000, .note = "0 = no limit"}),
        integer({"server.health-reserved-connections", "HTTP_HEALTH_RESERVED_CONNECTIONS", "16"},
                FIELD(server.health_reserved_connections), {.min = 0, .max = 10'000}),
        // --- listener
        integer(
            {"listener.write_buffer_high_water_mark", "NETTY_WRITE_BUFFER_HIGH_WATER_MARK", "1280"},
            FIELD(listener.write_buffer_high_water_mark),
            {.min = 1, .max = 1048576, .unit = "KB", .scale = 1024}),
        integer(
            {"listener.write_buffer_low_water_mark", "NETTY_WRITE_BUFFER_LOW_WATER_MARK", "640"},
            FIELD(listener.write_buffer_low_water_mark),
            {.min = 0, .max = 1048576, .unit = "KB", .scale = 1024}),
        integer({"listener.so_receive_buffer", "NETTY_SO_RECEIVE_BUFFER", "0"},
                FIELD(listener.so_receive_buffer),
                {.min = 0, .max = 1048576, .unit = "KB", .scale = 1024, .note = "0 = OS default"}),
        integer({"listener.connect_timeout_ms", "LISTENER_CONNECT_TIMEOUT_MS", "10000"},
                FIELD(listener.connect_timeout),
                {.min = 100,
                 .max = 3'600'000,
                 .unit = "ms",
                 .note = "a connection needs a deadline for its CONNECT"}),
        integer({"listener.max_connections_per_address", "LISTENER_MAX_CONNECTIONS_PER_ADDRESS",
                 "10000"},
                FIELD(listener.max_connections_per_address),
                {.min = 0, .max = u32_max, .note = "0 = no limit"}),
        optional_bandwidths({"listener.connect_rate_per_address",
                             "LISTENER_CONNECT_RATE_PER_ADDRESS", "1000:1,30000:60"},
                            FIELD(listener.connect_rate_per_address)),
        integer({"listener.fd_reserve", "LISTENER_FD_RESERVE", "1024"}, FIELD(listener.fd_reserve),
                {.min = 0, .max = 1'000'000, .note = "0 = no reserve"}),
        integer({"listener.so_keep_alive_idle", "LISTENER_SO_KEEP_ALIVE_IDLE", "60"},
                FIELD(listener.so_keep_alive_idle), {.min = 1, .max = 32767, .unit = "s"}),
        integer({"listener.so_keep_alive_interval", "LISTENER_SO_KEEP_ALIVE_INTERVAL", "10"},
                FIELD(listener.so_keep_alive_interval), {.min = 1, .max = 32767, .unit = "s"}),
        integer({"listener.so_keep_alive_count", "LISTENER_SO_KEEP_ALIVE_COUNT", "6"},
                FIELD(listener.so_keep_alive_count), {.min = 1, .max = 127}),
        integer({"listener.io_threads", "LISTENER_IO_THREADS", "0"}, FIELD(listener.io_threads),
                {.min = 0, .max = 1024, .note = "0 = number of cores"}),
        boolean({"listener.tcp.enabled", "LISTENER_TCP_ENABLED", "true"},
                FIELD(listener.tcp.enabled)),
        text({"listener.tcp.bind_address", "LISTENER_TCP_BIND_ADDRESS", "0.0.0.0"},
             FIELD(listener.tcp.bind_address), ip_address),
        port({"listener.tcp.bind_port", "LISTENER_TCP_BIND_PORT", "1883"},
             FIELD(listener.tcp.bind_port)),
        integer({"listener.tcp.netty.max_payload_size", "TCP_NETTY_MAX_PAYLOAD_SIZE", "65536"},
                FIELD(listener.tcp.netty.max_payload_size),
                {.min = 64,
                 .max = 268435460,
                 .unit = "bytes",
                 .note = "the largest MQTT packet is 268435460 bytes"}),
        integer({"listener.tcp.netty.shutdown_timeout", "TCP_NETTY_SHUTDOWN_TIMEOUT", "5"},
                FIELD(listener.tcp.netty.shutdown_timeout), {.min = 0, .max = 3600, .unit = "s"}),
        boolean({"listener.tcp.netty.so_keep_alive", "TCP_NETTY_SO_KEEPALIVE", "true"},
                FIELD(listener.tcp.netty.so_keep_alive)),
        integer({"listener.tcp.max_connections", "LISTENER_TCP_MAX_CONNECTIONS", "100000"},
                FIELD(listener.tcp.max_connections), {.min = 1, .max = 10'000'000}),
        boolean({"listener.proxy_enabled", "MQTT_PROXY_PROTOCOL_ENABLED", "false"},
                FIELD(listener.proxy_enabled)),
        optional_boolean({"listener.tcp.proxy_enabled", "MQTT_TCP_PROXY_PROTOCOL_ENABLED", ""},
                         FIELD(listener.tcp.proxy_enabled)),
        boolean({"listener.ssl.enabled", "LISTENER_SSL_ENABLED", "false"},
                FIELD(listener.ssl.enabled)),
        text({"listener.ssl.bind_address", "LISTENER_SSL_BIND_ADDRESS", "0.0.0.0"},
             FIELD(listener.ssl.bind_address), ip_address),
        port({"listener.ssl.bind_port", "LISTENER_SSL_BIND_PORT", "8883"},
             FIELD(listener.ssl.bind_port)),
        optional_boolean({"listener.ssl.proxy_enabled", "MQTT_SSL_PROXY_PROTOCOL_ENABLED", ""},
                         FIELD(listener.ssl.proxy_enabled)),
        integer({"listener.ssl.netty.max_payload_size", "SSL_NETTY_MAX_PAYLOAD_SIZE", "65536"},
                FIELD(listener.ssl.netty.max_payload_size),
                {.min = 64,
                 .max = 268435460,
                 .unit = "bytes",
                 .note = "the largest MQTT packet is 268435460 bytes"}),
        integer({"listener.ssl.netty.shutdown_timeout", "SSL_NETTY_SHUTDOWN_TIMEOUT", "5"},
                FIELD(listener.ssl.netty.shutdown_timeout), {.min = 0, .max = 3600, .unit = "s"}),
        boolean({"listener.ssl.netty.so_keep_alive", "SSL_NETTY_SO_KEEPALIVE", "true"},
                FIELD(listener.ssl.netty.so_keep_alive)),
        integer({"listener.ssl.max_connections", "LISTENER_SSL_MAX_CONNECTIONS", "100000"},
                FIELD(listener.ssl.max_connections), {.min = 1, .max = 10'000'000}),
        enumeration({"listener.ssl.config.protocol", "LISTENER_SSL_PROTOCOL", "TLSv1.2"},
                    FIELD(listener.ssl.config.protocol), tls_protocol_names),
        text(
            {"listener.ssl.config.enabled_cipher_suites", "LISTENER_SSL_ENABLED_CIPHER_SUITES", ""},
            FIELD(listener.ssl.config.enabled_cipher_suites)),
        text({"listener.ssl.config.credentials.pem.cert_file", "LISTENER_SSL_PEM_CERT",
              "mqttserver.pem"},
             FIELD(listener.ssl.config.credentials.pem.cert_file)),
        text({"listener.ssl.config.credentials.pem.key_file", "LISTENER_SSL_PEM_KEY",
              "mqttserver_key.pem"},
             FIELD(listener.ssl.config.credentials.pem.key_file)),
        text({"listener.ssl.config.credentials.pem.key_password", "LISTENER_SSL_PEM_KEY_PASSWORD",
              ""},
             FIELD(listener.ssl.config.credentials.pem.key_password)),
        enumeration({"listener.ssl.config.client_auth", "LISTENER_SSL_CLIENT_AUTH", "none"},
                    FIELD(listener.ssl.config.client_auth), client_auth_names),
        text({"listener.ssl.config.trust_store", "LISTENER_SSL_TRUST_STORE", ""},
             FIELD(listener.ssl.config.trust_store)),
        integer({"listener.ssl.config.reload_interval", "LISTENER_SSL_RELOAD_INTERVAL", "5"},
                FIELD(listener.ssl.config.reload_interval),
                {.min = 0, .max = 86400, .unit = "s", .note = "0 = never reload"}),
        boolean({"listener.ws.enabled", "LISTENER_WS_ENABLED", "true"}, FIELD(listener.ws.enabled)),
        text({"listener.ws.bind_address", "LISTENER_WS_BIND_ADDRESS", "0.0.0.0"},
             FIELD(listener.ws.bind_address), ip_address),
        port({"listener.ws.bind_port", "LISTENER_WS_BIND_PORT", "8084"},
             FIELD(listener.ws.bind_port)),
        optional_boolean({"listener.ws.proxy_enabled", "MQTT_WS_PROXY_PROTOCOL_ENABLED", ""},
                         FIELD(listener.ws.proxy_enabled)),
        integer({"listener.ws.netty.max_payload_size", "WS_NETTY_MAX_PAYLOAD_SIZE", "65536"},
                FIELD(listener.ws.netty.max_payload_size),
                {.min = 64,
                 .max = 268435460,
                 .unit = "bytes",
                 .note = "the largest MQTT packet is 268435460 bytes"}),
        integer({"listener.ws.netty.shutdown_timeout", "WS_NETTY_SHUTDOWN_TIMEOUT", "5"},
                FIELD(listener.ws.netty.shutdown_timeout), {.min = 0, .max = 3600, .unit = "s"}),
        boolean({"listener.ws.netty.so_keep_alive", "WS_NETTY_SO_KEEPALIVE", "true"},
                FIELD(listener.ws.netty.so_keep_alive)),
        integer({"listener.ws.max_connections", "LISTENER_WS_MAX_CONNECTIONS", "100000"},
                FIELD(listener.ws.max_connections), {.min = 1, .max = 10'000'000}),
        text({"listener.ws.netty.sub_protocols", "WS_NETTY_SUB_PROTOCOLS", "mqttv3.1,mqtt"},
             FIELD(listener.ws.netty.sub_protocols), comma_list),
        boolean({"listener.wss.enabled", "LISTENER_WSS_ENABLED", "false"},
                FIELD(listener.wss.enabled)),
        text({"listener.wss.bind_address", "LISTENER_WSS_BIND_ADDRESS", "0.0.0.0"},
             FIELD(listener.wss.bind_address), ip_address),
        port({"listener.wss.bind_port", "LISTENER_WSS_BIND_PORT", "8085"},
             FIELD(listener.wss.bind_port)),
        optional_boolean({"listener.wss.proxy_enabled", "MQTT_WSS_PROXY_PROTOCOL_ENABLED", ""},
                         FIELD(listener.wss.proxy_enabled)),
        integer({"listener.wss.netty.max_payload_size", "WSS_NETTY_MAX_PAYLOAD_SIZE", "65536"},
                FIELD(listener.wss.netty.max_payload_size),
                {.min = 64,
                 .max = 268435460,
                 .unit = "bytes",
                 .note = "the largest MQTT packet is 268435460 bytes"}),
        integer({"listener.wss.netty.shutdown_timeout", "WSS_NETTY_SHUTDOWN_TIMEOUT", "5"},
                FIELD(listener.wss.netty.shutdown_timeout), {.min = 0, .max = 3600, .unit = "s"}),
        boolean({"listener.wss.netty.so_keep_alive", "WSS_NETTY_SO_KEEPALIVE", "true"},
                FIELD(listener.wss.netty.so_keep_alive)),
        integer({"listener.wss.max_connections", "LISTENER_WSS_MAX_CONNECTIONS", "100000"},
                FIELD(listener.wss.max_connections), {.min = 1, .max = 10'000'000}),
        text({"listener.wss.netty.sub_protocols", "WSS_NETTY_SUB_PROTOCOLS", "mqttv3.1,mqtt"},
             FIELD(listener.wss.netty.sub_protocols), comma_list),
        enumeration({"listener.wss.config.protocol", "LISTENER_WSS_PROTOCOL", "TLSv1.2"},
                    FIELD(listener.wss.config.protocol), tls_protocol_names),
        text(
            {"listener.wss.config.enabled_cipher_suites", "LISTENER_WSS_ENABLED_CIPHER_SUITES", ""},
            FIELD(listener.wss.config.enabled_cipher_suites)),
        text({"listener.wss.config.credentials.pem.cert_file", "LISTENER_WSS_PEM_CERT",
              "ws_mqtt_server.pem"},
             FIELD(listener.wss.config.credentials.pem.cert_file)),
        text({"listener.wss.config.credentials.pem.key_file", "LISTENER_WSS_PEM_KEY",
              "ws_mqtt_server_key.pem"},
             FIELD(listener.wss.config.credentials.pem.key_file)),
        text({"listener.wss.config.credentials.pem.key_password", "LISTENER_WSS_PEM_KEY_PASSWORD",
              ""},
             FIELD(listener.wss.config.credentials.pem.key_password)),
        enumeration({"listener.wss.config.client_auth", "LISTENER_WSS_CLIENT_AUTH", "none"},
                    FIELD(listener.wss.config.client_auth), client_auth_names),
        text({"listener.wss.config.trust_store", "LISTENER_WSS_TRUST_STORE", ""},
             FIELD(listener.wss.config.trust_store)),
        integer({"listener.wss.config.reload_interval", "LISTENER_WSS_RELOAD_INTERVAL", "5"},
                FIELD(listener.wss.config.reload_interval),
                {.min = 0, .max = 86400, .unit = "s", .note = "0 = never reload"}),
        // --- queue
        integer({"queue.msg-all.consumers-count", "TB_MSG_ALL_CONSUMERS_COUNT", "4"},
                FIELD(queue.msg_all.consumers_count), {.min = 1, .max = 1024}),
        integer({"queue.msg-all.poll-interval", "TB_MSG_ALL_POLL_INTERVAL", "100"},
                FIELD(queue.msg_all.poll_interval), {.min = 1, .max = 60000, .unit = "ms"}),
        text({"queue.kafka.bootstrap.servers", "TB_KAFKA_SERVERS", "localhost:9092"},
             FIELD(queue.kafka.bootstrap_servers), not_empty),
        integer({"queue.kafka.replication-factor", "TB_KAFKA_REPLICATION_FACTOR", "1"},
                FIELD(queue.kafka.replication_factor), {.min = 1, .max = 32767}),
        integer({"queue.kafka.admin.command-timeout", "TB_KAFKA_ADMIN_COMMAND_TIMEOUT_SEC", "30"},
                FIELD(queue.kafka.admin_command_timeout), {.min = 1, .max = 3600, .unit = "s"}),
        properties({"queue.kafka.default.config", "TB_KAFKA_DEFAULT_PRODUCER_CONSUMER_CONFIG", ""},
                   FIELD(queue.kafka.defaults.config)),
        properties({"queue.kafka.default.consumer.config", "TB_KAFKA_DEFAULT_CONSUMER_CONFIG", ""},
                   FIELD(queue.kafka.defaults.consumer.config)),
        integer({"queue.kafka.default.consumer.session-timeout-ms",
                 "TB_KAFKA_DEFAULT_CONSUMER_SESSION_TIMEOUT_MS", "10000"},
                FIELD(queue.kafka.defaults.consumer.session_timeout),
                {.min = 1, .max = 3600000, .unit = "ms"}),
        integer({"queue.kafka.default.consumer.heartbeat-interval-ms",
                 "TB_KAFKA_DEFAULT_CONSUMER_HEARTBEAT_INTERVAL_MS", "3000"},
                FIELD(queue.kafka.defaults.consumer.heartbeat_interval),
                {.min = 1, .max = 3600000, .unit = "ms"}),
        integer({"queue.kafka.default.consumer.max-poll-interval-ms",
                 "TB_KAFKA_DEFAULT_CONSUMER_MAX_POLL_INTERVAL_MS", "300000"},
                FIELD(queue.kafka.defaults.consumer.max_poll_interval),
                {.min = 1, .max = 86400000, .unit = "ms"}),
        properties({"queue.kafka.default.producer.config", "TB_KAFKA_DEFAULT_PRODUCER_CONFIG", ""},
                   FIELD(queue.kafka.defaults.producer.config)),
        text({"queue.kafka.default.producer.acks", "TB_KAFKA_DEFAULT_PRODUCER_ACKS", "1"},
             FIELD(queue.kafka.defaults.producer.acks), kafka_acks),
        optional_boolean({"queue.kafka.default.producer.enable-idempotence",
                          "TB_KAFKA_DEFAULT_PRODUCER_ENABLE_IDEMPOTENCE", ""},
                         FIELD(queue.kafka.defaults.producer.enable_idempotence)),
        integer({"queue.kafka.default.producer.batch-size", "TB_KAFKA_DEFAULT_PRODUCER_BATCH_SIZE",
                 "16384"},
                FIELD(queue.kafka.defaults.producer.batch_size),
                {.min = 1, .max = 2147483647, .unit = "bytes"}),
        integer(
            {"queue.kafka.default.producer.linger-ms", "TB_KAFKA_DEFAULT_PRODUCER_LINGER_MS", "5"},
            FIELD(queue.kafka.defaults.producer.linger), {.min = 0, .max = 900000, .unit = "ms"}),
        text({"queue.kafka.default.producer.compression-type", "TB_KAFKA_DEFAULT_COMPRESSION_TYPE",
              "none"},
             FIELD(queue.kafka.defaults.producer.compression_type), kafka_compression),
        integer({"queue.kafka.default.producer.delivery-timeout-ms",
                 "TB_KAFKA_DEFAULT_PRODUCER_DELIVERY_TIMEOUT_MS", "30000"},
                FIELD(queue.kafka.defaults.producer.delivery_timeout),
                {.min = 1, .max = 2147483647, .unit = "ms"}),
        text({"queue.kafka.kafka-prefix", "TB_KAFKA_PREFIX", "starling"},
             FIELD(queue.kafka.kafka_prefix), topic_name_part),
        integer({"queue.kafka.msg-all.partitions", "TB_KAFKA_MSG_ALL_PARTITIONS", "16"},
                FIELD(queue.kafka.msg_all.partitions), {.min = 1, .max = 10000}),
        integer({"queue.kafka.msg-all.retention-ms", "TB_KAFKA_MSG_ALL_RETENTION_MS", "604800000"},
                FIELD(queue.kafka.msg_all.retention),
                {.min = -1, .max = i64_max, .unit = "ms", .note = "-1 = keep forever"}),
        integer({"queue.kafka.downlink.partitions", "TB_KAFKA_DOWNLINK_PARTITIONS", "12"},
                FIELD(queue.kafka.downlink.partitions), {.min = 1, .max = 10000}),
        properties(
            {"queue.kafka.msg-all.topic-properties", "TB_KAFKA_MSG_ALL_TOPIC_PROPERTIES", ""},
            FIELD(queue.kafka.msg_all.topic_properties)),
        properties({"queue.kafka.msg-all.additional-consumer-config",
                    "TB_KAFKA_MSG_ALL_ADDITIONAL_CONSUMER_CONFIG", ""},
                   FIELD(queue.kafka.msg_all.additional_consumer_config)),
        integer({"queue.kafka.client-session-event.partitions",
                 "TB_KAFKA_CLIENT_SESSION_EVENT_PARTITIONS", "24"},
                FIELD(queue.kafka.client_session_event_partitions), {.min = 1, .max = 10000}),
        integer({"queue.client-session-event-response.max-request-timeout",
                 "TB_CLIENT_SESSION_EVENT_RESPONSE_MAX_REQUEST_TIMEOUT", "30000"},
                FIELD(queue.client_session_event_max_request_timeout),
                {.min = 1, .max = 600000, .unit = "ms"}),
        integer({"queue.application-persisted-msg.consumer-threads",
                 "TB_APP_PERSISTED_MSG_CONSUMER_THREADS", "4"},
                FIELD(queue.application_persisted_msg.consumer_threads), {.min = 1, .max = 256}),
        integer({"queue.kafka.application-persisted-msg.retention-ms",
                 "TB_KAFKA_APP_PERSISTED_MSG_RETENTION_MS", "604800000"},
                FIELD(queue.kafka.application_persisted_msg.retention),
                {.min = -1, .max = i64_max, .unit = "ms", .note = "-1 = keep forever"}),
        integer({"queue.kafka.application-persisted-msg.retention-bytes",
                 "TB_KAFKA_APP_PERSISTED_MSG_RETENTION_BYTES", "1048576000"},
                FIELD(queue.kafka.application_persisted_msg.retention_bytes),
                {.min = -1, .max = i64_max, .unit = "bytes", .note = "-1 = unbounded"}),
        integer({"queue.kafka.application-persisted-msg.shared-topic.partitions",
                 "TB_KAFKA_APP_PERSISTED_MSG_SHARED_TOPIC_PARTITIONS", "1"},
                FIELD(queue.kafka.application_persisted_msg.shared_topic_partitions),
                {.min = 1, .max = 10000}),
        integer({"queue.kafka.application-persisted-msg.shared-topic.retention-ms",
                 "TB_KAFKA_APP_PERSISTED_MSG_SHARED_TOPIC_RETENTION_MS", "604800000"},
                FIELD(queue.kafka.application_persisted_msg.shared_topic_retention),
                {.min = -1, .max = i64_max, .unit = "ms", .note = "-1 = keep forever"}),
        enumeration({"queue.embedded.fsync", "STARLING_EMBEDDED_FSYNC", "interval"},
                    FIELD(queue.embedded.fsync), fsync_policy_names),
        integer({"queue.embedded.fsync-interval-ms", "STARLING_EMBEDDED_FSYNC_INTERVAL_MS", "1000"},
                FIELD(queue.embedded.fsync_interval), {.min = 1, .max = 3600000, .unit = "ms"}),
        integer({"queue.embedded.segment-bytes", "STARLING_EMBEDDED_SEGMENT_BYTES", "67108864"},
                FIELD(queue.embedded.segment_bytes),
                {.min = 4096, .max = 1073741824, .unit = "bytes"}),
        integer(
            {"queue.embedded.retention-bytes", "STARLING_EMBEDDED_RETENTION_BYTES", "1073741824"},
            FIELD(queue.embedded.retention_bytes),
            {.min = -1, .max = i64_max, .unit = "bytes", .note = "-1 = unbounded"}),
        integer({"queue.embedded.disk.min-free-bytes", "STARLING_EMBEDDED_DISK_MIN_FREE_BYTES",
                 "268435456"},
                FIELD(queue.embedded.disk_min_free_bytes),
                {.min = 0, .max = i64_max, .unit = "bytes", .note = "0 = off"}),
        integer({"queue.embedded.disk.slow-free-bytes", "STARLING_EMBEDDED_DISK_SLOW_FREE_BYTES",
                 "1073741824"},
                FIELD(queue.embedded.disk_slow_free_bytes),
                {.min = 0, .max = i64_max, .unit = "bytes", .note = "0 = off"}),
        integer({"queue.embedded.disk.slow-rate-bytes", "STARLING_EMBEDDED_DISK_SLOW_RATE_BYTES",
                 "1048576"},
                FIELD(queue.embedded.disk_slow_rate),
                {.min = 1, .max = i64_max, .unit = "bytes/s"}),
        // --- actors
        integer({"actors.system.throughput", "ACTORS_SYSTEM_THROUGHPUT", "5"},
                FIELD(actors.system.throughput), {.min = 1, .max = 100000}),
        integer({"actors.client.dispatcher-pool-size", "ACTORS_SYSTEM_CLIENT_DISPATCHER_POOL_SIZE",
                 "0"},
                FIELD(actors.client.dispatcher_pool_size),
                {.min = 0, .max = 1024, .note = "0 = number of cores"}),
        integer(
            {"actors.client.mailbox-capacity", "ACTORS_SYSTEM_CLIENT_MAILBOX_CAPACITY", "10000"},
            FIELD(actors.client.mailbox_capacity), {.min = 1, .max = 10000000}),
        integer({"actors.client.mailbox-bytes", "ACTORS_SYSTEM_CLIENT_MAILBOX_BYTES", "4096"},
                FIELD(actors.client.mailbox_bytes),
                {.min = 64, .max = 1048576, .unit = "KB", .scale = 1024}),
        integer({"actors.client.wait-before-generated-actor-stop-seconds",
                 "ACTORS_SYSTEM_CLIENT_WAIT_BEFORE_GENERATED_ACTOR_STOP_SECONDS", "10"},
                FIELD(actors.client.wait_before_generated_actor_stop),
                {.min = 0, .max = 86400, .unit = "s"}),
        integer({"actors.client.wait-before-named-actor-stop-seconds",
                 "ACTORS_SYSTEM_CLIENT_WAIT_BEFORE_NAMED_ACTOR_STOP_SECONDS", "60"},
                FIELD(actors.client.wait_before_named_actor_stop),
                {.min = 0, .max = 86400, .unit = "s"}),
        integer({"actors.persisted-device.dispatcher-pool-size",
                 "ACTORS_SYSTEM_PERSISTED_DEVICE_DISPATCHER_POOL_SIZE", "0"},
                FIELD(actors.persisted_device.dispatcher_pool_size),
                {.min = 0, .max = 1024, .note = "0 = number of cores"}),
        integer({"actors.persisted-device.wait-before-actor-stop-minutes",
                 "ACTORS_SYSTEM_PERSISTED_DEVICE_WAIT_BEFORE_ACTOR_STOP_MINUTES", "5"},
                FIELD(actors.persisted_device.wait_before_actor_stop),
                {.min = 0, .max = 1440, .unit = "min"}),
        // --- mqtt
        integer({"mqtt.max-in-flight-msgs", "MQTT_MAX_IN_FLIGHT_MSGS", "1000"},
                FIELD(mqtt.max_in_flight_msgs),
                {.min = 1, .max = 65535, .note = "it is the MQTT 5 Receive Maximum"}),
        integer({"mqtt.keep-alive.max-keep-alive", "MQTT_KEEP_ALIVE_MAX_KEEP_ALIVE_SEC", "600"},
                FIELD(mqtt.keep_alive.max_keep_alive), {.min = 1, .max = 65535, .unit = "s"}),
        integer({"mqtt.topic.max-segments-count", "MQTT_TOPIC_MAX_SEGMENTS_COUNT", "128"},
                FIELD(mqtt.topic.max_segments_count),
                {.min = 0, .max = 65535, .note = "0 = unlimited"}),
        integer({"mqtt.topic.alias-max", "MQTT_TOPIC_ALIAS_MAX", "10"}, FIELD(mqtt.topic.alias_max),
                {.min = 0, .max = 65535, .note = "0 = disabled"}),
        integer({"mqtt.topic.min-length-for-alias-replacement",
                 "MQTT_TOPIC_MIN_LENGTH_FOR_ALIAS_REPLACEMENT", "50"},
                FIELD(mqtt.topic.min_length_for_alias_replacement), {.min = 0, .max = 65535}),
        boolean({"mqtt.subscription.allow-root-multi-level-wildcard",
                 "MQTT_SUBSCRIPTION_ROOT_MULTI_LVL_WILDCARD", "true"},
                FIELD(mqtt.subscription.allow_root_multi_level_wildcard)),
        integer({"mqtt.subscription.max-per-client", "MQTT_SUBSCRIPTION_MAX_PER_CLIENT", "1000"},
                FIELD(mqtt.subscription.max_per_client),
                {.min = 0, .max = u32_max, .note = "0 = unlimited"}),
        enumeration({"mqtt.shared-subscriptions.processing-type",
                     "MQTT_SHARED_SUBSCRIPTIONS_PROCESSING_TYPE", "ROUND_ROBIN"},
                    FIELD(mqtt.shared_subscriptions.processing_type), shared_processing_names),
        integer({"mqtt.client-session-expiry.max-expiry-interval",
                 "MQTT_CLIENT_SESSION_EXPIRY_MAX_EXPIRY_INTERVAL", "604800"},
                FIELD(mqtt.client_session_expiry.max_expiry_interval),
                {.min = 0, .max = u32_max, .unit = "s"}),
        integer({"mqtt.version-3-1.max-client-id-length", "MQTT_3_1_MAX_CLIENT_ID_LENGTH", "1024"},
                FIELD(mqtt.version_3_1.max_client_id_length), {.min = 1, .max = 65535}),
        integer({"mqtt.persistent-session.device.persisted-messages.limit",
                 "MQTT_PERSISTENT_SESSION_DEVICE_PERSISTED_MESSAGES_LIMIT", "10000"},
                FIELD(mqtt.persistent_session.device.persisted_messages.limit),
                {.min = 1,
                 .max = 65535,
                 .note = "a device inbox holds at most 65535 messages, one per packet id"}),
        integer({"mqtt.persistent-session.device.persisted-messages.ttl",
                 "MQTT_PERSISTENT_SESSION_DEVICE_PERSISTED_MESSAGES_TTL", "604800"},
                FIELD(mqtt.persistent_session.device.persisted_messages.ttl),
                {.min = 1, .max = u32_max, .unit = "s"}),
        text({"mqtt.response-info", "MQTT_RESPONSE_INFO", ""}, FIELD(mqtt.response_info)),
        boolean({"mqtt.retain-available", "MQTT_RETAIN_AVAILABLE", "true"},
                FIELD(mqtt.retain_available)),
        integer({"mqtt.retained-messages.max-count", "MQTT_RETAINED_MESSAGES_MAX_COUNT", "1000000"},
                FIELD(mqtt.retained_messages.max_count),
                {.min = 0, .max = i64_max, .note = "0 = unlimited"}),
        integer(
            {"mqtt.retained-messages.max-bytes", "MQTT_RETAINED_MESSAGES_MAX_BYTES", "1073741824"},
            FIELD(mqtt.retained_messages.max_bytes),
            {.min = 0, .max = i64_max, .unit = "bytes", .note = "0 = unlimited"}),
        integer({"mqtt.max-user-properties", "MQTT_MAX_USER_PROPERTIES", "128"},
                FIELD(mqtt.max_user_properties),
                {.min = 0, .max = 65535, .note = "per packet; 0 = unlimited"}),
        integer({"mqtt.max-qos", "MQTT_MAX_QOS", "2"}, FIELD(mqtt.max_qos), {.min = 0, .max = 2}),
        boolean({"mqtt.rate-limits.incoming-publish.enabled", "MQTT_INCOMING_RATE_LIMITS_ENABLED",
                 "false"},
                FIELD(mqtt.rate_limits.incoming_publish.enabled)),
        bandwidths({"mqtt.rate-limits.incoming-publish.client-config",
                    "MQTT_INCOMING_RATE_LIMITS_CLIENT_CONFIG", "10:1,300:60"},
                   FIELD(mqtt.rate_limits.incoming_publish.config)),
        boolean({"mqtt.rate-limits.outgoing-publish.enabled", "MQTT_OUTGOING_RATE_LIMITS_ENABLED",
                 "false"},
                FIELD(mqtt.rate_limits.outgoing_publish.enabled)),
        bandwidths({"mqtt.rate-limits.outgoing-publish.client-config",
                    "MQTT_OUTGOING_RATE_LIMITS_CLIENT_CONFIG", "10:1,300:60"},
                   FIELD(mqtt.rate_limits.outgoing_publish.config)),
        boolean({"mqtt.rate-limits.device-persisted-messages.enabled",
                 "MQTT_DEVICE_PERSISTED_MSGS_RATE_LIMITS_ENABLED", "false"},
                FIELD(mqtt.rate_limits.device_persisted_messages.enabled)),
        bandwidths({"mqtt.rate-limits.device-persisted-messages.config",
                    "MQTT_DEVICE_PERSISTED_MSGS_RATE_LIMITS_CONFIG", "100:1,1000:60"},
                   FIELD(mqtt.rate_limits.device_persisted_messages.config)),
        integer(
            {"mqtt.sessions-limit", "MQTT_SESSIONS_LIMIT", "0"}, FIELD(mqtt.sessions_limit),
            {.min = 0, .max = std::numeric_limits<std::int32_t>::max(), .note = "0 = no limit"}),
        integer(
            {"mqtt.application-clients-limit", "MQTT_APPLICATION_CLIENTS_LIMIT", "0"},
            FIELD(mqtt.application_clients_limit),
            {.min = 0, .max = std::numeric_limits<std::int32_t>::max(), .note = "0 = no limit"}),
        boolean({"mqtt.rate-limits.total.enabled", "MQTT_TOTAL_RATE_LIMITS_ENABLED", "false"},
                FIELD(mqtt.rate_limits.total.enabled)),
        bandwidths(
            {"mqtt.rate-limits.total.config", "MQTT_TOTAL_RATE_LIMITS_CONFIG", "1000:1,50000:60"},
            FIELD(mqtt.rate_limits.total.config)),
        integer({"mqtt.rate-limits.total.block-size", "MQTT_TOTAL_RATE_LIMITS_BLOCK_SIZE", "0"},
                FIELD(mqtt.rate_limits.total.block_size),
                {.min = 0, .max = 1'000'000'000, .note = "0 derives max(1, sustained rate / 10)"}),
        integer({"mqtt.rate-limits.total.lease-return-ms", "MQTT_TOTAL_RATE_LIMITS_LEASE_RETURN_MS",
                 "1000"},
                FIELD(mqtt.rate_limits.total.lease_return),
                {.min = 0, .max = 3'600'000, .unit = "ms", .note = "0 disables the return tick"}),
        // --- security
        boolean({"security.mqtt.allow-anonymous", "SECURITY_MQTT_ALLOW_ANONYMOUS", "false"},
                FIELD(security.mqtt.allow_anonymous)),
        provider_list({"security.mqtt.auth-providers", "SECURITY_MQTT_AUTH_PROVIDERS",
                       "MQTT_BASIC,X_509,JWT,HTTP"},
                      FIELD(security.mqtt.auth_providers)),
        boolean({"security.mqtt.basic.enabled", "SECURITY_MQTT_BASIC_ENABLED", "true"},
                FIELD(security.mqtt.basic.enabled)),
        enumeration(
            {"security.mqtt.basic.auth-strategy", "SECURITY_MQTT_BASIC_AUTH_STRATEGY", "BOTH"},
            FIELD(security.mqtt.basic.auth_strategy), basic_strategy_names),
        integer({"security.mqtt.basic.verify-threads", "SECURITY_MQTT_BASIC_VERIFY_THREADS", "2"},
                FIELD(security.mqtt.basic.verify_threads), {.min = 1, .max = 64}),
        boolean({"security.mqtt.ssl.enabled", "SECURITY_MQTT_SSL_ENABLED", "false"},
                FIELD(security.mqtt.ssl.enabled)),
        file_list({"security.mqtt.ssl.trust-store", "SECURITY_MQTT_SSL_TRUST_STORE", ""},
                  FIELD(security.mqtt.ssl.trust_store)),
        boolean({"security.mqtt.ssl.skip-validity-check-for-client-cert",
                 "SECURITY_MQTT_SSL_SKIP_VALIDITY_CHECK_FOR_CLIENT_CERT", "false"},
                FIELD(security.mqtt.ssl.skip_validity_check_for_client_cert)),
        boolean({"security.mqtt.jwt.enabled", "SECURITY_MQTT_JWT_ENABLED", "false"},
                FIELD(security.mqtt.jwt.enabled)),
        text({"security.mqtt.jwt.default-client-type", "SECURITY_MQTT_JWT_DEFAULT_CLIENT_TYPE",
              "DEVICE"},
             FIELD(security.mqtt.jwt.default_client_type), client_type_name),
        text({"security.mqtt.jwt.verifier", "SECURITY_MQTT_JWT_VERIFIER", "ALGORITHM_BASED"},
             FIELD(security.mqtt.jwt.verifier), jwt_verifier_name),
        text({"security.mqtt.jwt.algorithm", "SECURITY_MQTT_JWT_ALGORITHM", "HMAC_BASED"},
             FIELD(security.mqtt.jwt.algorithm), jwt_algorithm_name),
        text({"security.mqtt.jwt.secret", "SECURITY_MQTT_JWT_SECRET", ""},
             FIELD(security.mqtt.jwt.secret)),
        text({"security.mqtt.jwt.public-pem-key", "SECURITY_MQTT_JWT_PUBLIC_PEM_KEY", ""},
             FIELD(security.mqtt.jwt.public_pem_key)),
        text({"security.mqtt.jwt.jwks.endpoint", "SECURITY_MQTT_JWT_JWKS_ENDPOINT", ""},
             FIELD(security.mqtt.jwt.jwks_endpoint)),
        integer({"security.mqtt.jwt.jwks.refresh-interval",
                 "SECURITY_MQTT_JWT_JWKS_REFRESH_INTERVAL", "300"},
                FIELD(security.mqtt.jwt.jwks_refresh_interval),
                {.min = 300, .max = 604800, .unit = "s"}),
        text({"security.mqtt.jwt.pub-auth-rule-claim", "SECURITY_MQTT_JWT_PUB_AUTH_RULE_CLAIM", ""},
             FIELD(security.mqtt.jwt.pub_auth_rule_claim)),
        text({"security.mqtt.jwt.sub-auth-rule-claim", "SECURITY_MQTT_JWT_SUB_AUTH_RULE_CLAIM", ""},
             FIELD(security.mqtt.jwt.sub_auth_rule_claim)),
        boolean({"security.mqtt.jwt.allow-tokens-without-exp",
                 "SECURITY_MQTT_JWT_ALLOW_TOKENS_WITHOUT_EXP", "false"},
                FIELD(security.mqtt.jwt.allow_tokens_without_exp)),
        boolean({"security.mqtt.http.enabled", "SECURITY_MQTT_HTTP_ENABLED", "false"},
                FIELD(security.mqtt.http.enabled)),
        text(
            {"security.mqtt.http.endpoint", "SECURITY_MQTT_HTTP_ENDPOINT", "http://localhost:8080"},
            FIELD(security.mqtt.http.endpoint), not_empty),
        text({"security.mqtt.http.method", "SECURITY_MQTT_HTTP_METHOD", "POST"},
             FIELD(security.mqtt.http.method), http_method_name),
        text({"security.mqtt.http.request-body", "SECURITY_MQTT_HTTP_REQUEST_BODY", ""},
             FIELD(security.mqtt.http.request_body)),
        integer(
            {"security.mqtt.http.read-timeout-ms", "SECURITY_MQTT_HTTP_READ_TIMEOUT_MS", "5000"},
            FIELD(security.mqtt.http.read_timeout), {.min = 1, .max = 600000, .unit = "ms"}),
        integer({"security.mqtt.http.max-parallel-requests",
                 "SECURITY_MQTT_HTTP_MAX_PARALLEL_REQUESTS", "100"},
                FIELD(security.mqtt.http.max_parallel_requests), {.min = 1, .max = 100000}),
        text({"security.mqtt.http.default-client-type", "SECURITY_MQTT_HTTP_DEFAULT_CLIENT_TYPE",
              "DEVICE"},
             FIELD(security.mqtt.http.default_client_type), client_type_name),
        text({"security.mqtt.http.credentials.username", "SECURITY_MQTT_HTTP_CREDENTIALS_USERNAME",
              ""},
             FIELD(security.mqtt.http.username)),
        text({"security.mqtt.http.credentials.password", "SECURITY_MQTT_HTTP_CREDENTIALS_PASSWORD",
              ""},
             FIELD(security.mqtt.http.password)),
        text({"security.admin-token", "SECURITY_ADMIN_TOKEN", ""}, FIELD(security.admin_token)),
        boolean({"historical-data-report.enabled", "HISTORICAL_DATA_REPORT_ENABLED", "true"},
                FIELD(historical_data_report.enabled)),
        integer({"historical-data-report.interval", "HISTORICAL_DATA_REPORT_INTERVAL", "1"},
                FIELD(historical_data_report.interval), {.min = 1, .max = 60, .unit = "min"}),
        integer({"historical-data-report.ttl", "SQL_TTL_TS_KEY_VALUE_TTL", "604800"},
                FIELD(historical_data_report.ttl), {.min = 3600, .max = 31'536'000, .unit = "s"}),
        boolean({"security.admin.login-enabled", "SECURITY_ADMIN_LOGIN_ENABLED", "true"},
                FIELD(security.admin.enabled)),
        text({"security.admin.username", "SECURITY_ADMIN_USERNAME", "sysadmin@starling.local"},
             FIELD(security.admin.username), non_empty_text),
        text({"security.admin.password", "SECURITY_ADMIN_PASSWORD", ""},
             FIELD(security.admin.password)),
        optional_bandwidths({"security.admin.failed-logins-per-address",
                             "SECURITY_ADMIN_FAILED_LOGINS_PER_ADDRESS", "5:60,20:3600"},
                            FIELD(security.admin.failed_logins_per_address)),
        text({"security.jwt.token-signing-key", "JWT_TOKEN_SIGNING_KEY", ""},
             FIELD(security.jwt.token_signing_key), signing_key_text),
        text({"security.jwt.token-issuer", "JWT_TOKEN_ISSUER", "starling"},
             FIELD(security.jwt.token_issuer), non_empty_text),
        integer({"security.jwt.token-expiration-time", "JWT_TOKEN_EXPIRATION_TIME", "9000"},
                FIELD(security.jwt.token_expiration_time),
                {.min = 60, .max = 31'536'000, .unit = "s"}),
        integer(
            {"security.jwt.refresh-token-exp-time", "JWT_REFRESH_TOKEN_EXPIRATION_TIME", "604800"},
            FIELD(security.jwt.refresh_token_exp_time),
            {.min = 60, .max = 31'536'000, .unit = "s"}),
        integer({"security.mqtt.auth-cache-ttl-ms", "SECURITY_MQTT_AUTH_CACHE_TTL_MS", "60000"},
                FIELD(security.mqtt.auth_cache_ttl),
                {.min = 0, .max = 86400000, .unit = "ms", .note = "0 = no cache"}),
        optional_bandwidths({"security.mqtt.failed-auth-per-address",
                             "SECURITY_MQTT_FAILED_AUTH_PER_ADDRESS", "60:60"},
                            FIELD(security.mqtt.failed_auth_per_address)),
        integer({"security.mqtt.unauthorized-clients.max-rows",
                 "SECURITY_MQTT_UNAUTHORIZED_CLIENTS_MAX_ROWS", "10000"},
                FIELD(security.mqtt.unauthorized_clients.max_rows), {.min = 1, .max = 10'000'000}),
        integer({"security.mqtt.unauthorized-clients.rows-per-address-per-minute",
                 "SECURITY_MQTT_UNAUTHORIZED_CLIENTS_ROWS_PER_ADDRESS_PER_MINUTE", "10"},
                FIELD(security.mqtt.unauthorized_clients.rows_per_address_per_minute),
                {.min = 0, .max = 1'000'000, .note = "0 = no limit"}),
        integer({"security.mqtt.unauthorized-clients.rows-per-second",
                 "SECURITY_MQTT_UNAUTHORIZED_CLIENTS_ROWS_PER_SECOND", "100"},
                FIELD(security.mqtt.unauthorized_clients.rows_per_second),
                {.min = 0, .max = 1'000'000, .note = "0 = no limit"}),
        integer({"security.mqtt.provider-timeout-ms", "SECURITY_MQTT_PROVIDER_TIMEOUT_MS", "5000"},
                FIELD(security.mqtt.provider_timeout), {.min = 1, .max = 600000, .unit = "ms"}),
        integer({"security.mqtt.circuit-breaker.failure-threshold",
                 "SECURITY_MQTT_CIRCUIT_BREAKER_FAILURE_THRESHOLD", "5"},
                FIELD(security.mqtt.circuit_breaker.failure_threshold), {.min = 1, .max = 1000000}),
        integer({"security.mqtt.circuit-breaker.cool-down-ms",
                 "SECURITY_MQTT_CIRCUIT_BREAKER_COOL_DOWN_MS", "30000"},
                FIELD(security.mqtt.circuit_breaker.cool_down),
                {.min = 1, .max = 86400000, .unit = "ms"}),
        // --- redis (device inbox in cluster mode)
        text({"redis.connection.type", "REDIS_CONNECTION_TYPE", "standalone"},
             FIELD(redis.connection_type), redis_connection_type),
        text({"redis.standalone.host", "REDIS_HOST", "localhost"}, FIELD(redis.standalone.host),
             not_empty),
        integer({"redis.standalone.port", "REDIS_PORT", "6379"}, FIELD(redis.standalone.port),
                {.min = 1, .max = 65535}),
        integer({"redis.standalone.connectTimeout", "REDIS_CLIENT_CONNECT_TIMEOUT", "30000"},
                FIELD(redis.standalone.connect_timeout), {.min = 1, .max = 3600000, .unit = "ms"}),
        integer({"redis.standalone.readTimeout", "REDIS_CLIENT_READ_TIMEOUT", "60000"},
                FIELD(redis.standalone.read_timeout), {.min = 1, .max = 3600000, .unit = "ms"}),
        text({"redis.sentinel.master", "REDIS_MASTER", ""}, FIELD(redis.sentinel.master)),
        host_port_list({"redis.sentinel.sentinels", "REDIS_SENTINELS", ""},
                       FIELD(redis.sentinel.sentinels)),
        text({"redis.sentinel.password", "REDIS_SENTINEL_PASSWORD", ""},
             FIELD(redis.sentinel.password)),
        host_port_list({"redis.cluster.nodes", "REDIS_NODES", ""}, FIELD(redis.cluster.nodes)),
        integer({"redis.cluster.maxRedirects", "REDIS_MAX_REDIRECTS", "12"},
                FIELD(redis.cluster.max_redirects), {.min = 1, .max = 100}),
        integer({"redis.cluster.topology-refresh-period",
                 "REDIS_CLUSTER_TOPOLOGY_REFRESH_PERIOD_SEC", "60"},
                FIELD(redis.cluster.topology_refresh_period),
                {.min = 0, .max = 86400, .unit = "s", .note = "0 = only on MOVED and failures"}),
        integer({"redis.wait.replicas", "REDIS_WAIT_REPLICAS", "0"}, FIELD(redis.wait_replicas),
                {.min = 0, .max = 16}),
        integer({"redis.wait.timeout", "REDIS_WAIT_TIMEOUT_MS", "1000"}, FIELD(redis.wait_timeout),
                {.min = 1, .max = 60000, .unit = "ms"}),
        boolean({"redis.ssl.enabled", "REDIS_SSL_ENABLED", "false"}, FIELD(redis.ssl.enabled)),
        text({"redis.ssl.credentials.cert_file", "REDIS_SSL_CERT_FILE", ""},
             FIELD(redis.ssl.cert_file)),
        text({"redis.ssl.credentials.user_cert_file", "REDIS_SSL_USER_CERT_FILE", ""},
             FIELD(redis.ssl.user_cert_file)),
        text({"redis.ssl.credentials.user_key_file", "REDIS_SSL_USER_KEY_FILE", ""},
             FIELD(redis.ssl.user_key_file)),
        integer({"redis.db", "REDIS_DB", "0"}, FIELD(redis.db), {.min = 0, .max = 65535}),
        text({"redis.username", "REDIS_USERNAME", ""}, FIELD(redis.username)),
        text({"redis.password", "REDIS_PASSWORD", ""}, FIELD(redis.password)),
        // --- spring.datasource (PostgreSQL metadata store, cluster mode)
        datasource_url_text({"spring.datasource.url", "SPRING_DATASOURCE_URL",
                             "jdbc:postgresql://localhost:5432/starling"},
                            FIELD(spring.datasource.url)),
        text({"spring.datasource.username", "SPRING_DATASOURCE_USERNAME", "postgres"},
             FIELD(spring.datasource.username)),
        text({"spring.datasource.password", "SPRING_DATASOURCE_PASSWORD", "postgres"},
             FIELD(spring.datasource.password)),
        integer({"spring.datasource.hikari.maximumPoolSize", "SPRING_DATASOURCE_MAXIMUM_POOL_SIZE",
                 "8"},
                FIELD(spring.datasource.maximum_pool_size),
                {.min = 1, .max = 256, .note = "one connection and one thread each"}),
        integer({"spring.datasource.hikari.connectionTimeout",
                 "SPRING_DATASOURCE_CONNECTION_TIMEOUT_MS", "10000"},
                FIELD(spring.datasource.connection_timeout),
                {.min = 1000, .max = 600000, .unit = "ms"}),
        integer({"spring.datasource.statement-timeout-ms", "SPRING_DATASOURCE_STATEMENT_TIMEOUT_MS",
                 "30000"},
                FIELD(spring.datasource.statement_timeout),
                {.min = 0, .max = 3600000, .unit = "ms", .note = "0 = no timeout"}),
        integer({"spring.datasource.queue-capacity", "SPRING_DATASOURCE_QUEUE_CAPACITY", "10000"},
                FIELD(spring.datasource.queue_capacity), {.min = 1, .max = 1000000}),
    };
    return table;
}

#undef FIELD

// ---------------------------------------------------------------------------------------------
// Walking the YAML document.

std::vector<std::string_view> split_key(std::string_view key) {
    std::vector<std::string_view> parts;
    std::size_t start = 0;
    while (true) {
        const auto dot = key.find('.', start);
        parts.push_back(key.substr(start, dot - start));
        if (dot == std::string_view::npos) {
            return parts;
        }
        start = dot + 1;
    }
}

// The scalar text at `key`, or nullopt when the file does not have it. Recursion rather than a
// loop because yaml-cpp's Node has reference semantics: assigning one writes through.
std::optional<std::string> find_value(const YAML::Node& node,
                                      std::span<const std::string_view> parts, std::string_view key,
                                      const std::string& path) {
    if (!node.IsDefined()) {
        return std::nullopt;
    }
    if (parts.empty()) {
        if (node.IsNull()) {
            return std::string{};
        }
        if (key == "security.mqtt.auth-providers" && node.IsSequence() &&
            std::all_of(node.begin(), node.end(),
                        [](const YAML::Node& n) { return n.IsScalar(); })) {
            // A list of names (security.mqtt.auth-providers): the binding parses the commas.
            std::string joined;
            for (const auto& item : node) {
                joined += (joined.empty() ? "" : ",") + item.Scalar();
            }
            return joined;
        }
        if (!node.IsScalar()) {
            const auto* what = node.IsMap() ? "a section" : "a list";
            throw config_error(std::string(key),
                               fmt::format("{}: expected a single value, found {}", key, what));
        }
        return node.Scalar();
    }
    if (node.IsNull()) {
        return std::nullopt;
    }
    if (!node.IsMap()) {
        const auto* what = node.IsSequence() ? "a list" : "a single value";
        throw config_error(path, fmt::format("{}: expected a section (holding \"{}\"), found {}",
                                             path, parts.front(), what));
    }
    const YAML::Node child = node[std::string(parts.front())];
    const auto child_path =
        path.empty() ? std::string(parts.front()) : fmt::format("{}.{}", path, parts.front());
    return find_value(child, parts.subspan(1), key, child_path);
}

std::optional<std::string> find_value(const YAML::Node& root, std::string_view key) {
    const auto parts = split_key(key);
    return find_value(root, parts, key, "");
}

// Collects the dotted path of every leaf (anything that is not a non-empty section).
void collect_leaves(const YAML::Node& node, const std::string& prefix,
                    std::vector<std::string>& out) {
    if (!node.IsMap() || node.size() == 0) {
        if (!prefix.empty()) {
            out.push_back(prefix);
        }
        return;
    }
    for (const auto& entry : node) {
        if (!entry.first.IsScalar()) {
            continue;
        }
        const auto child =
            prefix.empty() ? entry.first.Scalar() : prefix + "." + entry.first.Scalar();
        collect_leaves(entry.second, child, out);
    }
}

void warn(const load_options& options, std::string message) {
    spdlog::warn("{}", message);
    if (options.warnings != nullptr) {
        options.warnings->push_back(std::move(message));
    }
}

// ---------------------------------------------------------------------------------------------
// Rules that involve more than one key, and resolution of "0 = cores" / "empty = hostname".

std::string host_name() {
    std::array<char, 256> buffer{};
    if (::gethostname(buffer.data(), buffer.size() - 1) != 0) {
        return {};
    }
    return buffer.data();
}

// The CPUs the process may use: a container's or pod's CPU limit, not the host's cores (a pod
// limited to 2 CPUs on a 64-core machine must not start 64 I/O threads).
std::uint32_t cores() { return base::available_cpus(); }

// An enabled TLS listener needs readable credential files (and a trust store when client
// certificates are asked for); failing here names the key instead of a later OpenSSL error.
void check_tls_listener(std::string_view name, bool enabled, const tls_config_section& tls) {
    if (!enabled) {
        return;
    }
    auto check_file = [name](std::string_view key, const std::string& path) {
        const auto full_key = fmt::format("listener.{}.config.{}", name, key);
        if (path.empty()) {
            throw config_error(full_key, fmt::format("{}: must be set when listener.{}.enabled is "
                                                     "true",
                                                     full_key, name));
        }
        std::ifstream in(path, std::ios::binary);
        if (!in) {
            throw config_error(full_key,
                               fmt::format("{}: \"{}\" cannot be read ({}); listener.{} is enabled",
                                           full_key, path, std::strerror(errno), name));
        }
    };
    check_file("credentials.pem.cert_file", tls.credentials.pem.cert_file);
    check_file("credentials.pem.key_file", tls.credentials.pem.key_file);
    if (tls.client_auth != client_auth_type::none) {
        check_file("trust_store", tls.trust_store);
    }
}

void cross_check(const broker_config& config) {
    if (config.redis.connection_type == "sentinel") {
        if (config.redis.sentinel.master.empty()) {
            throw config_error("redis.sentinel.master",
                               "redis.sentinel.master: required with redis.connection.type "
                               "sentinel (the name the sentinels monitor, e.g. mymaster)");
        }
        if (config.redis.sentinel.sentinels.empty()) {
            throw config_error("redis.sentinel.sentinels",
                               "redis.sentinel.sentinels: required with redis.connection.type "
                               "sentinel (host:port of each sentinel, comma-separated)");
        }
    }
    if (config.redis.ssl.enabled) {
        // Files that are named must be readable now, not at the first connect. An empty CA
        // file means the system's trust store; a client key needs its certificate and back.
        const auto& ssl = config.redis.ssl;
        for (const auto& [key, path] :
             {std::pair<std::string, std::string>{"redis.ssl.credentials.cert_file", ssl.cert_file},
              {"redis.ssl.credentials.user_cert_file", ssl.user_cert_file},
              {"redis.ssl.credentials.user_key_file", ssl.user_key_file}}) {
            if (path.empty()) {
                continue;
            }
            std::ifstream in(path, std::ios::binary);
            if (!in) {
                throw config_error(key, fmt::format("{}: \"{}\" cannot be read ({}); "
                                                    "redis.ssl.enabled is true",
                                                    key, path, std::strerror(errno)));
            }
        }
        if (ssl.user_cert_file.empty() != ssl.user_key_file.empty()) {
            const std::string missing = ssl.user_cert_file.empty()
                                            ? "redis.ssl.credentials.user_cert_file"
                                            : "redis.ssl.credentials.user_key_file";
            throw config_error(missing, missing +
                                            ": needed with the other half of the client "
                                            "certificate (user_cert_file and user_key_file "
                                            "go together)");
        }
    }
    if (config.redis.connection_type == "cluster") {
        if (config.redis.cluster.nodes.empty()) {
            throw config_error("redis.cluster.nodes",
                               "redis.cluster.nodes: required with redis.connection.type cluster "
                               "(host:port of one or more cluster nodes, comma-separated)");
        }
        if (config.redis.db != 0) {
            throw config_error("redis.db",
                               fmt::format("redis.db: \"{}\" must be 0 with redis.connection.type "
                                           "cluster (Redis Cluster has only database 0)",
                                           config.redis.db));
        }
    }
    const auto& listener = config.listener;
    if (listener.write_buffer_low_water_mark >= listener.write_buffer_high_water_mark) {
        throw config_error(
            "listener.write_buffer_low_water_mark",
            fmt::format("listener.write_buffer_low_water_mark: \"{}\" must be lower than "
                        "listener.write_buffer_high_water_mark (\"{}\"), or a channel could "
                        "never become writable again",
                        listener.write_buffer_low_water_mark / 1024,
                        listener.write_buffer_high_water_mark / 1024));
    }
    check_tls_listener("ssl", listener.ssl.enabled, listener.ssl.config);
    check_tls_listener("wss", listener.wss.enabled, listener.wss.config);
    const auto& producer = config.queue.kafka.defaults.producer;
    if (producer.enable_idempotence.value_or(false) && producer.acks != "all" &&
        producer.acks != "-1") {
        throw config_error(
            "queue.kafka.default.producer.enable-idempotence",
            fmt::format("queue.kafka.default.producer.enable-idempotence: \"true\" needs "
                        "queue.kafka.default.producer.acks = all (it is \"{}\"): Kafka's "
                        "idempotent producer requires acks from all in-sync replicas; leave it "
                        "empty to enable idempotence exactly when acks is all",
                        producer.acks));
    }
    if (config.queue.kafka.msg_all.retention.count() == 0) {
        throw config_error("queue.kafka.msg-all.retention-ms",
                           "queue.kafka.msg-all.retention-ms: \"0\" would delete every record at "
                           "once (use -1 to keep records forever)");
    }
    if (config.queue.kafka.application_persisted_msg.retention.count() == 0) {
        throw config_error("queue.kafka.application-persisted-msg.retention-ms",
                           "queue.kafka.application-persisted-msg.retention-ms: \"0\" would delete "
                           "every record at once (use -1 to keep records forever)");
    }
    if (config.queue.kafka.application_persisted_msg.shared_topic_retention.count() == 0) {
        throw config_error("queue.kafka.application-persisted-msg.shared-topic.retention-ms",
                           "queue.kafka.application-persisted-msg.shared-topic.retention-ms: \"0\" "
                           "would delete every record at once (use -1 to keep records forever)");
    }
    const auto& embedded = config.queue.embedded;
    if (embedded.retention_bytes == 0) {
        throw config_error("queue.embedded.retention-bytes",
                           "queue.embedded.retention-bytes: \"0\" would delete every closed "
                           "segment at once (use -1 for no size bound)");
    }
    if (embedded.disk_slow_free_bytes != 0 &&
        embedded.disk_slow_free_bytes < embedded.disk_min_free_bytes) {
        throw config_error(
            "queue.embedded.disk.slow-free-bytes",
            fmt::format("queue.embedded.disk.slow-free-bytes: \"{}\" must be at least "
                        "queue.embedded.disk.min-free-bytes (\"{}\"): writes slow down before "
                        "they are refused (0 = never slow down)",
                        embedded.disk_slow_free_bytes, embedded.disk_min_free_bytes));
    }
    // The HMAC secret TBMQ ships as its example (auth/jwt_provider.h, jwt_example_secret):
    // anyone can sign tokens with it.
    const auto& jwt = config.security.mqtt.jwt;
    if (jwt.enabled && jwt.verifier == "ALGORITHM_BASED" && jwt.algorithm == "HMAC_BASED" &&
        jwt.secret == "please-change-this-32-char-jwt-secret") {
        throw config_error("security.mqtt.jwt.secret",
                           "security.mqtt.jwt.secret: is the published example secret, which "
                           "anyone can sign tokens with; set SECURITY_MQTT_JWT_SECRET to your own "
                           "(at least 32 random bytes)");
    }
}

void resolve(broker_config& config) {
    // Checked by its binding already, so this cannot fail here.
    [[maybe_unused]] const auto url_problem = apply_datasource_url(config.spring.datasource);
    STARLING_ASSERT(!url_problem);
    if (config.service.id.empty()) {
        config.service.id = host_name();
        if (config.service.id.empty()) {
            throw config_error("service.id",
                               "service.id: \"\" is empty and the host name cannot be read; set "
                               "TB_SERVICE_ID");
        }
        if (auto why = topic_name_part(config.service.id)) {
            throw config_error("service.id",
                               fmt::format("service.id: \"{}\" (the host name) {}; set "
                                           "TB_SERVICE_ID",
                                           config.service.id, *why));
        }
    }
    if (config.server.api_address.empty()) {
        config.server.api_address = config.server.address;
    }
    for (auto* threads : {&config.listener.io_threads, &config.actors.client.dispatcher_pool_size,
                          &config.actors.persisted_device.dispatcher_pool_size}) {
        if (*threads == 0) {
            *threads = cores();
        }
    }
}

// ---------------------------------------------------------------------------------------------
// security.mqtt.credentials and security.mqtt.blocked-clients: lists of maps, outside the
// scalar key table. Values may use ${ENV:default} like every other value.

constexpr std::array<std::string_view, 2> security_list_keys{"security.mqtt.credentials",
                                                             "security.mqtt.blocked-clients"};

YAML::Node security_list(const YAML::Node& root, std::string_view name) {
    // A missing key yields an undefined node, which throws on any other question: ask
    // IsDefined() first at every level.
    if (!root.IsDefined() || !root.IsMap()) {
        return YAML::Node();
    }
    const YAML::Node security = root["security"];
    if (!security.IsDefined() || !security.IsMap()) {
        return YAML::Node();
    }
    const YAML::Node mqtt = security["mqtt"];
    if (!mqtt.IsDefined() || !mqtt.IsMap()) {
        return YAML::Node();
    }
    const YAML::Node list = mqtt[std::string(name)];
    return list.IsDefined() ? list : YAML::Node();
}

struct list_item {
    const YAML::Node& node;
    std::string path;  // "security.mqtt.credentials[2]"
    const env_lookup& env;

    [[noreturn]] void fail(std::string_view field, std::string_view why) const {
        throw config_error(path + "." + std::string(field),
                           fmt::format("{}.{}: {}", path, field, why));
    }

    std::optional<std::string> text(std::string_view field) const {
        const YAML::Node value = node[std::string(field)];
        if (!value.IsDefined() || value.IsNull()) {
            return std::nullopt;
        }
        if (!value.IsScalar()) {
            fail(field, "expected a single value");
        }
        const auto key = path + "." + std::string(field);
        return substitute(key, value.Scalar(), env).text;
    }

    std::string required(std::string_view field) const {
        auto value = text(field);
        if (!value || value->empty()) {
            fail(field, "is required");
        }
        return *value;
    }

    std::string one_of(std::string_view field, std::span<const std::string_view> names,
                       std::optional<std::string_view> fallback = std::nullopt) const {
        auto value = text(field);
        if (!value && fallback) {
            return std::string(*fallback);
        }
        if (!value || std::find(names.begin(), names.end(), *value) == names.end()) {
            fail(field, fmt::format("\"{}\" is not one of: {}", value.value_or(""), join(names)));
        }
        return *value;
    }

    std::optional<std::vector<std::string>> patterns(std::string_view field) const {
        const YAML::Node value = node[std::string(field)];
        if (!value.IsDefined() || value.IsNull()) {
            return std::nullopt;
        }
        std::vector<std::string> out;
        if (value.IsScalar()) {
            out.push_back(value.Scalar());
        } else if (value.IsSequence()) {
            for (const auto& item : value) {
                if (!item.IsScalar()) {
                    fail(field, "expected a list of regular expressions");
                }
                out.push_back(item.Scalar());
            }
        } else {
            fail(field, "expected a list of regular expressions");
        }
        for (const auto& pattern : out) {
            check_pattern(field, pattern);
        }
        return out;
    }

    // Validates one pattern with the compiler the broker matches with (RE2, auth/pattern.h).
    void check_pattern(std::string_view field, const std::string& pattern) const {
        if (auto why = auth::pattern::check(pattern); !why.empty()) {
            fail(field, fmt::format("\"{}\" is not a valid regular expression (RE2 syntax): {}",
                                    pattern, why));
        }
    }
};

void parse_security_lists(const YAML::Node& root, const env_lookup& env, broker_config& config) {
    static constexpr std::array<std::string_view, 2> client_types{"DEVICE", "APPLICATION"};
    static constexpr std::array<std::string_view, 2> credentials_types{"MQTT_BASIC", "X_509"};
    static constexpr std::array<std::string_view, 4> blocked_types{"CLIENT_ID", "USERNAME",
                                                                   "IP_ADDRESS", "REGEX"};
    static constexpr std::array<std::string_view, 3> regex_targets{"CLIENT_ID", "USERNAME",
                                                                   "IP_ADDRESS"};
    auto list_of = [&root](std::string_view name, std::string_view key) {
        YAML::Node list = security_list(root, name);
        if (list.IsDefined() && !list.IsNull() && !list.IsSequence()) {
            throw config_error(std::string(key), fmt::format("{}: expected a list", key));
        }
        return list;
    };
    const YAML::Node credentials = list_of("credentials", security_list_keys[0]);
    std::size_t index = 0;
    for (const auto& node : credentials) {
        list_item item{node, fmt::format("{}[{}]", security_list_keys[0], index++), env};
        if (!node.IsMap()) {
            throw config_error(item.path, fmt::format("{}: expected a map", item.path));
        }
        credentials_entry e;
        e.name = item.required("name");
        e.type = item.one_of("type", client_types, "DEVICE");
        e.credentials_type = item.one_of("credentials-type", credentials_types);
        e.client_id = item.text("client-id");
        e.username = item.text("username");
        e.password = item.text("password");
        e.cert_cn = item.text("cert-cn");
        if (auto regex = item.text("cert-cn-regex")) {
            if (e.cert_cn) {
                item.fail("cert-cn-regex", "give cert-cn or cert-cn-regex, not both");
            }
            item.check_pattern("cert-cn-regex", *regex);
            e.cert_cn = std::move(regex);
            e.cert_cn_is_regex = true;
        }
        e.pub = item.patterns("pub");
        e.sub = item.patterns("sub");
        if (auto bound = item.text("client-id-pattern")) {
            item.check_pattern("client-id-pattern", *bound);
            e.client_id_pattern = std::move(bound);
        }
        if (e.credentials_type == "MQTT_BASIC") {
            if (!e.client_id && !e.username) {
                item.fail("client-id", "MQTT_BASIC credentials need client-id, username or both");
            }
            if (e.cert_cn) {
                item.fail("cert-cn", "belongs to X_509 credentials");
            }
        } else {
            if (!e.cert_cn) {
                item.fail("cert-cn", "X_509 credentials need cert-cn or cert-cn-regex");
            }
            if (e.client_id || e.username || e.password) {
                item.fail("credentials-type",
                          "X_509 credentials take cert-cn, not client-id/username/password");
            }
        }
        config.security.mqtt.credentials.push_back(std::move(e));
    }
    const YAML::Node blocked = list_of("blocked-clients", security_list_keys[1]);
    index = 0;
    for (const auto& node : blocked) {
        list_item item{node, fmt::format("{}[{}]", security_list_keys[1], index++), env};
        if (!node.IsMap()) {
            throw config_error(item.path, fmt::format("{}: expected a map", item.path));
        }
        blocked_client_entry e;
        e.type = item.one_of("type", blocked_types);
        e.value = item.required("value");
        if (e.type == "REGEX") {
            // Same compiler as the block list (RE2), so a bad pattern fails here naming the key.
            item.check_pattern("value", e.value);
            e.regex_match_target = item.one_of("regex-match-target", regex_targets, "CLIENT_ID");
        }
        if (auto expiry = item.text("expiration-time")) {
            const auto parsed = parse_integer(*expiry);
            if (!parsed || *parsed < 0) {
                item.fail("expiration-time", "expected epoch milliseconds (0 = never expires)");
            }
            e.expiration_time_ms = *parsed;
        }
        e.description = item.text("description").value_or("");
        config.security.mqtt.blocked_clients.push_back(std::move(e));
    }
}

// Maps and lists of the JWT and HTTP providers, outside the scalar key table (like the
// security lists above). Map values and list items may use ${ENV:default}.
constexpr std::array<std::string_view, 4> provider_map_keys{
    "security.mqtt.jwt.jwks.headers", "security.mqtt.jwt.auth-claims",
    "security.mqtt.jwt.client-type-claims", "security.mqtt.http.headers"};
constexpr std::array<std::string_view, 4> provider_list_keys{
    "security.mqtt.jwt.auth-rules.pub", "security.mqtt.jwt.auth-rules.sub",
    "security.mqtt.http.auth-rules.pub", "security.mqtt.http.auth-rules.sub"};

// The node at a dotted key, or an undefined node. Recursion for the reason given at
// find_value (yaml-cpp nodes have reference semantics).
YAML::Node node_at(const YAML::Node& node, std::span<const std::string_view> parts) {
    if (parts.empty()) {
        return node;
    }
    if (!node.IsDefined() || !node.IsMap()) {
        return YAML::Node(YAML::NodeType::Undefined);
    }
    const YAML::Node child = node[std::string(parts.front())];
    return node_at(child, parts.subspan(1));
}

// A map of scalars at `key`; nullopt when the file does not have the key.
std::optional<std::map<std::string, std::string>> string_map(const YAML::Node& root,
                                                             std::string_view key,
                                                             const env_lookup& env) {
    const auto parts = split_key(key);
    const YAML::Node node = node_at(root, parts);
    if (!node.IsDefined() || node.IsNull()) {
        return std::nullopt;
    }
    if (!node.IsMap()) {
        throw config_error(std::string(key),
                           fmt::format("{}: expected a map of names to values", key));
    }
    std::map<std::string, std::string> out;
    for (const auto& entry : node) {
        if (!entry.first.IsScalar() || !(entry.second.IsScalar() || entry.second.IsNull())) {
            throw config_error(std::string(key),
                               fmt::format("{}: expected a map of names to single values", key));
        }
        const auto item_key = fmt::format("{}.{}", key, entry.first.Scalar());
        out[entry.first.Scalar()] = entry.second.IsNull()
                                        ? std::string{}
                                        : substitute(item_key, entry.second.Scalar(), env).text;
    }
    return out;
}

// A list of regular expressions at `key` (one scalar is a list of one); nullopt when absent.
std::optional<std::vector<std::string>> regex_list(const YAML::Node& root, std::string_view key,
                                                   const env_lookup& env) {
    const auto parts = split_key(key);
    const YAML::Node node = node_at(root, parts);
    if (!node.IsDefined() || node.IsNull()) {
        return std::nullopt;
    }
    std::vector<std::string> out;
    auto add = [&](const YAML::Node& item) {
        if (!item.IsScalar()) {
            throw config_error(std::string(key),
                               fmt::format("{}: expected a list of regular expressions", key));
        }
        auto pattern = substitute(key, item.Scalar(), env).text;
        // The compiler the providers match with (RE2, auth/pattern.h), so what passes here
        // compiles at run time.
        if (auto why = auth::pattern::check(pattern); !why.empty()) {
            throw config_error(
                std::string(key),
                fmt::format("{}: \"{}\" is not a valid regular expression (RE2 syntax): {}", key,
                            pattern, why));
        }
        out.push_back(std::move(pattern));
    };
    if (node.IsSequence()) {
        for (const auto& item : node) {
            add(item);
        }
    } else {
        add(node);
    }
    return out;
}

void parse_provider_structures(const YAML::Node& root, const env_lookup& env,
                               broker_config& config) {
    auto& jwt = config.security.mqtt.jwt;
    auto& http = config.security.mqtt.http;
    jwt.jwks_headers =
        string_map(root, provider_map_keys[0], env).value_or(std::map<std::string, std::string>{});
    jwt.auth_claims =
        string_map(root, provider_map_keys[1], env).value_or(std::map<std::string, std::string>{});
    jwt.client_type_claims =
        string_map(root, provider_map_keys[2], env).value_or(std::map<std::string, std::string>{});
    // TBMQ's default: the template body is JSON.
    http.headers =
        string_map(root, provider_map_keys[3], env)
            .value_or(std::map<std::string, std::string>{{"Content-Type", "application/json"}});
    const auth_rules_section defaults;
    jwt.auth_rules.pub = regex_list(root, provider_list_keys[0], env).value_or(defaults.pub);
    jwt.auth_rules.sub = regex_list(root, provider_list_keys[1], env).value_or(defaults.sub);
    http.auth_rules.pub = regex_list(root, provider_list_keys[2], env).value_or(defaults.pub);
    http.auth_rules.sub = regex_list(root, provider_list_keys[3], env).value_or(defaults.sub);
}

YAML::Node parse_yaml(std::string_view yaml_text, std::string_view source_name) {
    try {
        YAML::Node root = YAML::Load(std::string(yaml_text));
        if (root.IsDefined() && !root.IsNull() && !root.IsMap()) {
            throw config_error(
                "", fmt::format("{}: the document must be a map of sections", source_name));
        }
        return root;
    } catch (const YAML::ParserException& e) {
        throw config_error("", fmt::format("{}:{}:{}: YAML syntax error: {}", source_name,
                                           e.mark.line + 1, e.mark.column + 1, e.msg));
    }
}

}  // namespace

std::string_view to_string(run_mode mode) { return name_of(run_mode_names, mode); }
std::string_view to_string(fsync_policy policy) { return name_of(fsync_policy_names, policy); }
std::string_view to_string(shared_subscription_processing type) {
    return name_of(shared_processing_names, type);
}
std::string_view to_string(basic_auth_strategy strategy) {
    return name_of(basic_strategy_names, strategy);
}

std::string_view to_string(tls_protocol_version version) {
    return name_of(tls_protocol_names, version);
}
std::string_view to_string(client_auth_type type) { return name_of(client_auth_names, type); }

std::optional<std::string> process_environment(std::string_view name) {
    const char* value = std::getenv(std::string(name).c_str());
    if (value == nullptr) {
        return std::nullopt;
    }
    return std::string(value);
}

broker_config parse_config(std::string_view yaml_text, const load_options& options,
                           std::string_view source_name) {
    const YAML::Node root = parse_yaml(yaml_text, source_name);
    broker_config config;
    std::unordered_set<std::string_view> known;
    for (const auto& row : bindings()) {
        known.insert(row.info.key);
        auto written = find_value(root, row.info.key);
        const std::string source =
            written ? std::move(*written)
                    : fmt::format("${{{}:{}}}", row.info.env, row.info.default_value);
        row.apply(config, substitute(row.info.key, source, options.env));
    }
    for (std::string_view list_key : security_list_keys) {
        known.insert(list_key);
    }
    parse_security_lists(root, options.env, config);
    for (std::string_view key : provider_list_keys) {
        known.insert(key);
    }
    parse_provider_structures(root, options.env, config);
    std::vector<std::string> leaves;
    collect_leaves(root, "", leaves);
    auto in_map = [](std::string_view leaf) {
        return std::any_of(provider_map_keys.begin(), provider_map_keys.end(),
                           [leaf](std::string_view map_key) {
                               return leaf == map_key ||
                                      (leaf.starts_with(map_key) && leaf.size() > map_key.size() &&
                                       leaf[map_key.size()] == '.');
                           });
    };
    for (const auto& leaf : leaves) {
        if (!known.contains(leaf) && !in_map(leaf)) {
            warn(options,
                 fmt::format("{}: unknown configuration key '{}' ignored", source_name, leaf));
        }
    }
    cross_check(config);
    resolve(config);
    return config;
}

broker_config load_config(const std::filesystem::path& file, const load_options& options) {
    std::ifstream in(file, std::ios::binary);
    if (!in) {
        throw config_error(
            "", fmt::format("cannot read config file {}: {}", file.string(), std::strerror(errno)));
    }
    std::ostringstream text;
    text << in.rdbuf();
    return parse_config(text.str(), options, file.string());
}

broker_config load_config(const std::filesystem::path& file) {
    return load_config(file, load_options{});
}

broker_config default_config() {
    load_options options;
    options.env = [](std::string_view) { return std::optional<std::string>{}; };
    return parse_config("", options, "<defaults>");
}

std::span<const key_info> known_keys() {
    static const std::vector<key_info> keys = [] {
        std::vector<key_info> out;
        for (const auto& row : bindings()) {
            out.push_back(row.info);
        }
        return out;
    }();
    return keys;
}

}  // namespace starling::config
