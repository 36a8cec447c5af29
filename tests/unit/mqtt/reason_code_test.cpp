#include "mqtt/reason_code.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

namespace starling::mqtt {
namespace {

TEST(reason_code, is_an_error_code_enum_in_the_mqtt_category) {
    std::error_code ec = reason_code::malformed_packet;
    EXPECT_STREQ(ec.category().name(), "mqtt");
    EXPECT_EQ(ec.value(), 0x81);
    EXPECT_EQ(ec.message(), "malformed_packet");
    EXPECT_TRUE(ec);
    EXPECT_EQ(ec, make_error_code(reason_code::malformed_packet));
    std::error_code ok = reason_code::success;
    EXPECT_FALSE(ok);  // success is "no error"
}

TEST(reason_code, has_the_specification_values) {
    EXPECT_EQ(static_cast<int>(reason_code::granted_qos_2), 0x02);
    EXPECT_EQ(static_cast<int>(reason_code::no_matching_subscribers), 0x10);
    EXPECT_EQ(static_cast<int>(reason_code::re_authenticate), 0x19);
    EXPECT_EQ(static_cast<int>(reason_code::topic_alias_invalid), 0x94);
    EXPECT_EQ(static_cast<int>(reason_code::wildcard_subscriptions_not_supported), 0xA2);
    EXPECT_EQ(reason_code::normal_disconnection, reason_code::success);
    EXPECT_EQ(reason_code::granted_qos_0, reason_code::success);
}

TEST(reason_code, every_defined_code_has_a_unique_name) {
    std::set<std::string_view> names;
    int defined = 0;
    for (int v = 0; v < 256; ++v) {
        auto code = static_cast<reason_code>(v);
        if (is_defined_reason_code(static_cast<std::uint8_t>(v))) {
            ++defined;
            EXPECT_TRUE(names.insert(to_string(code)).second) << v;
            EXPECT_EQ(is_error(code), v >= 0x80);
        } else {
            EXPECT_EQ(to_string(code), "unknown");
        }
    }
    EXPECT_EQ(defined, 43);
}

TEST(connect_return_code, maps_from_v5_reason_codes) {
    EXPECT_EQ(to_connect_return_code(reason_code::success), connect_return_code::accepted);
    EXPECT_EQ(to_connect_return_code(reason_code::unsupported_protocol_version),
              connect_return_code::unacceptable_protocol_version);
    EXPECT_EQ(to_connect_return_code(reason_code::client_identifier_not_valid),
              connect_return_code::identifier_rejected);
    EXPECT_EQ(to_connect_return_code(reason_code::server_unavailable),
              connect_return_code::server_unavailable);
    EXPECT_EQ(to_connect_return_code(reason_code::server_busy),
              connect_return_code::server_unavailable);
    EXPECT_EQ(to_connect_return_code(reason_code::bad_user_name_or_password),
              connect_return_code::bad_username_or_password);
    EXPECT_EQ(to_connect_return_code(reason_code::not_authorized),
              connect_return_code::not_authorized);
    EXPECT_EQ(to_connect_return_code(reason_code::banned), connect_return_code::not_authorized);
}

TEST(connect_return_code, round_trips_through_reason_codes) {
    for (int v = 0; v <= 5; ++v) {
        auto code = static_cast<connect_return_code>(v);
        EXPECT_EQ(to_connect_return_code(to_reason_code(code)), code);
        EXPECT_NE(to_string(code), "unknown");
    }
}

}  // namespace
}  // namespace starling::mqtt
