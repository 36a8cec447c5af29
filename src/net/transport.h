#pragma once

// transport: the byte stream under a connection (TCP now; TLS, WebSocket and secure WebSocket
// later). connection.cpp holds all the connection logic (read loop, pause/resume, write queue
// with watermarks, graceful close) once, written against this interface; each transport only
// maps four operations onto its stream. A virtual call per I/O operation costs nothing next to
// the system call behind it, and keeps that logic out of templates (one compiled copy, Asio out
// of the public connection.h).
//
// This header includes Asio: it is for transport implementations and net internals, not for
// users of connection.

#include "net/tls_peer_info.h"

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/buffer.hpp>
#include <boost/system/error_code.hpp>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <string>

namespace starling::net {

// Lifecycle: created by a listener (after any handshake), then owned by one connection.
// Concurrency: every member is called on get_executor(), which must be a strand (or otherwise
// serialize), and every completion handler runs there. At most one async_read, one async_write
// and one async_shutdown are outstanding at a time.
class transport {
  public:
    // The bytes are valid only during the call: a transport may read into a buffer shared by
    // every connection of the thread (see tcp_transport), so idle connections cost no buffer.
    using read_handler =
        std::function<void(const boost::system::error_code&, std::span<const std::uint8_t>)>;
    using write_handler = std::function<void(const boost::system::error_code&, std::size_t)>;
    using shutdown_handler = std::function<void(const boost::system::error_code&)>;

    virtual ~transport() = default;

    // The strand every operation and completion of this transport runs on.
    virtual boost::asio::any_io_executor get_executor() = 0;

    // Delivers the next chunk of received bytes (never empty) or an error; end of stream is
    // boost::asio::error::eof. Never completes inline.
    virtual void async_read(read_handler handler) = 0;

    // Writes all of `buffers` (gathered) or fails. The buffers must stay valid until the
    // handler runs.
    virtual void async_write(std::span<const boost::asio::const_buffer> buffers,
                             write_handler handler) = 0;

    // Ends our sending direction gracefully (TCP FIN; TLS close_notify; WebSocket close frame)
    // after everything written so far. Reading stays possible.
    virtual void async_shutdown(shutdown_handler handler) = 0;

    // Closes now; outstanding operations complete with operation_aborted.
    virtual void close() = 0;

    // "ip:port" of the peer, "[ipv6]:port" for IPv6, captured at construction.
    virtual const std::string& remote_address() const = 0;

    // What the TLS handshake established about the peer; nullptr for transports without TLS.
    // Set before the transport is handed to a connection and immutable afterwards.
    virtual const tls_peer_info* tls_peer() const { return nullptr; }
};

}  // namespace starling::net
