#include "integration/definition.h"

#include "mqtt/reason_code.h"
#include "mqtt/topic.h"

#include <nlohmann/json.hpp>
#include <openssl/evp.h>

#include <algorithm>
#include <cctype>

namespace starling::integration {
namespace {

using json = nlohmann::json;

constexpr std::size_t max_topic_filters = 100;
constexpr std::size_t max_name_bytes = 255;

// Reads an optional integer member within [lo, hi]; an error names `where`.
bool read_int(const json& obj, const char* key, std::int64_t lo, std::int64_t hi, std::int64_t& out,
              const std::string& where, std::string& error) {
    auto it = obj.find(key);
    if (it == obj.end() || it->is_null()) {
        return true;
    }
    if (!it->is_number_integer() || it->get<std::int64_t>() < lo || it->get<std::int64_t>() > hi) {
        error = where + key + ": an integer from " + std::to_string(lo) + " to " +
                std::to_string(hi) + " is required";
        return false;
    }
    out = it->get<std::int64_t>();
    return true;
}

bool read_string(const json& obj, const char* key, std::string& out, const std::string& where,
                 std::string& error) {
    auto it = obj.find(key);
    if (it == obj.end() || it->is_null()) {
        return true;
    }
    if (!it->is_string()) {
        error = where + key + ": expected a string";
        return false;
    }
    out = it->get<std::string>();
    return true;
}

// A header name or value that could split the request (CR, LF, NUL) is refused.
bool header_safe(std::string_view s) {
    return std::none_of(s.begin(), s.end(),
                        [](char c) { return c == '\r' || c == '\n' || c == 0; });
}

std::variant<http_target, std::string> http_of(const json& client) {
    const std::string where = "configuration.clientConfiguration.";
    std::string error;
    http_target t;
    if (!client.is_object()) {
        return "configuration.clientConfiguration: expected a JSON object";
    }
    if (!read_string(client, "restEndpointUrl", t.url_text, where, error)) {
        return error;
    }
    auto url = auth::url::parse(t.url_text);
    if (t.url_text.empty() || !url) {
        return where + "restEndpointUrl: an http:// or https:// URL is required" +
               (url ? std::string() : " (" + url.error().message() + ")");
    }
    t.url = url.value();
    if (!read_string(client, "requestMethod", t.method, where, error)) {
        return error;
    }
    std::transform(t.method.begin(), t.method.end(), t.method.begin(),
                   [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
    if (t.method != "POST" && t.method != "PUT" && t.method != "PATCH") {
        return where + "requestMethod: POST, PUT or PATCH";
    }
    if (auto h = client.find("headers"); h != client.end() && !h->is_null()) {
        if (!h->is_object()) {
            return where + "headers: expected an object of strings";
        }
        for (const auto& [name, value] : h->items()) {
            if (!value.is_string() || name.empty() || !header_safe(name) ||
                !header_safe(value.get_ref<const std::string&>())) {
                return where + "headers." + name +
                       ": a non-empty name and a string value without CR/LF";
            }
            t.headers.emplace_back(name, value.get<std::string>());
        }
    }
    if (auto c = client.find("credentials"); c != client.end() && !c->is_null()) {
        if (!c->is_object()) {
            return where + "credentials: expected an object";
        }
        std::string type = "anonymous";
        std::string user, password, token;
        const std::string cw = where + "credentials.";
        if (!read_string(*c, "type", type, cw, error) ||
            !read_string(*c, "username", user, cw, error) ||
            !read_string(*c, "password", password, cw, error) ||
            !read_string(*c, "token", token, cw, error)) {
            return error;
        }
        std::transform(type.begin(), type.end(), type.begin(),
                       [](unsigned char ch) { return static_cast<char>(std::tolower(ch)); });
        if (type == "basic") {
            if (user.empty()) {
                return cw + "username: required for basic credentials";
            }
            t.headers.emplace_back("Authorization",
                                   "Basic " + base64_encode(user + ":" + password));
        } else if (type == "bearer") {
            if (token.empty() || !header_safe(token)) {
                return cw + "token: required for bearer credentials (no CR/LF)";
            }
            t.headers.emplace_back("Authorization", "Bearer " + token);
        } else if (type != "anonymous") {
            return cw + "type: anonymous, basic or bearer";
        }
    }
    std::string format = "JSON";
    if (!read_string(client, "payloadContentType", format, where, error)) {
        return error;
    }
    if (format == "JSON") {
        t.payload = payload_format::json;
    } else if (format == "TEXT") {
        t.payload = payload_format::text;
    } else if (format == "BINARY") {
        t.payload = payload_format::binary;
    } else {
        return where + "payloadContentType: JSON, TEXT or BINARY";
    }
    std::int64_t timeout = t.request_timeout.count();
    std::int64_t parallel = static_cast<std::int64_t>(t.max_in_flight);
    std::int64_t retries = t.max_retries;
    std::int64_t first = t.retry_first.count();
    std::int64_t max = t.retry_max.count();
    if (!read_int(client, "readTimeoutMs", 100, 600'000, timeout, where, error) ||
        !read_int(client, "maxParallelRequestsCount", 1, 64, parallel, where, error) ||
        !read_int(client, "maxRetries", 0, 1000, retries, where, error) ||
        !read_int(client, "retryBackoffMs", 10, 600'000, first, where, error) ||
        !read_int(client, "retryBackoffMaxMs", 10, 3'600'000, max, where, error)) {
        return error;
    }
    if (max < first) {
        return where + "retryBackoffMaxMs: must not be below retryBackoffMs";
    }
    t.request_timeout = std::chrono::milliseconds(timeout);
    t.max_in_flight = static_cast<std::size_t>(parallel);
    t.max_retries = static_cast<std::uint32_t>(retries);
    t.retry_first = std::chrono::milliseconds(first);
    t.retry_max = std::chrono::milliseconds(max);
    if (!read_string(client, "trustStoreFile", t.ca_file, where, error)) {
        return error;
    }
    if (auto v = client.find("verifyTls"); v != client.end() && !v->is_null()) {
        if (!v->is_boolean()) {
            return where + "verifyTls: expected true or false";
        }
        t.verify_tls = v->get<bool>();
    }
    return t;
}

}  // namespace

std::string base64_encode(std::string_view bytes) {
    std::string out(4 * ((bytes.size() + 2) / 3), '\0');
    const int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                  reinterpret_cast<const unsigned char*>(bytes.data()),
                                  static_cast<int>(bytes.size()));
    out.resize(static_cast<std::size_t>(std::max(n, 0)));
    return out;
}

std::variant<definition, std::string> from_json(const json& body) {
    if (!body.is_object()) {
        return std::string("body: expected a JSON object");
    }
    definition d;
    std::string error;
    if (!read_string(body, "id", d.id, "", error) ||
        !read_string(body, "name", d.name, "", error)) {
        return error;
    }
    if (d.name.empty() || d.name.size() > max_name_bytes) {
        return std::string("name: a non-empty string of at most 255 bytes is required");
    }
    if (!read_string(body, "type", d.type, "", error)) {
        return error;
    }
    if (d.type == "MQTT" || d.type == "KAFKA") {
        return "type: " + d.type + " integrations are not supported yet (only HTTP)";
    }
    if (d.type != "HTTP") {
        return std::string("type: HTTP is required");
    }
    if (auto e = body.find("enabled"); e != body.end() && !e->is_null()) {
        if (!e->is_boolean()) {
            return std::string("enabled: expected true or false");
        }
        d.enabled = e->get<bool>();
    }
    if (auto t = body.find("createdTime"); t != body.end() && t->is_number_integer()) {
        d.created_time_ms = t->get<std::int64_t>();
    }
    auto config = body.find("configuration");
    if (config == body.end() || !config->is_object()) {
        return std::string("configuration: a JSON object is required");
    }
    auto filters = config->find("topicFilters");
    if (filters == config->end() || !filters->is_array() || filters->empty() ||
        filters->size() > max_topic_filters) {
        return std::string(
            "configuration.topicFilters: an array of 1 to 100 topic filters is required");
    }
    for (const auto& f : *filters) {
        if (!f.is_string() || mqtt::is_shared(f.get_ref<const std::string&>()) ||
            mqtt::validate_topic_filter(f.get_ref<const std::string&>()) !=
                mqtt::reason_code::success) {
            return "configuration.topicFilters: '" +
                   (f.is_string() ? f.get<std::string>() : f.dump()) +
                   "' is not a valid MQTT topic filter (no $share/)";
        }
        d.topic_filters.push_back(f.get<std::string>());
    }
    auto client = config->find("clientConfiguration");
    if (client == config->end()) {
        return std::string("configuration.clientConfiguration: a JSON object is required");
    }
    auto http = http_of(*client);
    if (auto* err = std::get_if<std::string>(&http)) {
        return std::move(*err);
    }
    d.http = std::get<http_target>(std::move(http));
    d.configuration = config->dump();
    if (auto info = body.find("additionalInfo"); info != body.end() && !info->is_null()) {
        d.additional_info = info->dump();
    }
    return d;
}

std::variant<definition, std::string> from_row(const integration_row& row) {
    json body = {{"id", row.id},
                 {"name", row.name},
                 {"type", row.type},
                 {"enabled", row.enabled},
                 {"createdTime", row.created_time_ms}};
    body["configuration"] = json::parse(row.configuration, nullptr, /*allow_exceptions=*/false);
    if (!row.additional_info.empty()) {
        body["additionalInfo"] = json::parse(row.additional_info, nullptr, false);
    }
    return from_json(body);
}

integration_row to_row(const definition& d) {
    return {.id = d.id,
            .created_time_ms = d.created_time_ms,
            .name = d.name,
            .type = d.type,
            .enabled = d.enabled,
            .configuration = d.configuration,
            .additional_info = d.additional_info};
}

json to_json(const definition& d) {
    json out = {{"id", d.id},
                {"createdTime", d.created_time_ms},
                {"name", d.name},
                {"type", d.type},
                {"enabled", d.enabled},
                {"configuration", json::parse(d.configuration, nullptr, false)},
                {"additionalInfo", d.additional_info.empty()
                                       ? json(nullptr)
                                       : json::parse(d.additional_info, nullptr, false)}};
    return out;
}

}  // namespace starling::integration
