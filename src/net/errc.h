#pragma once

// Error codes of the net module (docs/style.md rule 5: each module owns an errc enum with a
// category). Socket-level failures keep their system codes (std::errc::connection_reset, ...);
// these are the outcomes the module itself decides.

#include <system_error>

namespace starling::net {

enum class errc {
    // The write queue passed its hard limit; the connection was aborted to protect memory.
    write_queue_overflow = 1,
    // abort() was called.
    aborted,
    // close() could not flush the write queue within connection_options::close_timeout.
    close_timeout,
    // The peer closed its side (end of stream).
    peer_closed,
    // The bind address is not an IP address.
    invalid_address,
    // A WebSocket client sent a text frame; MQTT over WebSocket is binary only [MQTT-6.0.0-1].
    websocket_text_frame,
    // No complete CONNECT within the listener's connect timeout (measured from accept).
    connect_timeout,
};

const std::error_category& net_category();

std::error_code make_error_code(errc e);

}  // namespace starling::net

template <>
struct std::is_error_code_enum<starling::net::errc> : std::true_type {};
