#pragma once

// WebSocket transports (MQTT over WebSocket, MQTT spec §6) for the ws and wss listeners, built
// on Beast. ws_handshaker runs, within one deadline: the TLS handshake (wss only), the HTTP
// upgrade request, the path and subprotocol checks, and the WebSocket accept. The transport it
// hands out carries MQTT bytes in binary messages.

#include "net/handshake.h"
#include "net/tls_context.h"

#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace starling::net {

struct ws_options {
    std::string listener = "ws";  // "ws", "wss": for logs
    std::string path = "/mqtt";   // other request targets get 404
    // Subprotocols we speak, e.g. {"mqttv3.1", "mqtt"}. The upgrade echoes the first protocol
    // the *client* offers that is in this list; a request offering none of them is refused with
    // 400 [MQTT-6.0.0-3], [MQTT-6.0.0-4].
    std::vector<std::string> sub_protocols{"mqttv3.1", "mqtt"};
    // Largest WebSocket message accepted (listener.<ws|wss>.netty.max_payload_size); it also
    // bounds the per-connection read buffer.
    std::size_t max_message_size = 65536;
    handshake_options handshake;
};

// Picks the subprotocol to echo from a Sec-WebSocket-Protocol header value ("mqtt, mqttv3.1"):
// the first offered token that is configured; "" when none is.
std::string choose_sub_protocol(std::string_view offered,
                                const std::vector<std::string>& configured);

// How the handshake judges an upgrade request: accepted (101, with the subprotocol to echo) or
// refused with the HTTP status it answers (400: not an upgrade, no MQTT subprotocol; 404: wrong
// path) and why.
struct upgrade_verdict {
    bool accepted = false;
    unsigned status = 400;
    std::string protocol;  // accepted: the subprotocol echoed
    std::string why;       // refused: the reason (logged, and the refusal's body)
};

// Parses `request_head` (an HTTP/1.x request head, as the client sends it) with the handshake's
// own parser and limits, and judges it as the handshake does. nullopt when the bytes are not a
// complete, well-formed head (the handshake reads on, or fails with reason "upgrade"). Pure: no
// I/O. The WebSocket upgrade's fuzz target (tests/fuzz/ws_upgrade) drives it.
std::optional<upgrade_verdict> judge_upgrade_request(std::string_view request_head,
                                                     const ws_options& options);

// Lifecycle and concurrency: see handshaker. `contexts` is null for plain ws.
class ws_handshaker final : public handshaker {
  public:
    ws_handshaker(ws_options options, std::shared_ptr<tls_context_provider> contexts = nullptr);

    void start(boost::asio::ip::tcp::socket socket, std::string remote_address,
               handshake_context context, done_handler done) override;

    struct shared;  // ws_transport.cpp: the options, shared with handshakes in flight

  private:
    std::shared_ptr<const shared> shared_;
};

}  // namespace starling::net
