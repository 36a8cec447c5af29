#pragma once

// tcp_listener: accepts TCP connections on a shared io_pool and hands each one, wrapped in a
// connection over a tcp_transport (or whatever transport the listener's handshaker produced:
// TLS, WebSocket), to the owner. Each accepted socket first passes admission control (the
// listener's cap, the descriptor reserve, per-address limits; refused sockets are closed at
// once, counted, and logged at most once per 10 s), gets TCP keep-alive, and carries the
// connect deadline from accept through its handshake into the connection. No Asio in this
// header.

#include "base/result.h"
#include "net/admission.h"
#include "net/connection.h"

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

namespace starling::net {

class io_pool;
class handshaker;

// TCP keep-alive on accepted sockets (SO_KEEPALIVE, TCP_KEEPIDLE/KEEPINTVL/KEEPCNT): a peer
// that vanished without a FIN (power loss, NAT state dropped) is found and its descriptor freed
// after idle + interval × count even when MQTT keep-alive is 0.
struct keepalive_options {
    bool enabled = true;
    std::chrono::seconds idle{60};
    std::chrono::seconds interval{10};
    int count = 6;
};

struct listener_options {
    std::string name = "tcp";              // in log lines
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

    // --- admission (admission.h)
    // The node's admission control, shared by its listeners; null = a private one without
    // per-address limits or descriptor reserve.
    std::shared_ptr<admission_control> admission;
    // Sockets this listener holds at most (handshaking or connected); 0 = unlimited.
    std::size_t max_connections = 0;
    // The PROXY protocol is on: the socket's peer is the load balancer, so per-address limits
    // wait for the header (handshake_context::admit_address), which `handshake` must call.
    bool address_from_proxy_header = false;
    // From accept to a complete CONNECT (connection::connect_completed): the handshake gets the
    // same deadline (handshake_context::deadline), the connection is aborted with
    // errc::connect_timeout when it passes. 0 = no deadline.
    std::chrono::milliseconds connect_timeout{10000};
    keepalive_options keepalive;
    // Called on an I/O thread for each refused socket (closed at once, nothing sent), and when a
    // connection's deadline closes it after its handshake (a handshake that runs out of time
    // reports through handshake_options::on_failure("timeout") instead). For metrics.
    std::function<void(refusal)> on_refused;
    std::function<void()> on_connect_timeout;
};

struct listener_stats {
    std::atomic<std::uint64_t> accepted{0};
    // accept() failures other than shutdown (EMFILE, ENOBUFS...); each backs off 100 ms.
    std::atomic<std::uint64_t> accept_errors{0};
    // Sockets closed at accept (or after the PROXY header) by admission control.
    std::atomic<std::uint64_t> refused{0};
    // Connections closed by the connect deadline after their handshake.
    std::atomic<std::uint64_t> connect_timeouts{0};
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
    // Sockets held now: accepted and admitted, handshaking or connected, not yet closed.
    std::size_t current_connections() const;

  private:
    struct state;  // shared with in-flight accept operations, which may outlive *this
    std::shared_ptr<state> state_;
};

}  // namespace starling::net
