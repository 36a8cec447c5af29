// The HTTP body an integration sends: the JSON envelope's fields, binary-safe payloads, and the
// raw TEXT/BINARY forms.
#include "integration/http_payload.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace starling::integration {
namespace {

broker::app_message sample() {
    broker::app_message m;
    m.topic = "sensors/t1";
    m.payload = std::string("\x00\x01hi\xff", 5);
    m.qos = mqtt::qos::at_least_once;
    m.retain = true;
    m.publisher_id = "dev-1";
    m.node_id = "node-a";
    m.created_at_ms = 1234;
    return m;
}

TEST(IntegrationHttpPayload, JsonEnvelopeCarriesTheMessage) {
    const auto b = make_http_body(sample(), payload_format::json);
    EXPECT_EQ(b.content_type, "application/json");
    const auto j = nlohmann::json::parse(b.body);
    EXPECT_EQ(j["topic"], "sensors/t1");
    EXPECT_EQ(j["qos"], 1);
    EXPECT_EQ(j["retain"], true);
    EXPECT_EQ(j["clientId"], "dev-1");
    EXPECT_EQ(j["node"], "node-a");
    EXPECT_EQ(j["ts"], 1234);
    EXPECT_EQ(j["payload"], base64_encode(std::string("\x00\x01hi\xff", 5)));
    EXPECT_TRUE(j["properties"].empty());
}

TEST(IntegrationHttpPayload, JsonEnvelopeCarriesPublisherProperties) {
    auto m = sample();
    m.properties.content_type = "application/cbor";
    m.properties.response_topic = "replies/1";
    m.properties.correlation_data = std::string("\x01\x02", 2);
    m.properties.user_properties = {{"k", "v"}, {"k", "w"}};
    const auto j = nlohmann::json::parse(make_http_body(m, payload_format::json).body);
    EXPECT_EQ(j["properties"]["contentType"], "application/cbor");
    EXPECT_EQ(j["properties"]["responseTopic"], "replies/1");
    EXPECT_EQ(j["properties"]["correlationData"], "AQI=");
    ASSERT_EQ(j["properties"]["userProperties"].size(), 2U);
    EXPECT_EQ(j["properties"]["userProperties"][1]["value"], "w");
}

TEST(IntegrationHttpPayload, InvalidUtf8InTheTopicDoesNotThrow) {
    auto m = sample();
    m.topic = "bad\xc3";
    const auto b = make_http_body(m, payload_format::json);
    const auto j = nlohmann::json::parse(b.body, nullptr, /*allow_exceptions=*/false);
    EXPECT_FALSE(j.is_discarded()) << b.body;
    EXPECT_EQ(j["topic"].get<std::string>().rfind("bad", 0), 0U);
}

TEST(IntegrationHttpPayload, TextAndBinarySendThePayloadItself) {
    const auto t = make_http_body(sample(), payload_format::text);
    EXPECT_EQ(t.content_type.rfind("text/plain", 0), 0U);
    EXPECT_EQ(t.body, sample().payload);
    const auto b = make_http_body(sample(), payload_format::binary);
    EXPECT_EQ(b.content_type, "application/octet-stream");
    EXPECT_EQ(b.body, sample().payload);
}

}  // namespace
}  // namespace starling::integration
