#pragma once

// tcp_listener: accepts TCP connections on a shared io_pool and hands each one, wrapped in a
// connection over a tcp_transport (or whatever transport the listener's handshaker produced:
// TLS, WebSocket), to the owner. No Asio in this header.

#include "base/result.h"
#include "net/connection.h"

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

namespace starling::net {

class io_pool;
class handshaker;

struct listener_options {
    std::string bind_address = "0.0.0.0";  // "::" listens on IPv6 and IPv4
    std::uint16_t port = 1883;             // 0: the OS picks one, see local_port()
    // SO_RCVBUF in bytes, set on the listening socket so accepted sockets inherit it and the
    // TCP window scale is negotiated for it (listener.so_receive_buffer). 0 = OS default.
    std::size_t so_receive_buffer = 0;
    int backlog = 1024;
    connection_options connection;
    // Runs on each accepted socket before the connection is created (TLS, WebSocket upgrade);
    // null = plain TCP. Connections that fail it are dropped and never reach the handler.
    std::shared_ptr<handshaker> handshake;
};

struct listener_stats {
    std::atomic<std::uint64_t> accepted{0};
    // accept() failures other than shutdown (EMFILE, ENOBUFS...); each backs off 100 ms.
    std::atomic<std::uint64_t> accept_errors{0};
};

// Lifecycle: construct → start(handler) → stop() (or destruction). Not restartable.
// stop() closes the listening socket and waits for accept handlers already running (unless
// called from inside one); connections already handed out are untouched: their owners close
// them. The io_pool must outlive the listener.
//
// The accept handler runs on an I/O thread, once per connection, and must not block. It gets
// an unstarted connection: call start(handler) to begin reading, or abort() to refuse it.
//
// Concurrency: start()/stop() from any thread (not concurrently with each other); accessors
// are thread-safe.
class tcp_listener {
  public:
    using accept_handler = std::function<void(std::shared_ptr<connection>)>;

    tcp_listener(io_pool& pool, listener_options options);
    ~tcp_listener();

    tcp_listener(const tcp_listener&) = delete;
    tcp_listener& operator=(const tcp_listener&) = delete;

    // Binds, listens and starts accepting. Fails (no exception) on a bad address, a port in use
    // or any other socket error.
    status start(accept_handler handler);
    void stop();

    // The bound port (useful with port 0); 0 before a successful start().
    std::uint16_t local_port() const;
    const listener_stats& stats() const;

  private:
    struct state;  // shared with in-flight accept operations, which may outlive *this
    std::shared_ptr<state> state_;
};

}  // namespace starling::net
