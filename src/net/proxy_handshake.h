#pragma once

// proxy_handshaker: the PROXY protocol step of a listener's accept path,
//
//     accept → proxy_handshaker → [inner handshaker: TLS, WebSocket] → connection
//
// It reads the PROXY v1/v2 header from the raw socket, then runs the listener's own handshaker
// (or, for plain TCP, builds a tcp_transport) with the header's source address as the peer's.
//
// This header includes Asio: it is for net internals and the composition root.

#include "net/handshake.h"

#include <boost/asio/ip/tcp.hpp>

#include <memory>
#include <string>

namespace starling::net {

class log_throttle;

// Reads byte-exact, never past the header: the bytes after it are the client's first MQTT, TLS
// or HTTP bytes and stay in the kernel's socket buffer for the next layer, so no transport
// needs a "bytes already read" buffer. The cost is a few reads per header: 8 bytes first (the
// shortest header, "PROXY UNKNOWN\r\n", has 15), then for v2 the rest of the 16-byte fixed
// part and exactly the declared length; for v1 one byte at a time up to the CRLF (at most 99
// more reads, each served from the socket buffer by Asio's speculative read: no wait).
//
// A missing or broken header, or none by the deadline (the earlier of the listener's connect
// deadline and `handshake_options::timeout`), closes the socket with a log line and
// `on_failure("proxy")` (or "timeout"). A header without a source (v1 UNKNOWN, v2 LOCAL,
// UNSPEC fallbacks) keeps the socket's address. The client's address then goes through the
// listener's per-address admission (handshake_context::admit_address); a refused one is closed
// without an answer (the listener counts and logs it). The inner handshake gets the same
// deadline: the header does not restart the clock.
//
// Lifecycle: owned (shared) by the listener; each header read in flight holds what it needs
// (the inner handshaker included). Concurrency: start() on any I/O thread, concurrently for
// different sockets; each read runs on its socket's strand.
class proxy_handshaker final : public handshaker {
  public:
    // `inner` may be null (plain TCP). `listener` names the listener in log lines.
    proxy_handshaker(std::string listener, std::shared_ptr<handshaker> inner,
                     handshake_options options);

    void start(boost::asio::ip::tcp::socket socket, std::string remote_address,
               handshake_context context, done_handler done) override;

  private:
    std::string listener_;
    std::shared_ptr<handshaker> inner_;
    handshake_options options_;
    std::shared_ptr<log_throttle> log_limit_;  // failure lines: at most one per 10 s
};

}  // namespace starling::net
