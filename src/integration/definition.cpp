#include "integration/definition.h"

#include "mqtt/reason_code.h"
#include "mqtt/topic.h"

#include <librdkafka/rdkafka.h>
#include <nlohmann/json.hpp>
#include <openssl/evp.h>

#include <algorithm>
#include <cctype>
#include <memory>
#include <optional>

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

// A client configuration's `credentials` (absent or null: anonymous). `type` comes lower-cased.
struct credentials_fields {
    std::string type = "anonymous";
    std::string username;
    std::string password;
    std::string token;
};

// Empty on success, else the error naming the field.
std::string read_credentials(const json& client, const std::string& where,
                             credentials_fields& out) {
    auto c = client.find("credentials");
    if (c == client.end() || c->is_null()) {
        return {};
    }
    if (!c->is_object()) {
        return where + "credentials: expected an object";
    }
    const std::string cw = where + "credentials.";
    std::string error;
    if (!read_string(*c, "type", out.type, cw, error) ||
        !read_string(*c, "username", out.username, cw, error) ||
        !read_string(*c, "password", out.password, cw, error) ||
        !read_string(*c, "token", out.token, cw, error)) {
        return error;
    }
    std::transform(out.type.begin(), out.type.end(), out.type.begin(),
                   [](unsigned char ch) { return static_cast<char>(std::tolower(ch)); });
    return {};
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
    credentials_fields cred;
    if (auto e = read_credentials(client, where, cred); !e.empty()) {
        return e;
    }
    const std::string cw = where + "credentials.";
    if (cred.type == "basic") {
        if (cred.username.empty()) {
            return cw + "username: required for basic credentials";
        }
        t.headers.emplace_back("Authorization",
                               "Basic " + base64_encode(cred.username + ":" + cred.password));
    } else if (cred.type == "bearer") {
        if (cred.token.empty() || !header_safe(cred.token)) {
            return cw + "token: required for bearer credentials (no CR/LF)";
        }
        t.headers.emplace_back("Authorization", "Bearer " + cred.token);
    } else if (cred.type != "anonymous") {
        return cw + "type: anonymous, basic or bearer";
    }
    std::int64_t timeout = t.request_timeout.count();
    if (!read_int(client, "readTimeoutMs", 100, 600'000, timeout, where, error)) {
        return error;
    }
    t.request_timeout = std::chrono::milliseconds(timeout);
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

// Settings every target shares: the body format and the executor's pacing.
std::optional<std::string> common_of(const json& client, definition& d) {
    const std::string where = "configuration.clientConfiguration.";
    std::string error;
    std::string format = d.type == "MQTT" ? "BINARY" : "JSON";  // a bridge forwards payloads
    if (!read_string(client, "payloadContentType", format, where, error)) {
        return error;
    }
    if (format == "JSON") {
        d.payload = payload_format::json;
    } else if (format == "TEXT") {
        d.payload = payload_format::text;
    } else if (format == "BINARY") {
        d.payload = payload_format::binary;
    } else {
        return where + "payloadContentType: JSON, TEXT or BINARY";
    }
    delivery_settings& p = d.delivery;
    std::int64_t parallel = static_cast<std::int64_t>(p.max_in_flight);
    std::int64_t retries = p.max_retries;
    std::int64_t first = p.retry_first.count();
    std::int64_t max = p.retry_max.count();
    if (!read_int(client, "maxParallelRequestsCount", 1, 64, parallel, where, error) ||
        !read_int(client, "maxRetries", 0, 1000, retries, where, error) ||
        !read_int(client, "retryBackoffMs", 10, 600'000, first, where, error) ||
        !read_int(client, "retryBackoffMaxMs", 10, 3'600'000, max, where, error)) {
        return error;
    }
    if (max < first) {
        return where + "retryBackoffMaxMs: must not be below retryBackoffMs";
    }
    p.max_in_flight = static_cast<std::size_t>(parallel);
    p.max_retries = static_cast<std::uint32_t>(retries);
    p.retry_first = std::chrono::milliseconds(first);
    p.retry_max = std::chrono::milliseconds(max);
    return std::nullopt;
}

// An object of strings into pairs; an error names `where` + `key`.
std::optional<std::string> string_map(const json& obj, const char* key, const std::string& where,
                                      std::vector<std::pair<std::string, std::string>>& out) {
    auto it = obj.find(key);
    if (it == obj.end() || it->is_null()) {
        return std::nullopt;
    }
    if (!it->is_object()) {
        return where + key + ": expected an object of strings";
    }
    for (const auto& [name, value] : it->items()) {
        if (!value.is_string() || name.empty()) {
            return where + key + "." + name + ": a non-empty name and a string value";
        }
        out.emplace_back(name, value.get<std::string>());
    }
    return std::nullopt;
}

// Kafka's rule for topic names: 1 to 249 of [a-zA-Z0-9._-], not "." or "..".
bool valid_kafka_topic(std::string_view t) {
    return !t.empty() && t.size() <= 249 && t != "." && t != ".." &&
           std::all_of(t.begin(), t.end(), [](char c) {
               return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '.' || c == '_' ||
                      c == '-';
           });
}

std::variant<kafka_target, std::string> kafka_of(const json& client) {
    const std::string where = "configuration.clientConfiguration.";
    std::string error;
    kafka_target t;
    if (!client.is_object()) {
        return "configuration.clientConfiguration: expected a JSON object";
    }
    if (!read_string(client, "bootstrapServers", t.bootstrap_servers, where, error) ||
        !read_string(client, "topic", t.topic, where, error) ||
        !read_string(client, "key", t.key_template, where, error) ||
        !read_string(client, "acks", t.acks, where, error) ||
        !read_string(client, "compression", t.compression, where, error)) {
        return error;
    }
    if (t.bootstrap_servers.empty() || !kafka_bootstrap_host_port(t.bootstrap_servers)) {
        return where + "bootstrapServers: host:port[,host:port...] is required";
    }
    if (!valid_kafka_topic(t.topic)) {
        return where + "topic: a Kafka topic name is required (1 to 249 of a-z A-Z 0-9 . _ -)";
    }
    if (t.acks != "all" && t.acks != "1" && t.acks != "0") {
        return where + "acks: all, 1 or 0";
    }
    static constexpr std::string_view codecs[] = {"none", "gzip", "snappy", "lz4", "zstd"};
    if (std::find(std::begin(codecs), std::end(codecs), t.compression) == std::end(codecs)) {
        return where + "compression: none, gzip, snappy, lz4 or zstd";
    }
    std::int64_t linger = t.linger.count();
    std::int64_t timeout = t.delivery_timeout.count();
    if (!read_int(client, "lingerMs", 0, 60'000, linger, where, error) ||
        !read_int(client, "deliveryTimeoutMs", 100, 600'000, timeout, where, error)) {
        return error;
    }
    t.linger = std::chrono::milliseconds(linger);
    t.delivery_timeout = std::chrono::milliseconds(timeout);
    if (auto e = string_map(client, "kafkaHeaders", where, t.headers)) {
        return std::move(*e);
    }
    if (auto e = string_map(client, "otherProperties", where, t.other_properties)) {
        return std::move(*e);
    }
    // librdkafka judges its own property names and values (no I/O: a scratch configuration).
    std::unique_ptr<rd_kafka_conf_t, decltype(&rd_kafka_conf_destroy)> conf(rd_kafka_conf_new(),
                                                                            rd_kafka_conf_destroy);
    for (const auto& [name, value] : t.other_properties) {
        char reason[256] = {};
        if (rd_kafka_conf_set(conf.get(), name.c_str(), value.c_str(), reason, sizeof reason) !=
            RD_KAFKA_CONF_OK) {
            return where + "otherProperties." + name + ": " + reason;
        }
    }
    return t;
}

std::variant<mqtt_target, std::string> mqtt_of(const json& client) {
    const std::string where = "configuration.clientConfiguration.";
    std::string error;
    mqtt_target t;
    std::int64_t port = t.port;
    std::int64_t version = t.mqtt_version;
    std::int64_t qos = t.qos;
    std::int64_t keep_alive = t.keep_alive.count();
    std::int64_t connect_timeout = t.connect_timeout.count();
    std::int64_t delivery_timeout = t.delivery_timeout.count();
    std::int64_t expiry = t.session_expiry;
    if (!read_string(client, "host", t.host, where, error) ||
        !read_string(client, "trustStoreFile", t.ca_file, where, error) ||
        !read_string(client, "topicName", t.topic_template, where, error) ||
        !read_string(client, "eventTopicName", t.event_topic_template, where, error) ||
        !read_string(client, "clientId", t.client_id, where, error) ||
        !read_int(client, "port", 1, 65535, port, where, error) ||
        !read_int(client, "mqttVersion", 4, 5, version, where, error) ||
        !read_int(client, "qos", 0, 2, qos, where, error) ||
        !read_int(client, "keepAliveSec", 0, 65535, keep_alive, where, error) ||
        !read_int(client, "connectTimeoutMs", 100, 600'000, connect_timeout, where, error) ||
        !read_int(client, "deliveryTimeoutMs", 100, 600'000, delivery_timeout, where, error) ||
        !read_int(client, "sessionExpiryInterval", 0, 4'294'967'295, expiry, where, error)) {
        return error;
    }
    if (t.host.empty() || !header_safe(t.host) || t.host.find_first_of(" /") != std::string::npos) {
        return where + "host: a host name or address is required";
    }
    // The template with sample values must be a valid topic name (no wildcards); a message's
    // own topic and client id never add any.
    const std::string literal = expand_template(t.topic_template, "t", "c");
    if (t.topic_template.empty() ||
        mqtt::validate_topic_name(literal) != mqtt::reason_code::success) {
        return where + "topicName: a topic name, with ${topic} / ${clientId} (no + or #)";
    }
    if (t.event_topic_template.empty() ||
        mqtt::validate_topic_name(expand_template(t.event_topic_template, "t", "c")) !=
            mqtt::reason_code::success) {
        return where + "eventTopicName: a topic name, with ${clientId} (no + or #)";
    }
    for (const char* key : {"ssl", "verifyTls", "retained", "cleanStart"}) {
        auto it = client.find(key);
        if (it != client.end() && !it->is_null() && !it->is_boolean()) {
            return where + key + ": expected true or false";
        }
    }
    t.tls = client.value("ssl", false);
    t.verify_tls = client.value("verifyTls", true);
    t.retain = client.value("retained", false);
    t.clean_start = client.value("cleanStart", true);
    credentials_fields cred;
    if (auto e = read_credentials(client, where, cred); !e.empty()) {
        return e;
    }
    if (cred.type == "basic") {
        if (cred.username.empty()) {
            return where + "credentials.username: required for basic credentials";
        }
        t.username = std::move(cred.username);
        t.password = std::move(cred.password);
    } else if (cred.type != "anonymous") {
        return where + "credentials.type: anonymous or basic";
    }
    t.port = static_cast<std::uint16_t>(port);
    t.mqtt_version = static_cast<int>(version);
    t.qos = static_cast<int>(qos);
    t.keep_alive = std::chrono::seconds(keep_alive);
    t.connect_timeout = std::chrono::milliseconds(connect_timeout);
    t.delivery_timeout = std::chrono::milliseconds(delivery_timeout);
    t.session_expiry = static_cast<std::uint32_t>(expiry);
    return t;
}

}  // namespace

std::optional<std::pair<std::string, std::string>> kafka_bootstrap_host_port(
    std::string_view servers) {
    const auto first = servers.substr(0, servers.find(','));
    const auto colon = first.rfind(':');
    if (colon == std::string_view::npos || colon == 0 || colon + 1 == first.size()) {
        return std::nullopt;
    }
    const auto port = first.substr(colon + 1);
    if (!std::all_of(port.begin(), port.end(),
                     [](char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; })) {
        return std::nullopt;
    }
    auto host = first.substr(0, colon);
    if (host.size() > 2 && host.front() == '[' && host.back() == ']') {
        host = host.substr(1, host.size() - 2);  // [IPv6 literal]:port
    }
    return std::pair{std::string(host), std::string(port)};
}

std::string expand_template(std::string_view text, std::string_view topic,
                            std::string_view client_id) {
    std::string out;
    out.reserve(text.size() + topic.size());
    while (!text.empty()) {
        if (text.starts_with("${topic}")) {
            out += topic;
            text.remove_prefix(8);
        } else if (text.starts_with("${clientId}")) {
            out += client_id;
            text.remove_prefix(11);
        } else {
            out += text.front();
            text.remove_prefix(1);
        }
    }
    return out;
}

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
    if (d.type != "HTTP" && d.type != "KAFKA" && d.type != "MQTT") {
        return std::string("type: HTTP, KAFKA or MQTT is required");
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
    if (auto events = config->find("lifecycleEvents");
        events != config->end() && !events->is_null()) {
        if (!events->is_array()) {
            return std::string("configuration.lifecycleEvents: expected an array of event names");
        }
        for (const auto& e : *events) {
            lifecycle_event event{};
            if (!e.is_string() ||
                !lifecycle_event_from_string(e.get_ref<const std::string&>(), event)) {
                return "configuration.lifecycleEvents: '" +
                       (e.is_string() ? e.get<std::string>() : e.dump()) +
                       "' is not CONNECTED, DISCONNECTED, SUBSCRIBED, UNSUBSCRIBED or AUTH_FAILED";
            }
            d.events |= event_bit(event);
        }
    }
    auto filters = config->find("topicFilters");
    if (filters == config->end() || !filters->is_array() || (filters->empty() && d.events == 0) ||
        filters->size() > max_topic_filters) {
        return std::string(
            "configuration.topicFilters: an array of up to 100 topic filters is required (at "
            "least one unless lifecycleEvents asks for some)");
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
    if (!client->is_object()) {
        return std::string("configuration.clientConfiguration: expected a JSON object");
    }
    if (auto err = common_of(*client, d)) {
        return std::move(*err);
    }
    if (d.type == "HTTP") {
        auto http = http_of(*client);
        if (auto* err = std::get_if<std::string>(&http)) {
            return std::move(*err);
        }
        d.http = std::get<http_target>(std::move(http));
    } else if (d.type == "MQTT") {
        auto mqtt = mqtt_of(*client);
        if (auto* err = std::get_if<std::string>(&mqtt)) {
            return std::move(*err);
        }
        d.mqtt = std::get<mqtt_target>(std::move(mqtt));
        if (d.mqtt.client_id.empty()) {
            d.mqtt.client_id = "starling-ie-" + d.id;
        }
    } else {
        auto kafka = kafka_of(*client);
        if (auto* err = std::get_if<std::string>(&kafka)) {
            return std::move(*err);
        }
        d.kafka = std::get<kafka_target>(std::move(kafka));
    }
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

std::string encode_row(const integration_row& row) {
    return json{{"id", row.id},
                {"createdTime", row.created_time_ms},
                {"name", row.name},
                {"type", row.type},
                {"enabled", row.enabled},
                {"configuration", row.configuration},
                {"additionalInfo", row.additional_info}}
        .dump();
}

std::optional<integration_row> decode_row(const std::string& value) {
    const json j = json::parse(value, nullptr, /*allow_exceptions=*/false);
    if (!j.is_object()) {
        return std::nullopt;
    }
    try {
        integration_row row{.id = j.at("id").get<std::string>(),
                            .created_time_ms = j.at("createdTime").get<std::int64_t>(),
                            .name = j.at("name").get<std::string>(),
                            .type = j.at("type").get<std::string>(),
                            .enabled = j.at("enabled").get<bool>(),
                            .configuration = j.at("configuration").get<std::string>(),
                            .additional_info = j.at("additionalInfo").get<std::string>()};
        if (row.id.empty()) {
            return std::nullopt;
        }
        return row;
    } catch (const json::exception&) {
        return std::nullopt;
    }
}

}  // namespace starling::integration
