#include "mqtt/reason_code.h"

#include <string>

namespace starling::mqtt {

namespace {

class mqtt_error_category final : public std::error_category {
  public:
    const char* name() const noexcept override { return "mqtt"; }

    std::string message(int value) const override {
        if (value < 0 || value > 0xFF) {
            return "unknown";
        }
        return std::string(to_string(static_cast<reason_code>(value)));
    }
};

}  // namespace

std::string_view to_string(reason_code code) noexcept {
    switch (code) {
        case reason_code::success:
            return "success";
        case reason_code::granted_qos_1:
            return "granted_qos_1";
        case reason_code::granted_qos_2:
            return "granted_qos_2";
        case reason_code::disconnect_with_will_message:
            return "disconnect_with_will_message";
        case reason_code::no_matching_subscribers:
            return "no_matching_subscribers";
        case reason_code::no_subscription_existed:
            return "no_subscription_existed";
        case reason_code::continue_authentication:
            return "continue_authentication";
        case reason_code::re_authenticate:
            return "re_authenticate";
        case reason_code::unspecified_error:
            return "unspecified_error";
        case reason_code::malformed_packet:
            return "malformed_packet";
        case reason_code::protocol_error:
            return "protocol_error";
        case reason_code::implementation_specific_error:
            return "implementation_specific_error";
        case reason_code::unsupported_protocol_version:
            return "unsupported_protocol_version";
        case reason_code::client_identifier_not_valid:
            return "client_identifier_not_valid";
        case reason_code::bad_user_name_or_password:
            return "bad_user_name_or_password";
        case reason_code::not_authorized:
            return "not_authorized";
        case reason_code::server_unavailable:
            return "server_unavailable";
        case reason_code::server_busy:
            return "server_busy";
        case reason_code::banned:
            return "banned";
        case reason_code::server_shutting_down:
            return "server_shutting_down";
        case reason_code::bad_authentication_method:
            return "bad_authentication_method";
        case reason_code::keep_alive_timeout:
            return "keep_alive_timeout";
        case reason_code::session_taken_over:
            return "session_taken_over";
        case reason_code::topic_filter_invalid:
            return "topic_filter_invalid";
        case reason_code::topic_name_invalid:
            return "topic_name_invalid";
        case reason_code::packet_identifier_in_use:
            return "packet_identifier_in_use";
        case reason_code::packet_identifier_not_found:
            return "packet_identifier_not_found";
        case reason_code::receive_maximum_exceeded:
            return "receive_maximum_exceeded";
        case reason_code::topic_alias_invalid:
            return "topic_alias_invalid";
        case reason_code::packet_too_large:
            return "packet_too_large";
        case reason_code::message_rate_too_high:
            return "message_rate_too_high";
        case reason_code::quota_exceeded:
            return "quota_exceeded";
        case reason_code::administrative_action:
            return "administrative_action";
        case reason_code::payload_format_invalid:
            return "payload_format_invalid";
        case reason_code::retain_not_supported:
            return "retain_not_supported";
        case reason_code::qos_not_supported:
            return "qos_not_supported";
        case reason_code::use_another_server:
            return "use_another_server";
        case reason_code::server_moved:
            return "server_moved";
        case reason_code::shared_subscriptions_not_supported:
            return "shared_subscriptions_not_supported";
        case reason_code::connection_rate_exceeded:
            return "connection_rate_exceeded";
        case reason_code::maximum_connect_time:
            return "maximum_connect_time";
        case reason_code::subscription_identifiers_not_supported:
            return "subscription_identifiers_not_supported";
        case reason_code::wildcard_subscriptions_not_supported:
            return "wildcard_subscriptions_not_supported";
    }
    return "unknown";
}

bool is_defined_reason_code(std::uint8_t value) noexcept {
    return to_string(static_cast<reason_code>(value)) != "unknown";
}

const std::error_category& mqtt_category() noexcept {
    static const mqtt_error_category category;
    return category;
}

connect_return_code to_connect_return_code(reason_code code) noexcept {
    switch (code) {
        case reason_code::success:
            return connect_return_code::accepted;
        case reason_code::unsupported_protocol_version:
            return connect_return_code::unacceptable_protocol_version;
        case reason_code::client_identifier_not_valid:
            return connect_return_code::identifier_rejected;
        case reason_code::bad_user_name_or_password:
        case reason_code::bad_authentication_method:
            return connect_return_code::bad_username_or_password;
        case reason_code::not_authorized:
        case reason_code::banned:
            return connect_return_code::not_authorized;
        default:
            return connect_return_code::server_unavailable;
    }
}

reason_code to_reason_code(connect_return_code code) noexcept {
    switch (code) {
        case connect_return_code::accepted:
            return reason_code::success;
        case connect_return_code::unacceptable_protocol_version:
            return reason_code::unsupported_protocol_version;
        case connect_return_code::identifier_rejected:
            return reason_code::client_identifier_not_valid;
        case connect_return_code::server_unavailable:
            return reason_code::server_unavailable;
        case connect_return_code::bad_username_or_password:
            return reason_code::bad_user_name_or_password;
        case connect_return_code::not_authorized:
            return reason_code::not_authorized;
    }
    return reason_code::unspecified_error;
}

std::string_view to_string(connect_return_code code) noexcept {
    switch (code) {
        case connect_return_code::accepted:
            return "accepted";
        case connect_return_code::unacceptable_protocol_version:
            return "unacceptable_protocol_version";
        case connect_return_code::identifier_rejected:
            return "identifier_rejected";
        case connect_return_code::server_unavailable:
            return "server_unavailable";
        case connect_return_code::bad_username_or_password:
            return "bad_username_or_password";
        case connect_return_code::not_authorized:
            return "not_authorized";
    }
    return "unknown";
}

}  // namespace starling::mqtt
