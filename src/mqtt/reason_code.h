#pragma once

// MQTT v5 reason codes, which double as std::error_code values (category "mqtt"), and the
// MQTT 3.x CONNACK return codes with the mapping between the two.
//
// Codes that share a value in the specification (0x00 is Success, Normal disconnection and
// Granted QoS 0) have one primary enumerator, `success`; `normal_disconnection` and
// `granted_qos_0` are aliases of it. A reason_code of 0 converts to an error_code that is
// "no error", as std::error_code requires.

#include <cstdint>
#include <string_view>
#include <system_error>
#include <type_traits>

namespace starling::mqtt {

enum class reason_code : std::uint8_t {
    success = 0x00,
    normal_disconnection = 0x00,  // alias: DISCONNECT
    granted_qos_0 = 0x00,         // alias: SUBACK
    granted_qos_1 = 0x01,
    granted_qos_2 = 0x02,
    disconnect_with_will_message = 0x04,
    no_matching_subscribers = 0x10,
    no_subscription_existed = 0x11,
    continue_authentication = 0x18,
    re_authenticate = 0x19,
    unspecified_error = 0x80,
    malformed_packet = 0x81,
    protocol_error = 0x82,
    implementation_specific_error = 0x83,
    unsupported_protocol_version = 0x84,
    client_identifier_not_valid = 0x85,
    bad_user_name_or_password = 0x86,
    not_authorized = 0x87,
    server_unavailable = 0x88,
    server_busy = 0x89,
    banned = 0x8A,
    server_shutting_down = 0x8B,
    bad_authentication_method = 0x8C,
    keep_alive_timeout = 0x8D,
    session_taken_over = 0x8E,
    topic_filter_invalid = 0x8F,
    topic_name_invalid = 0x90,
    packet_identifier_in_use = 0x91,
    packet_identifier_not_found = 0x92,
    receive_maximum_exceeded = 0x93,
    topic_alias_invalid = 0x94,
    packet_too_large = 0x95,
    message_rate_too_high = 0x96,
    quota_exceeded = 0x97,
    administrative_action = 0x98,
    payload_format_invalid = 0x99,
    retain_not_supported = 0x9A,
    qos_not_supported = 0x9B,
    use_another_server = 0x9C,
    server_moved = 0x9D,
    shared_subscriptions_not_supported = 0x9E,
    connection_rate_exceeded = 0x9F,
    maximum_connect_time = 0xA0,
    subscription_identifiers_not_supported = 0xA1,
    wildcard_subscriptions_not_supported = 0xA2,
};

// True for codes 0x80 and above: the specification's failure codes.
constexpr bool is_error(reason_code code) noexcept {
    return static_cast<std::uint8_t>(code) >= 0x80;
}

// True when `value` is one of the codes the v5 specification defines.
bool is_defined_reason_code(std::uint8_t value) noexcept;

// The specification's name in snake_case ("malformed_packet"); "unknown" for undefined values.
std::string_view to_string(reason_code code) noexcept;

// The "mqtt" error category. message() gives the same text as to_string().
const std::error_category& mqtt_category() noexcept;

inline std::error_code make_error_code(reason_code code) noexcept {
    return {static_cast<int>(code), mqtt_category()};
}

// MQTT 3.1 / 3.1.1 CONNACK return codes.
enum class connect_return_code : std::uint8_t {
    accepted = 0,
    unacceptable_protocol_version = 1,
    identifier_rejected = 2,
    server_unavailable = 3,
    bad_username_or_password = 4,
    not_authorized = 5,
};

// Maps a v5 CONNACK reason code onto the closest v3 return code, as a broker must when it
// rejects a 3.x client for a reason it tracks in v5 terms. Codes with no v3 counterpart map to
// server_unavailable (the only generic v3 refusal).
connect_return_code to_connect_return_code(reason_code code) noexcept;

// The inverse mapping used when decoding a v3 CONNACK.
reason_code to_reason_code(connect_return_code code) noexcept;

std::string_view to_string(connect_return_code code) noexcept;

}  // namespace starling::mqtt

template <>
struct std::is_error_code_enum<starling::mqtt::reason_code> : std::true_type {};
