#pragma once

// tls_transport: transport over TLS (asio::ssl::stream over a TCP socket), and tls_handshaker,
// which runs the server handshake with a timeout before handing the transport out.

#include "net/handshake.h"
#include "net/tls_context.h"
#include "net/transport.h"

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/stream.hpp>

#include <array>
#include <memory>
#include <string>

namespace starling::net {

// Reads through a small per-connection buffer: unlike tcp_transport it cannot borrow a
// thread-wide one, because a TLS read must stay posted on the stream (the engine may hold
// decrypted bytes the socket's readiness would not reveal). 4 KiB is small next to the TLS
// engine's own record buffers.
//
// Shutdown sends TCP FIN without a TLS close_notify: asio's ssl shutdown waits for the peer's
// close_notify on the same stream the pending read uses, and MQTT frames its own packets, so a
// truncation attack gains nothing.
//
// Lifecycle and concurrency: see transport. Holds its ssl::context (shared) so a certificate
// reload never pulls it from under a live connection.
class tls_transport final : public transport {
  public:
    using stream_type = boost::asio::ssl::stream<boost::asio::ip::tcp::socket>;

    tls_transport(std::shared_ptr<boost::asio::ssl::context> context,
                  boost::asio::ip::tcp::socket socket, std::string remote_address);
    ~tls_transport() override;

    boost::asio::any_io_executor get_executor() override;
    void async_read(read_handler handler) override;
    void async_write(std::span<const boost::asio::const_buffer> buffers,
                     write_handler handler) override;
    void async_shutdown(shutdown_handler handler) override;
    void close() override;
    const std::string& remote_address() const override { return remote_address_; }
    const tls_peer_info* tls_peer() const override { return &peer_; }

    stream_type& stream() { return stream_; }
    void set_peer(tls_peer_info peer) { peer_ = std::move(peer); }

  private:
    std::shared_ptr<boost::asio::ssl::context> context_;
    stream_type stream_;
    std::string remote_address_;
    tls_peer_info peer_;
    std::array<std::uint8_t, 4096> buffer_{};
};

// Runs the TLS server handshake with the provider's current context.
class tls_handshaker final : public handshaker {
  public:
    tls_handshaker(std::shared_ptr<tls_context_provider> contexts, handshake_options options);

    void start(boost::asio::ip::tcp::socket socket, std::string remote_address,
               handshake_context context, done_handler done) override;

  private:
    std::shared_ptr<tls_context_provider> contexts_;
    handshake_options options_;
};

}  // namespace starling::net
