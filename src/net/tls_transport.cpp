#include "net/tls_transport.h"

#include <boost/asio/post.hpp>
#include <boost/asio/ssl/error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/write.hpp>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <utility>

namespace starling::net {

namespace asio = boost::asio;

tls_transport::tls_transport(std::shared_ptr<asio::ssl::context> context,
                             asio::ip::tcp::socket socket, std::string remote_address)
    : context_(std::move(context)),
      stream_(std::move(socket), *context_),
      remote_address_(std::move(remote_address)) {
    boost::system::error_code ec;
    stream_.lowest_layer().set_option(asio::ip::tcp::no_delay(true), ec);
}

tls_transport::~tls_transport() { close(); }

asio::any_io_executor tls_transport::get_executor() { return stream_.get_executor(); }

void tls_transport::async_read(read_handler handler) {
    stream_.async_read_some(
        asio::buffer(buffer_),
        [this, h = std::move(handler)](const boost::system::error_code& ec, std::size_t n) {
            if (ec == asio::ssl::error::stream_truncated) {
                // The peer closed TCP without close_notify: for MQTT that is an ordinary close.
                h(asio::error::eof, {});
                return;
            }
            if (ec) {
                h(ec, {});
                return;
            }
            h({}, std::span<const std::uint8_t>(buffer_.data(), n));
        });
}

void tls_transport::async_write(std::span<const asio::const_buffer> buffers,
                                write_handler handler) {
    asio::async_write(
        stream_, buffers,
        [h = std::move(handler)](const boost::system::error_code& ec, std::size_t n) { h(ec, n); });
}

void tls_transport::async_shutdown(shutdown_handler handler) {
    boost::system::error_code ec;
    stream_.lowest_layer().shutdown(asio::ip::tcp::socket::shutdown_send, ec);
    asio::post(stream_.get_executor(), [h = std::move(handler), ec] { h(ec); });
}

void tls_transport::close() {
    boost::system::error_code ignored;
    stream_.lowest_layer().close(ignored);
}

// ------------------------------------------------------------------------ handshaker

namespace {

// One handshake in flight: the transport being set up, its deadline and the continuation. Held
// by the completion handlers (shared), so it lives exactly as long as the handshake.
struct tls_handshake_op {
    std::unique_ptr<tls_transport> transport;
    asio::steady_timer timer;
    handshaker::done_handler done;
    client_auth_mode mode;
    bool timed_out = false;

    tls_handshake_op(std::unique_ptr<tls_transport> t, handshaker::done_handler d,
                     client_auth_mode m)
        : transport(std::move(t)), timer(transport->get_executor()), done(std::move(d)), mode(m) {}
};

}  // namespace

tls_handshaker::tls_handshaker(std::shared_ptr<tls_context_provider> contexts,
                               handshake_options options)
    : contexts_(std::move(contexts)), options_(std::move(options)) {}

void tls_handshaker::start(asio::ip::tcp::socket socket, std::string remote_address,
                           handshake_context context, done_handler done) {
    auto op = std::make_shared<tls_handshake_op>(
        std::make_unique<tls_transport>(contexts_->current(), std::move(socket),
                                        std::move(remote_address)),
        std::move(done), contexts_->options().client_auth);
    const std::string listener = contexts_->options().listener;
    auto on_failure = options_.on_failure;
    op->timer.expires_at(
        std::min(context.deadline, std::chrono::steady_clock::now() + options_.timeout));
    op->timer.async_wait([op](const boost::system::error_code& ec) {
        if (!ec && op->transport) {
            op->timed_out = true;
            op->transport->close();  // the handshake completes with operation_aborted
        }
    });
    op->transport->stream().async_handshake(
        asio::ssl::stream_base::server,
        [op, listener, on_failure](const boost::system::error_code& ec) {
            op->timer.cancel();
            auto transport = std::move(op->transport);
            if (ec) {
                const std::string reason = op->timed_out ? "handshake timeout" : ec.message();
                spdlog::debug("listener.{}: TLS handshake with {} failed: {}", listener,
                              transport->remote_address(), reason);
                if (on_failure) {
                    on_failure(op->timed_out ? "timeout" : "tls");
                }
                op->done(nullptr);
                return;
            }
            transport->set_peer(read_tls_peer(transport->stream().native_handle(), op->mode));
            op->done(std::move(transport));
        });
}

}  // namespace starling::net
