#pragma once

// A small HTTP/1.1 server (Boost.Beast) for the actuator endpoints and the REST API.
//
// Each connection reads one request at a time (bounded header and body sizes, an idle
// timeout), answers it through the router, and keeps the connection open when the client
// allows it. A malformed request gets 400, an oversized body 413, oversized headers 431,
// and the connection is closed after any of them.
//
// Connection slots: `max_connections` ordinary ones, at most `max_connections_per_address`
// per client host (a connection over it is closed at accept), and `reserved_health_connections`
// more that only serve the health endpoint, one request each — so Kubernetes probes still get
// an answer when a client has taken every ordinary slot. (The daemon can also serve /api/** on
// a port of its own, server.api.port, so management traffic never competes with them.)
//
// Lifecycle: construct, start() once, stop() (also run by the destructor). start() binds and
// listens synchronously, so a port clash is reported at start-up; accepting and serving run
// on the io_context's threads. stop() closes the listening socket and every connection and
// returns at once; the asynchronous work ends as the aborted operations complete, after which
// the io_context's run() returns once it has no other work. Internals are shared with the
// in-flight handlers, so the server object may be destroyed before they complete.
//
// Concurrency: the io_context may run on any number of threads: the listener and each
// connection have their own strand. start(), stop(), local_port() and connection_count()
// are thread-safe.

#include "base/result.h"
#include "http/router.h"

#include <boost/asio/io_context.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

namespace starling::http {

struct server_options {
    std::string name = "http";  // in log lines and the `server` label of refusals
    std::size_t max_header_bytes = 16 * 1024;
    std::size_t max_body_bytes = 1024 * 1024;
    std::chrono::seconds idle_timeout{30};  // a connection silent this long is closed
    std::size_t max_connections = 256;      // further connections get a reserved slot or none
    // Connections from one address (its host) at once, reserved slots included; further ones
    // are closed at accept. 0 = unlimited.
    std::size_t max_connections_per_address = 32;
    // Slots beyond max_connections that serve only `health_path` (and paths below it): a
    // request for anything else gets 503, and each slot answers one request and closes. They
    // keep liveness and readiness probes answering while every ordinary slot is taken. Their
    // first request must arrive within `reserved_idle_timeout`.
    std::size_t reserved_health_connections = 16;
    std::string health_path = "/actuator/health";
    std::chrono::seconds reserved_idle_timeout{5};
    // Called on an I/O thread for each refused connection: "max_connections",
    // "address_connections", or "reserved_slot" (a non-health request in a reserved slot).
    std::function<void(std::string_view reason)> on_refused;
};

class server {
  public:
    server(boost::asio::io_context& io, router routes, server_options options = {});
    ~server();

    server(const server&) = delete;
    server& operator=(const server&) = delete;

    // Binds and listens; port 0 picks a free port (see local_port()). address is an IPv4 or
    // IPv6 literal.
    status start(std::string_view address, std::uint16_t port);

    // The bound port once start() succeeded, else 0.
    std::uint16_t local_port() const;

    void stop();

    // Connections currently open.
    std::size_t connection_count() const;

    // Serves `routes` from now on (requests already dispatched finish on the old table). The
    // daemon starts the server with the health endpoints alone, so probes get answers while it
    // waits for its stores and loads its state, then hands over the full table. Thread-safe.
    void replace_routes(router routes);

    struct state;

  private:
    std::shared_ptr<state> state_;
};

}  // namespace starling::http
