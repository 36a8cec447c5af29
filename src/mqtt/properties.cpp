#include "mqtt/properties.h"

namespace starling::mqtt {

bool properties::empty() const noexcept {
    // Spelled out rather than `*this == properties{}` so the check costs no construction.
    return !payload_format_indicator && !message_expiry_interval && !content_type &&
           !response_topic && !correlation_data && subscription_identifiers.empty() &&
           !session_expiry_interval && !assigned_client_identifier && !server_keep_alive &&
           !authentication_method && !authentication_data && !request_problem_information &&
           !will_delay_interval && !request_response_information && !response_information &&
           !server_reference && !reason_string && !receive_maximum && !topic_alias_maximum &&
           !topic_alias && !maximum_qos && !retain_available && user_properties.empty() &&
           !maximum_packet_size && !wildcard_subscription_available &&
           !subscription_identifier_available && !shared_subscription_available;
}

}  // namespace starling::mqtt
