#include "net/tcp_transport.h"

#include <boost/asio/error.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/write.hpp>

#include <memory>
#include <utility>

namespace starling::net {
namespace {

constexpr std::size_t read_buffer_size = 64 * 1024;

// One read buffer per I/O thread, allocated on first use (thread_local storage itself stays
// small, so threads that never read pay nothing).
std::span<std::uint8_t> thread_read_buffer() {
    thread_local std::unique_ptr<std::uint8_t[]> buffer(new std::uint8_t[read_buffer_size]);
    return {buffer.get(), read_buffer_size};
}

}  // namespace

tcp_transport::tcp_transport(boost::asio::ip::tcp::socket socket) : socket_(std::move(socket)) {
    boost::system::error_code ec;
    // MQTT packets are small and latency-bound; the write queue does the batching Nagle would.
    socket_.set_option(boost::asio::ip::tcp::no_delay(true), ec);
    // read_some() must report would_block instead of blocking an I/O thread.
    socket_.non_blocking(true, ec);
    const auto endpoint = socket_.remote_endpoint(ec);
    remote_address_ = ec ? std::string("unknown") : format(endpoint);
}

tcp_transport::tcp_transport(boost::asio::ip::tcp::socket socket, std::string remote_address)
    : tcp_transport(std::move(socket)) {
    remote_address_ = std::move(remote_address);
}

tcp_transport::~tcp_transport() {
    boost::system::error_code ignored;
    socket_.close(ignored);
}

boost::asio::any_io_executor tcp_transport::get_executor() { return socket_.get_executor(); }

void tcp_transport::async_read(read_handler handler) {
    if (more_likely_) {
        more_likely_ = false;
        // Post rather than read inline: the caller is usually inside the previous completion.
        boost::asio::post(socket_.get_executor(),
                          [this, h = std::move(handler)]() mutable { read_now(std::move(h)); });
        return;
    }
    // Asio re-arms the descriptor (EPOLL_CTL_MOD) when a wait is queued, so data already
    // sitting in the socket completes the wait at once even with edge-triggered epoll.
    socket_.async_wait(boost::asio::ip::tcp::socket::wait_read,
                       [this, h = std::move(handler)](const boost::system::error_code& ec) mutable {
                           if (ec) {
                               h(ec, {});
                               return;
                           }
                           read_now(std::move(h));
                       });
}

void tcp_transport::read_now(read_handler handler) {
    const auto buffer = thread_read_buffer();
    boost::system::error_code ec;
    const std::size_t n = socket_.read_some(boost::asio::buffer(buffer.data(), buffer.size()), ec);
    if (ec == boost::asio::error::would_block || ec == boost::asio::error::try_again) {
        async_read(std::move(handler));  // spurious readiness (or a speculative try): wait
        return;
    }
    if (ec) {
        handler(ec, {});
        return;
    }
    more_likely_ = n == buffer.size();
    handler({}, buffer.first(n));
}

void tcp_transport::async_write(std::span<const boost::asio::const_buffer> buffers,
                                write_handler handler) {
    boost::asio::async_write(
        socket_, buffers,
        [h = std::move(handler)](const boost::system::error_code& ec, std::size_t n) { h(ec, n); });
}

void tcp_transport::async_shutdown(shutdown_handler handler) {
    boost::system::error_code ec;
    socket_.shutdown(boost::asio::ip::tcp::socket::shutdown_send, ec);
    boost::asio::post(socket_.get_executor(), [h = std::move(handler), ec] { h(ec); });
}

void tcp_transport::close() {
    boost::system::error_code ignored;
    socket_.close(ignored);
}

std::string tcp_transport::format(const boost::asio::ip::tcp::endpoint& endpoint) {
    auto address = endpoint.address();
    if (address.is_v6() && address.to_v6().is_v4_mapped()) {
        address = boost::asio::ip::make_address_v4(boost::asio::ip::v4_mapped, address.to_v6());
    }
    if (address.is_v6()) {
        return "[" + address.to_string() + "]:" + std::to_string(endpoint.port());
    }
    return address.to_string() + ":" + std::to_string(endpoint.port());
}

}  // namespace starling::net
