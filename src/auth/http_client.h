#pragma once

// A small asynchronous HTTP/1.1 client (Boost.Beast) for one endpoint, used by the HTTP auth
// provider and the JWKS cache. It keeps a keep-alive connection pool so an auth request does
// not pay a TCP (and TLS) handshake each time.
//
// Lifecycle: construct from a parsed URL and an executor, call request() any number of times,
// stop() (also run by the destructor). Internals are shared with the in-flight requests, so the
// client may be destroyed before they complete; each request still ends (by its deadline at the
// latest) and calls its callback.
//
// Ownership: the client owns its connections; a request borrows one for one exchange and gives
// it back when the response allows keep-alive.
//
// Concurrency: request() and stop() are thread-safe. Pool state and every exchange run on one
// strand of the executor; callbacks are invoked on that strand and must not block.

#include "base/result.h"

#include <boost/asio/any_io_executor.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace starling::auth {

// An http:// or https:// URL split into what a request needs.
struct url {
    bool tls = false;
    std::string host;
    std::uint16_t port = 0;
    std::string target = "/";  // path and query

    // Accepts "http://host[:port][/path]" and "https://...", IPv6 hosts in brackets. Errors
    // name the reason ("unsupported scheme", "missing host", "bad port").
    static result<url> parse(std::string_view text);
};

using http_headers = std::vector<std::pair<std::string, std::string>>;

// A strand over `executor`, as an any_io_executor. When the executor is an io_context's, the
// strand is built on that type: it then fits any_io_executor's inline storage, whereas a
// strand<any_io_executor> is heap-held and reference-counted with an atomic fence that
// ThreadSanitizer cannot model (false reports on every copy destroyed across threads).
boost::asio::any_io_executor make_serial_executor(const boost::asio::any_io_executor& executor);

struct http_client_options {
    std::size_t max_connections = 16;             // open connections (idle + busy) at most
    std::size_t max_response_bytes = 256 * 1024;  // header + body; larger → error
    bool verify_tls_peer = true;                  // https: verify chain and host name
    std::string ca_file;                          // https: trust store (empty: system)
    std::chrono::seconds idle_timeout{60};        // idle pooled connections closed after
};

struct http_response {
    unsigned status = 0;
    std::string body;
};

// Why an exchange failed without an HTTP status. Other failures — a refused, reset or
// unreachable connection, a name that does not resolve, a malformed response — come as the
// underlying system or Beast error, whose message names the cause ("Connection refused").
enum class http_client_errc {
    timeout = 1,  // the deadline passed (queueing, connecting, handshake, write or read)
    stopped,      // stop() was called
    too_large,    // the response exceeded max_response_bytes
    transport,    // the TLS server name could not be set
    tls,          // TLS handshake failed (certificate not trusted, host name mismatch, ...)
};
const std::error_category& http_client_category();
std::error_code make_error_code(http_client_errc e);

class http_client {
  public:
    http_client(url endpoint, boost::asio::any_io_executor executor,
                http_client_options options = {});
    ~http_client();

    http_client(const http_client&) = delete;
    http_client& operator=(const http_client&) = delete;

    using completion = std::function<void(result<http_response>)>;

    // Sends one request to the endpoint's target and calls `done` exactly once. `timeout`
    // bounds the whole exchange, including the wait for a free connection. A pooled connection
    // that the server has closed meanwhile is retried once on a fresh one.
    void request(std::string method, http_headers headers, std::string body,
                 std::chrono::milliseconds timeout, completion done);

    // Closes idle connections and fails queued requests with `stopped`; exchanges in progress
    // end by their deadline or when their connection fails.
    void stop();

    // Connections opened since construction (tests: keep-alive reuse).
    std::size_t connections_opened() const;

    struct state;

  private:
    std::shared_ptr<state> state_;
};

}  // namespace starling::auth

namespace std {
template <>
struct is_error_code_enum<starling::auth::http_client_errc> : true_type {};
}  // namespace std
