#pragma once

// handshaker: what a listener runs on each accepted socket before a connection exists — the TLS
// handshake, the WebSocket upgrade, or both. The listener's accept path is
//
//     accept → admission → [PROXY header] → handshaker → connection::create → handler
//
// so the step that reads the PROXY protocol header from the raw socket is a handshaker that
// wraps another one and passes it the header's source address as `remote_address`.
//
// This header includes Asio: it is for net internals and the composition root.

#include "net/transport.h"

#include <boost/asio/ip/tcp.hpp>

#include <chrono>
#include <functional>
#include <memory>
#include <string>

namespace starling::net {

struct handshake_options {
    // A client that has not completed this step within `timeout` of its start is disconnected,
    // so a peer that opens a socket and stays silent cannot hold a slot. The listener's connect
    // deadline (handshake_context::deadline, measured from accept) bounds every step together;
    // whichever comes first applies.
    std::chrono::milliseconds timeout{10000};
    // Called (on an I/O thread) once per failed handshake, with a short reason; for metrics.
    std::function<void(std::string_view reason)> on_failure;
};

// What the listener passes each handshake besides the socket.
struct handshake_context {
    // Accept time + the listener's connect timeout: a handshake not complete by then fails
    // with reason "timeout". The PROXY step hands the same deadline to the inner handshake.
    std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max();
    // Per-address admission (admission.h) for the client's real address: the PROXY step calls
    // it with the header's source address before the inner handshake; false = refused (already
    // counted and logged by the listener), and the step closes the socket without an answer.
    // Empty: nothing to check (the listener admitted the socket's own address at accept).
    std::function<bool(const std::string& remote_address)> admit_address;
};

// Lifecycle: owned (shared) by a listener; outlives nothing it starts, because every handshake
// in flight holds what it needs. Concurrency: start() is called on I/O threads, concurrently
// for different sockets; each handshake runs on its socket's strand.
class handshaker {
  public:
    // The ready transport, or nullptr when the handshake failed (already logged and counted).
    using done_handler = std::function<void(std::unique_ptr<transport>)>;

    virtual ~handshaker() = default;

    // `remote_address` is the peer as the transport will report it (from the socket, or from a
    // PROXY protocol header). `done` is called exactly once, on the socket's strand.
    virtual void start(boost::asio::ip::tcp::socket socket, std::string remote_address,
                       handshake_context context, done_handler done) = 0;
};

}  // namespace starling::net
