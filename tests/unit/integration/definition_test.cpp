// Parsing integration definitions: what the API accepts, what it refuses (naming the field), and
// that a stored row reads back as the definition that was saved.
#include "integration/definition.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace starling::integration {
namespace {

using json = nlohmann::json;

json valid_body() {
    return {{"name", "to-backend"},
            {"type", "HTTP"},
            {"enabled", true},
            {"configuration",
             {{"topicFilters", {"sensors/#", "alerts/+"}},
              {"clientConfiguration",
               {{"restEndpointUrl", "http://127.0.0.1:8080/in"},
                {"requestMethod", "PUT"},
                {"headers", {{"X-Key", "k1"}}},
                {"payloadContentType", "TEXT"},
                {"readTimeoutMs", 2500},
                {"maxParallelRequestsCount", 4},
                {"maxRetries", 7},
                {"retryBackoffMs", 100},
                {"retryBackoffMaxMs", 2000}}}}}};
}

// The error text of parsing `body`, or "" when it parsed.
std::string error_of(const json& body) {
    auto parsed = from_json(body);
    if (auto* err = std::get_if<std::string>(&parsed)) {
        return *err;
    }
    return "";
}

TEST(IntegrationDefinition, ValidHttpBodyParsesEveryField) {
    auto parsed = from_json(valid_body());
    ASSERT_TRUE(std::holds_alternative<definition>(parsed)) << std::get<std::string>(parsed);
    const auto& d = std::get<definition>(parsed);
    EXPECT_EQ(d.name, "to-backend");
    EXPECT_EQ(d.type, "HTTP");
    EXPECT_TRUE(d.enabled);
    EXPECT_EQ(d.topic_filters, (std::vector<std::string>{"sensors/#", "alerts/+"}));
    EXPECT_EQ(d.http.method, "PUT");
    EXPECT_EQ(d.payload, payload_format::text);
    EXPECT_EQ(d.http.request_timeout, std::chrono::milliseconds(2500));
    EXPECT_EQ(d.delivery.max_in_flight, 4U);
    EXPECT_EQ(d.delivery.max_retries, 7U);
    EXPECT_EQ(d.delivery.retry_first, std::chrono::milliseconds(100));
    EXPECT_EQ(d.delivery.retry_max, std::chrono::milliseconds(2000));
    EXPECT_EQ(d.http.url_text, "http://127.0.0.1:8080/in");
    bool has_key = false;
    for (const auto& [k, v] : d.http.headers) {
        has_key = has_key || (k == "X-Key" && v == "k1");
    }
    EXPECT_TRUE(has_key);
}

TEST(IntegrationDefinition, DefaultsApplyWhenOptionalFieldsAreAbsent) {
    json body = {
        {"name", "n"},
        {"type", "HTTP"},
        {"configuration",
         {{"topicFilters", {"a"}}, {"clientConfiguration", {{"restEndpointUrl", "http://h/p"}}}}}};
    auto parsed = from_json(body);
    ASSERT_TRUE(std::holds_alternative<definition>(parsed)) << std::get<std::string>(parsed);
    const auto& d = std::get<definition>(parsed);
    EXPECT_TRUE(d.enabled);
    EXPECT_EQ(d.http.method, "POST");
    EXPECT_EQ(d.payload, payload_format::json);
    EXPECT_EQ(d.delivery.max_in_flight, 1U);
    EXPECT_TRUE(d.http.verify_tls);
}

TEST(IntegrationDefinition, BasicAndBearerCredentialsBecomeAnAuthorizationHeader) {
    auto header_of = [](const json& credentials) {
        json body = valid_body();
        body["configuration"]["clientConfiguration"]["credentials"] = credentials;
        auto parsed = from_json(body);
        EXPECT_TRUE(std::holds_alternative<definition>(parsed));
        if (!std::holds_alternative<definition>(parsed)) {
            return std::string("<error>");
        }
        for (const auto& [k, v] : std::get<definition>(parsed).http.headers) {
            if (k == "Authorization") {
                return v;
            }
        }
        return std::string();
    };
    EXPECT_EQ(header_of({{"type", "basic"}, {"username", "user"}, {"password", "pass"}}),
              "Basic " + base64_encode("user:pass"));
    EXPECT_EQ(header_of({{"type", "bearer"}, {"token", "t0k"}}), "Bearer t0k");
    EXPECT_EQ(header_of({{"type", "anonymous"}}), "");
}

TEST(IntegrationDefinition, ErrorsNameTheOffendingField) {
    struct bad_case {
        const char* pointer;  // JSON pointer to replace (or remove when value is null)
        json value;
        const char* field;  // expected at the start of the error
    };
    const std::vector<bad_case> cases = {
        {"/name", "", "name"},
        {"/name", 5, "name"},
        {"/configuration/topicFilters", json::array(), "configuration.topicFilters"},
        {"/configuration/topicFilters", {"a/#/b"}, "configuration.topicFilters"},
        {"/configuration/topicFilters", {""}, "configuration.topicFilters"},
        {"/configuration/clientConfiguration/restEndpointUrl", "ftp://h/p",
         "configuration.clientConfiguration.restEndpointUrl"},
        {"/configuration/clientConfiguration/restEndpointUrl", nullptr,
         "configuration.clientConfiguration.restEndpointUrl"},
        {"/configuration/clientConfiguration/requestMethod", "DELETE",
         "configuration.clientConfiguration.requestMethod"},
        {"/configuration/clientConfiguration/payloadContentType", "XML",
         "configuration.clientConfiguration.payloadContentType"},
        {"/configuration/clientConfiguration/readTimeoutMs", 10,
         "configuration.clientConfiguration.readTimeoutMs"},
        {"/configuration/clientConfiguration/maxParallelRequestsCount", 0,
         "configuration.clientConfiguration.maxParallelRequestsCount"},
        {"/configuration/clientConfiguration/maxParallelRequestsCount", 65,
         "configuration.clientConfiguration.maxParallelRequestsCount"},
        {"/configuration/clientConfiguration/maxRetries", -1,
         "configuration.clientConfiguration.maxRetries"},
        {"/configuration/clientConfiguration/headers",
         {{"X", 1}},
         "configuration.clientConfiguration.headers"},
    };
    for (const auto& c : cases) {
        json body = valid_body();
        const json::json_pointer ptr(c.pointer);
        if (c.value.is_null()) {
            body[ptr.parent_pointer()].erase(ptr.back());
        } else {
            body[ptr] = c.value;
        }
        const auto err = error_of(body);
        EXPECT_EQ(err.rfind(c.field, 0), 0U) << c.pointer << " -> '" << err << "'";
    }
}

TEST(IntegrationDefinition, RowsRoundTripThroughTheirDownlinkRecord) {
    const integration_row row{.id = "5f0c0e2a-1111-4222-8333-944455556666",
                              .created_time_ms = 1700000000123,
                              .name = "to \"backend\" \xe2\x9c\x93",
                              .type = "MQTT",
                              .enabled = false,
                              .configuration = R"({"topicFilters":["a/#"]})",
                              .additional_info = ""};
    auto back = decode_row(encode_row(row));
    ASSERT_TRUE(back);
    EXPECT_EQ(*back, row);

    EXPECT_FALSE(decode_row(""));
    EXPECT_FALSE(decode_row("{"));
    EXPECT_FALSE(decode_row("[1]"));
    auto no_id = json::parse(encode_row(row));
    no_id["id"] = "";
    EXPECT_FALSE(decode_row(no_id.dump()));
    auto wrong_type = json::parse(encode_row(row));
    wrong_type["enabled"] = "no";
    EXPECT_FALSE(decode_row(wrong_type.dump()));
    auto missing = json::parse(encode_row(row));
    missing.erase("configuration");
    EXPECT_FALSE(decode_row(missing.dump()));
}

TEST(IntegrationDefinition, UnknownTypesNameTheField) {
    json body = valid_body();
    body["type"] = "SMTP";
    EXPECT_EQ(error_of(body).rfind("type", 0), 0U);
    EXPECT_EQ(error_of(json::array()).empty(), false);
}

json mqtt_body() {
    return {{"id", "i-1"},
            {"name", "bridge"},
            {"type", "MQTT"},
            {"configuration",
             {{"topicFilters", {"sensors/#"}},
              {"clientConfiguration",
               {{"host", "cloud.example"},
                {"port", 8883},
                {"ssl", true},
                {"trustStoreFile", "/etc/ca.pem"},
                {"topicName", "edge/${clientId}/${topic}"},
                {"clientId", "edge-1"},
                {"mqttVersion", 4},
                {"qos", 2},
                {"retained", true},
                {"credentials", {{"type", "basic"}, {"username", "u"}, {"password", "p"}}},
                {"keepAliveSec", 30},
                {"connectTimeoutMs", 2000},
                {"deliveryTimeoutMs", 4000},
                {"cleanStart", false},
                {"sessionExpiryInterval", 3600}}}}}};
}

TEST(IntegrationDefinition, ValidMqttBodyParsesEveryField) {
    auto parsed = from_json(mqtt_body());
    ASSERT_TRUE(std::holds_alternative<definition>(parsed)) << std::get<std::string>(parsed);
    const auto& m = std::get<definition>(parsed).mqtt;
    EXPECT_EQ(m.host, "cloud.example");
    EXPECT_EQ(m.port, 8883);
    EXPECT_TRUE(m.tls);
    EXPECT_EQ(m.ca_file, "/etc/ca.pem");
    EXPECT_EQ(m.topic_template, "edge/${clientId}/${topic}");
    EXPECT_EQ(m.client_id, "edge-1");
    EXPECT_EQ(m.mqtt_version, 4);
    EXPECT_EQ(m.qos, 2);
    EXPECT_TRUE(m.retain);
    EXPECT_EQ(m.username, "u");
    EXPECT_EQ(m.password, "p");
    EXPECT_EQ(m.keep_alive, std::chrono::seconds(30));
    EXPECT_EQ(m.connect_timeout, std::chrono::milliseconds(2000));
    EXPECT_EQ(m.delivery_timeout, std::chrono::milliseconds(4000));
    EXPECT_FALSE(m.clean_start);
    EXPECT_EQ(m.session_expiry, 3600U);
}

TEST(IntegrationDefinition, MqttDefaultsBridgeThePayloadAsItIs) {
    json body = {
        {"id", "abc"},
        {"name", "m"},
        {"type", "MQTT"},
        {"configuration", {{"topicFilters", {"#"}}, {"clientConfiguration", {{"host", "h"}}}}}};
    auto parsed = from_json(body);
    ASSERT_TRUE(std::holds_alternative<definition>(parsed)) << std::get<std::string>(parsed);
    const auto& d = std::get<definition>(parsed);
    EXPECT_EQ(d.payload, payload_format::binary);
    EXPECT_EQ(d.mqtt.port, 1883);
    EXPECT_FALSE(d.mqtt.tls);
    EXPECT_EQ(d.mqtt.topic_template, "${topic}");
    EXPECT_EQ(d.mqtt.client_id, "starling-ie-abc");
    EXPECT_EQ(d.mqtt.mqtt_version, 5);
    EXPECT_EQ(d.mqtt.qos, 1);
    EXPECT_TRUE(d.mqtt.clean_start);
}

TEST(IntegrationDefinition, MqttErrorsNameTheOffendingField) {
    const std::string where = "configuration.clientConfiguration.";
    const std::vector<std::pair<const char*, json>> cases = {
        {"host", ""},
        {"host", "a b"},
        {"port", 0},
        {"port", 70000},
        {"topicName", ""},
        {"topicName", "out/#"},
        {"topicName", "a/+/${topic}"},
        {"mqttVersion", 3},
        {"qos", 3},
        {"ssl", "yes"},
        {"credentials", {{"type", "bearer"}}},
        {"credentials", {{"type", "basic"}}},
        {"sessionExpiryInterval", -1},
    };
    for (const auto& [field, value] : cases) {
        json body = mqtt_body();
        body["configuration"]["clientConfiguration"][field] = value;
        const auto err = error_of(body);
        EXPECT_EQ(err.rfind(where + field, 0), 0U)
            << field << "=" << value << " -> '" << err << "'";
    }
}

json kafka_body() {
    return {{"name", "to-kafka"},
            {"type", "KAFKA"},
            {"configuration",
             {{"topicFilters", {"sensors/#"}},
              {"clientConfiguration",
               {{"bootstrapServers", "k1:9092,k2:9093"},
                {"topic", "mqtt.in-1"},
                {"key", "${clientId}/${topic}"},
                {"acks", "1"},
                {"compression", "lz4"},
                {"lingerMs", 5},
                {"deliveryTimeoutMs", 3000},
                {"payloadContentType", "BINARY"},
                {"maxRetries", 2},
                {"kafkaHeaders", {{"source", "starling"}}},
                {"otherProperties", {{"security.protocol", "plaintext"}}}}}}}};
}

TEST(IntegrationDefinition, ValidKafkaBodyParsesEveryField) {
    auto parsed = from_json(kafka_body());
    ASSERT_TRUE(std::holds_alternative<definition>(parsed)) << std::get<std::string>(parsed);
    const auto& d = std::get<definition>(parsed);
    EXPECT_EQ(d.type, "KAFKA");
    EXPECT_EQ(d.kafka.bootstrap_servers, "k1:9092,k2:9093");
    EXPECT_EQ(d.kafka.topic, "mqtt.in-1");
    EXPECT_EQ(d.kafka.key_template, "${clientId}/${topic}");
    EXPECT_EQ(d.kafka.acks, "1");
    EXPECT_EQ(d.kafka.compression, "lz4");
    EXPECT_EQ(d.kafka.linger, std::chrono::milliseconds(5));
    EXPECT_EQ(d.kafka.delivery_timeout, std::chrono::milliseconds(3000));
    EXPECT_EQ(d.payload, payload_format::binary);
    EXPECT_EQ(d.delivery.max_retries, 2U);
    using pairs = std::vector<std::pair<std::string, std::string>>;
    EXPECT_EQ(d.kafka.headers, (pairs{{"source", "starling"}}));
    EXPECT_EQ(d.kafka.other_properties, (pairs{{"security.protocol", "plaintext"}}));
}

TEST(IntegrationDefinition, KafkaDefaultsKeepEachMqttTopicOnOnePartition) {
    json body = {{"name", "k"},
                 {"type", "KAFKA"},
                 {"configuration",
                  {{"topicFilters", {"#"}},
                   {"clientConfiguration", {{"bootstrapServers", "k:9092"}, {"topic", "t"}}}}}};
    auto parsed = from_json(body);
    ASSERT_TRUE(std::holds_alternative<definition>(parsed)) << std::get<std::string>(parsed);
    const auto& d = std::get<definition>(parsed);
    EXPECT_EQ(d.kafka.key_template, "${topic}");
    EXPECT_EQ(d.kafka.acks, "all");
    EXPECT_EQ(d.kafka.compression, "none");
    EXPECT_EQ(d.kafka.linger, std::chrono::milliseconds(0));
    EXPECT_EQ(d.payload, payload_format::json);
    EXPECT_EQ(d.delivery.max_in_flight, 1U);
}

TEST(IntegrationDefinition, KafkaErrorsNameTheOffendingField) {
    const std::string where = "configuration.clientConfiguration.";
    const std::vector<std::pair<const char*, json>> cases = {
        {"bootstrapServers", ""},
        {"bootstrapServers", "no-port"},
        {"bootstrapServers", "h:x"},
        {"topic", ""},
        {"topic", "a/b"},
        {"topic", std::string(250, 'a')},
        {"topic", ".."},
        {"acks", "-1"},
        {"compression", "brotli"},
        {"lingerMs", -1},
        {"deliveryTimeoutMs", 50},
        {"kafkaHeaders", {{"h", 1}}},
        {"otherProperties", {{"no.such.property", "1"}}},
        {"otherProperties", {{"security.protocol", "carrier-pigeon"}}},
    };
    for (const auto& [field, value] : cases) {
        json body = kafka_body();
        body["configuration"]["clientConfiguration"][field] = value;
        const auto err = error_of(body);
        EXPECT_EQ(err.rfind(where + field, 0), 0U)
            << field << "=" << value << " -> '" << err << "'";
    }
    json missing = kafka_body();
    missing["configuration"]["clientConfiguration"].erase("topic");
    EXPECT_EQ(error_of(missing).rfind(where + "topic", 0), 0U) << error_of(missing);
}

TEST(IntegrationDefinition, TemplatesTakeTheMessagesTopicAndClientId) {
    EXPECT_EQ(expand_template("${topic}", "a/b", "c1"), "a/b");
    EXPECT_EQ(expand_template("${clientId}:${topic}!", "a/b", "c1"), "c1:a/b!");
    EXPECT_EQ(expand_template("fixed", "a/b", "c1"), "fixed");
    EXPECT_EQ(expand_template("", "a/b", "c1"), "");
    EXPECT_EQ(expand_template("${top", "a/b", "c1"), "${top");
}

TEST(IntegrationDefinition, BootstrapHostPortIsTheFirstServer) {
    using hp = std::pair<std::string, std::string>;
    EXPECT_EQ(kafka_bootstrap_host_port("k1:9092,k2:1"), (hp{"k1", "9092"}));
    EXPECT_EQ(kafka_bootstrap_host_port("[::1]:9092"), (hp{"::1", "9092"}));
    EXPECT_FALSE(kafka_bootstrap_host_port(":9092"));
    EXPECT_FALSE(kafka_bootstrap_host_port("k1:"));
    EXPECT_FALSE(kafka_bootstrap_host_port("k1"));
}

TEST(IntegrationDefinition, RowRoundTripKeepsTheDefinition) {
    json body = valid_body();
    body["id"] = "0b8e4b7c-5b1a-4a0a-9d1e-000000000001";
    body["createdTime"] = 1700000000000;
    body["additionalInfo"] = {{"description", "d"}};
    auto parsed = from_json(body);
    ASSERT_TRUE(std::holds_alternative<definition>(parsed)) << std::get<std::string>(parsed);
    const auto& d = std::get<definition>(parsed);
    auto back = from_row(to_row(d));
    ASSERT_TRUE(std::holds_alternative<definition>(back)) << std::get<std::string>(back);
    const auto& r = std::get<definition>(back);
    EXPECT_EQ(r.id, d.id);
    EXPECT_EQ(r.created_time_ms, d.created_time_ms);
    EXPECT_EQ(r.topic_filters, d.topic_filters);
    EXPECT_EQ(r.http.method, d.http.method);
    EXPECT_EQ(r.delivery.max_retries, d.delivery.max_retries);
    EXPECT_EQ(to_json(r), to_json(d));
    EXPECT_EQ(to_json(r)["additionalInfo"]["description"], "d");
}

TEST(IntegrationDefinition, Base64MatchesRfc4648Vectors) {
    EXPECT_EQ(base64_encode(""), "");
    EXPECT_EQ(base64_encode("f"), "Zg==");
    EXPECT_EQ(base64_encode("fo"), "Zm8=");
    EXPECT_EQ(base64_encode("foo"), "Zm9v");
    EXPECT_EQ(base64_encode("foob"), "Zm9vYg==");
    EXPECT_EQ(base64_encode("fooba"), "Zm9vYmE=");
    EXPECT_EQ(base64_encode("foobar"), "Zm9vYmFy");
    EXPECT_EQ(base64_encode(std::string("\xff\x00\xfe", 3)), "/wD+");
}

}  // namespace
TEST(IntegrationDefinition, LifecycleEventsAreNamedAndMayStandAlone) {
    json body = valid_body();
    body["configuration"]["lifecycleEvents"] = {"CONNECTED", "AUTH_FAILED"};
    body["configuration"]["topicFilters"] = json::array();
    auto parsed = from_json(body);
    ASSERT_TRUE(std::holds_alternative<definition>(parsed)) << std::get<std::string>(parsed);
    const auto& d = std::get<definition>(parsed);
    EXPECT_EQ(d.events,
              event_bit(lifecycle_event::connected) | event_bit(lifecycle_event::auth_failed));
    EXPECT_TRUE(d.topic_filters.empty());

    body["configuration"]["lifecycleEvents"] = {"CONNECTED", "EXPLODED"};
    EXPECT_EQ(error_of(body).rfind("configuration.lifecycleEvents", 0), 0U) << error_of(body);
    body["configuration"]["lifecycleEvents"] = "CONNECTED";
    EXPECT_EQ(error_of(body).rfind("configuration.lifecycleEvents", 0), 0U) << error_of(body);
    // Neither a filter nor an event: nothing would ever be sent.
    body["configuration"]["lifecycleEvents"] = json::array();
    EXPECT_EQ(error_of(body).rfind("configuration.topicFilters", 0), 0U) << error_of(body);
}

TEST(IntegrationDefinition, EventNamesRoundTrip) {
    for (std::size_t i = 0; i < lifecycle_event_count; ++i) {
        const auto e = static_cast<lifecycle_event>(i);
        lifecycle_event back{};
        ASSERT_TRUE(lifecycle_event_from_string(to_string(e), back)) << i;
        EXPECT_EQ(back, e);
    }
    lifecycle_event ignored{};
    EXPECT_FALSE(lifecycle_event_from_string("connected", ignored));
}

}  // namespace starling::integration
