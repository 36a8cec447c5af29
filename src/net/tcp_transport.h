#pragma once

// tcp_transport: transport over a plain TCP socket.

#include "net/transport.h"

#include <boost/asio/ip/tcp.hpp>

#include <string>

namespace starling::net {

// Reads without a per-connection buffer: it waits for readability, then reads into a buffer
// owned by the I/O thread (64 KiB) and hands the bytes to the handler synchronously. An idle
// connection therefore holds no read buffer at all, which matters at 100k connections; the
// cost is one extra epoll_ctl per read, which Asio's own async_read_some avoids. When a read
// fills the whole buffer more data is likely queued, so the next read is tried at once.
//
// Lifecycle and concurrency: see transport. The socket's executor must be a strand (the
// listener accepts onto make_strand()); construction sets TCP_NODELAY and non-blocking mode.
class tcp_transport final : public transport {
  public:
    explicit tcp_transport(boost::asio::ip::tcp::socket socket);
    // With the peer's address given (e.g. from a PROXY protocol header) instead of the socket's.
    tcp_transport(boost::asio::ip::tcp::socket socket, std::string remote_address);
    ~tcp_transport() override;

    boost::asio::any_io_executor get_executor() override;
    void async_read(read_handler handler) override;
    void async_write(std::span<const boost::asio::const_buffer> buffers,
                     write_handler handler) override;
    void async_shutdown(shutdown_handler handler) override;
    void close() override;
    const std::string& remote_address() const override { return remote_address_; }

    // Formats an endpoint as remote_address() does.
    static std::string format(const boost::asio::ip::tcp::endpoint& endpoint);

  private:
    void read_now(read_handler handler);

    boost::asio::ip::tcp::socket socket_;
    std::string remote_address_;
    bool more_likely_ = false;  // the last read filled the buffer
};

}  // namespace starling::net
