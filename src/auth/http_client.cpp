#include "auth/http_client.h"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <spdlog/spdlog.h>

#include <atomic>
#include <charconv>
#include <deque>
#include <mutex>
#include <optional>

namespace starling::auth {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace bhttp = boost::beast::http;
using tcp = asio::ip::tcp;
using time_point = std::chrono::steady_clock::time_point;

namespace {

constexpr auto use_tuple = asio::as_tuple(asio::use_awaitable);

class http_client_category_impl final : public std::error_category {
  public:
    const char* name() const noexcept override { return "starling.auth.http_client"; }
    std::string message(int value) const override {
        switch (static_cast<http_client_errc>(value)) {
            case http_client_errc::timeout:
                return "timeout";
            case http_client_errc::stopped:
                return "client stopped";
            case http_client_errc::too_large:
                return "response too large";
            case http_client_errc::transport:
                return "transport error";
            case http_client_errc::tls:
                return "TLS handshake failed";
        }
        return "unknown http client error";
    }
};

}  // namespace

const std::error_category& http_client_category() {
    static const http_client_category_impl category;
    return category;
}

std::error_code make_error_code(http_client_errc e) {
    return {static_cast<int>(e), http_client_category()};
}

result<url> url::parse(std::string_view text) {
    url out;
    std::string_view rest;
    if (text.starts_with("http://")) {
        rest = text.substr(7);
        out.port = 80;
    } else if (text.starts_with("https://")) {
        rest = text.substr(8);
        out.tls = true;
        out.port = 443;
    } else {
        return std::make_error_code(std::errc::protocol_not_supported);
    }
    const auto slash = rest.find_first_of("/?");
    std::string_view authority = rest.substr(0, slash);
    if (slash != std::string_view::npos) {
        out.target = std::string(rest.substr(slash));
        if (out.target.front() == '?') {
            out.target.insert(0, "/");
        }
    }
    if (const auto at = authority.rfind('@'); at != std::string_view::npos) {
        // Credentials in the URL would end up in logs; they belong in headers.
        return std::make_error_code(std::errc::invalid_argument);
    }
    std::string_view port_text;
    if (authority.starts_with('[')) {
        const auto close = authority.find(']');
        if (close == std::string_view::npos) {
            return std::make_error_code(std::errc::invalid_argument);
        }
        out.host = std::string(authority.substr(1, close - 1));
        const auto after = authority.substr(close + 1);
        if (!after.empty()) {
            if (after.front() != ':') {
                return std::make_error_code(std::errc::invalid_argument);
            }
            port_text = after.substr(1);
        }
    } else {
        const auto colon = authority.rfind(':');
        out.host = std::string(authority.substr(0, colon));
        if (colon != std::string_view::npos) {
            port_text = authority.substr(colon + 1);
        }
    }
    if (out.host.empty()) {
        return std::make_error_code(std::errc::invalid_argument);
    }
    if (!port_text.empty()) {
        unsigned value = 0;
        const auto [end, ec] =
            std::from_chars(port_text.data(), port_text.data() + port_text.size(), value);
        if (ec != std::errc{} || end != port_text.data() + port_text.size() || value == 0 ||
            value > 65535) {
            return std::make_error_code(std::errc::invalid_argument);
        }
        out.port = static_cast<std::uint16_t>(value);
    }
    return out;
}

boost::asio::any_io_executor make_serial_executor(const boost::asio::any_io_executor& executor) {
    if (const auto* io = executor.target<asio::io_context::executor_type>()) {
        return asio::make_strand(*io);
    }
    return asio::make_strand(executor);
}

namespace {

// One pooled connection: a plain or a TLS stream over a Beast tcp_stream (whose expiry gives
// every operation the request's deadline).
struct connection {
    std::unique_ptr<beast::tcp_stream> plain;
    std::unique_ptr<beast::ssl_stream<beast::tcp_stream>> tls;
    beast::flat_buffer buffer;
    time_point idle_since{};

    beast::tcp_stream& lowest() { return tls ? beast::get_lowest_layer(*tls) : *plain; }
    void close() {
        beast::error_code ignored;
        lowest().socket().shutdown(tcp::socket::shutdown_both, ignored);
        lowest().socket().close(ignored);
    }
};

// A request waiting for a pool slot: woken (timer cancelled) with a connection handed over or
// the right to open one, or by its deadline.
struct waiter {
    explicit waiter(const asio::any_io_executor& strand) : timer(strand) {}
    asio::steady_timer timer;
    std::unique_ptr<connection> handed;
    bool may_open = false;
    bool stopped = false;
};

}  // namespace

struct http_client::state {
    state(url e, asio::any_io_executor executor, http_client_options o)
        : endpoint(std::move(e)),
          options(std::move(o)),
          strand(make_serial_executor(executor)),
          tls_context(asio::ssl::context::tls_client) {
        if (endpoint.tls) {
            beast::error_code ec;
            if (options.verify_tls_peer) {
                if (options.ca_file.empty()) {
                    tls_context.set_default_verify_paths(ec);
                } else {
                    tls_context.load_verify_file(options.ca_file, ec);
                }
                if (ec) {
                    spdlog::error("auth http client: cannot load trust store '{}': {}",
                                  options.ca_file, ec.message());
                }
                tls_context.set_verify_mode(asio::ssl::verify_peer);
            } else {
                tls_context.set_verify_mode(asio::ssl::verify_none);
            }
        }
    }

    url endpoint;
    http_client_options options;
    asio::any_io_executor strand;  // serial: every member below is touched only on it
    asio::ssl::context tls_context;

    // Strand-only state.
    std::deque<std::unique_ptr<connection>> idle;
    std::deque<std::shared_ptr<waiter>> waiters;
    std::size_t open = 0;  // idle + busy + being opened
    bool stopped = false;

    std::atomic<std::size_t> opened{0};
};

namespace {

using state_ptr = std::shared_ptr<http_client::state>;

struct acquired {
    std::unique_ptr<connection> conn;  // null: the caller opens a new one (slot reserved)
};

// Strand only. Gives a slot back: to the first waiter, to the idle list, or frees it.
void release(http_client::state& s, std::unique_ptr<connection> conn, bool reusable) {
    if (conn && (!reusable || s.stopped)) {
        conn->close();
        conn.reset();
    }
    if (!s.waiters.empty()) {
        auto w = std::move(s.waiters.front());
        s.waiters.pop_front();
        if (conn) {
            w->handed = std::move(conn);
        } else {
            w->may_open = true;
        }
        w->timer.cancel();
        return;
    }
    if (conn) {
        conn->idle_since = std::chrono::steady_clock::now();
        s.idle.push_back(std::move(conn));
        return;
    }
    --s.open;
}

// Strand only.
asio::awaitable<result<acquired>> acquire(state_ptr s, time_point deadline) {
    const auto now = std::chrono::steady_clock::now();
    // Oldest idle connections first: close those idle too long (the server has likely closed
    // them already), then take the most recently used.
    while (!s->idle.empty() && now - s->idle.front()->idle_since > s->options.idle_timeout) {
        s->idle.front()->close();
        s->idle.pop_front();
        --s->open;
    }
    if (s->stopped) {
        co_return make_error_code(http_client_errc::stopped);
    }
    if (!s->idle.empty()) {
        auto conn = std::move(s->idle.back());
        s->idle.pop_back();
        co_return acquired{std::move(conn)};
    }
    if (s->open < s->options.max_connections) {
        ++s->open;
        co_return acquired{};
    }
    auto w = std::make_shared<waiter>(s->strand);
    w->timer.expires_at(deadline);
    s->waiters.push_back(w);
    co_await w->timer.async_wait(use_tuple);
    if (w->handed) {
        co_return acquired{std::move(w->handed)};
    }
    if (w->may_open) {
        co_return acquired{};
    }
    std::erase(s->waiters, w);
    co_return make_error_code(w->stopped ? http_client_errc::stopped : http_client_errc::timeout);
}

std::error_code map_error(const beast::error_code& ec, time_point deadline) {
    if (ec == beast::error::timeout || std::chrono::steady_clock::now() >= deadline) {
        return make_error_code(http_client_errc::timeout);
    }
    if (ec == bhttp::error::body_limit || ec == bhttp::error::header_limit ||
        ec == bhttp::error::buffer_overflow) {
        return make_error_code(http_client_errc::too_large);
    }
    // Refused, reset, unreachable, a malformed answer...: the error itself, so its message
    // says which (an integration's lastError, an auth provider's log line).
    return ec;
}

asio::awaitable<result<std::unique_ptr<connection>>> open_connection(state_ptr s,
                                                                     time_point deadline) {
    // The resolver has no expiry of its own: a timer on the same strand cancels it.
    auto resolver = std::make_shared<tcp::resolver>(s->strand);
    asio::steady_timer guard(s->strand);
    guard.expires_at(deadline);
    guard.async_wait([resolver](const beast::error_code& ec) {
        if (!ec) {
            resolver->cancel();
        }
    });
    auto [rec, endpoints] = co_await resolver->async_resolve(
        s->endpoint.host, std::to_string(s->endpoint.port), use_tuple);
    guard.cancel();
    if (rec) {
        spdlog::debug("auth http client: resolve {}: {}", s->endpoint.host, rec.message());
        co_return map_error(rec, deadline);
    }
    auto conn = std::make_unique<connection>();
    if (s->endpoint.tls) {
        conn->tls =
            std::make_unique<beast::ssl_stream<beast::tcp_stream>>(s->strand, s->tls_context);
    } else {
        conn->plain = std::make_unique<beast::tcp_stream>(s->strand);
    }
    conn->lowest().expires_at(deadline);
    auto [cec, ep] = co_await conn->lowest().async_connect(endpoints, use_tuple);
    if (cec) {
        spdlog::debug("auth http client: connect {}:{}: {}", s->endpoint.host, s->endpoint.port,
                      cec.message());
        co_return map_error(cec, deadline);
    }
    if (conn->tls) {
        beast::error_code not_ip;
        asio::ip::make_address(s->endpoint.host, not_ip);
        // SNI carries host names only (RFC 6066 §3), never address literals.
        if (not_ip &&
            !SSL_set_tlsext_host_name(conn->tls->native_handle(), s->endpoint.host.c_str())) {
            co_return make_error_code(http_client_errc::transport);
        }
        if (s->options.verify_tls_peer) {
            conn->tls->set_verify_callback(asio::ssl::host_name_verification(s->endpoint.host));
        }
        auto [hec] = co_await conn->tls->async_handshake(asio::ssl::stream_base::client, use_tuple);
        if (hec) {
            spdlog::warn("auth http client: TLS handshake with {}: {}", s->endpoint.host,
                         hec.message());
            const auto mapped = map_error(hec, deadline);
            co_return mapped == http_client_errc::timeout ? mapped
                                                          : make_error_code(http_client_errc::tls);
        }
    }
    s->opened.fetch_add(1, std::memory_order_relaxed);
    co_return conn;
}

struct exchange_outcome {
    beast::error_code ec;
    bool response_started = false;  // some response bytes arrived (no retry then)
    bool keep_alive = false;
    http_response response;
};

template <class Stream>
asio::awaitable<exchange_outcome> write_and_read(Stream& stream, connection& conn,
                                                 const bhttp::request<bhttp::string_body>& req,
                                                 std::size_t max_bytes) {
    exchange_outcome out;
    auto [wec, written] = co_await bhttp::async_write(stream, req, use_tuple);
    if (wec) {
        out.ec = wec;
        co_return out;
    }
    bhttp::response_parser<bhttp::string_body> parser;
    parser.body_limit(max_bytes);
    parser.header_limit(static_cast<std::uint32_t>(std::min<std::size_t>(max_bytes, 64 * 1024)));
    auto [rec, read] = co_await bhttp::async_read(stream, conn.buffer, parser, use_tuple);
    out.response_started = read > 0 || conn.buffer.size() > 0;
    if (rec) {
        out.ec = rec;
        co_return out;
    }
    auto& msg = parser.get();
    out.keep_alive = msg.keep_alive();
    out.response.status = msg.result_int();
    out.response.body = std::move(msg.body());
    co_return out;
}

asio::awaitable<void> run_request(state_ptr s,
                                  std::shared_ptr<bhttp::request<bhttp::string_body>> req,
                                  time_point deadline, http_client::completion done) {
    for (int attempt = 0;; ++attempt) {
        auto slot = co_await acquire(s, deadline);
        if (!slot) {
            done(slot.error());
            co_return;
        }
        auto conn = std::move(slot->conn);
        const bool reused = conn != nullptr;
        if (!conn) {
            auto opened = co_await open_connection(s, deadline);
            if (!opened) {
                release(*s, nullptr, false);
                done(opened.error());
                co_return;
            }
            conn = std::move(*opened);
        }
        conn->lowest().expires_at(deadline);
        exchange_outcome out;
        if (conn->tls) {
            out = co_await write_and_read(*conn->tls, *conn, *req, s->options.max_response_bytes);
        } else {
            out = co_await write_and_read(*conn->plain, *conn, *req, s->options.max_response_bytes);
        }
        if (!out.ec) {
            conn->lowest().expires_never();
            release(*s, std::move(conn), out.keep_alive);
            done(std::move(out.response));
            co_return;
        }
        release(*s, nullptr, false);  // conn is closed as it goes out of scope below
        conn->close();
        // A pooled connection the server closed while idle fails before any response byte:
        // safe to send again once, on a fresh connection.
        if (reused && !out.response_started && attempt == 0 &&
            std::chrono::steady_clock::now() < deadline) {
            continue;
        }
        spdlog::debug("auth http client: {} {}:{}{}: {}", std::string(req->method_string()),
                      s->endpoint.host, s->endpoint.port, s->endpoint.target, out.ec.message());
        done(map_error(out.ec, deadline));
        co_return;
    }
}

}  // namespace

http_client::http_client(url endpoint, asio::any_io_executor executor, http_client_options options)
    : state_(
          std::make_shared<state>(std::move(endpoint), std::move(executor), std::move(options))) {}

http_client::~http_client() { stop(); }

void http_client::request(std::string method, http_headers headers, std::string body,
                          std::chrono::milliseconds timeout, completion done) {
    auto req = std::make_shared<bhttp::request<bhttp::string_body>>();
    req->method_string(method);
    req->target(state_->endpoint.target);
    req->version(11);
    const bool default_port = state_->endpoint.port == (state_->endpoint.tls ? 443 : 80);
    std::string host = state_->endpoint.host.find(':') != std::string::npos
                           ? "[" + state_->endpoint.host + "]"
                           : state_->endpoint.host;
    if (!default_port) {
        host += ":" + std::to_string(state_->endpoint.port);
    }
    req->set(bhttp::field::host, host);
    req->set(bhttp::field::user_agent, "starling-auth");
    for (auto& [name, value] : headers) {
        req->set(name, value);
    }
    req->keep_alive(true);
    req->body() = std::move(body);
    req->prepare_payload();
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    asio::co_spawn(state_->strand, run_request(state_, std::move(req), deadline, std::move(done)),
                   asio::detached);
}

void http_client::stop() {
    asio::dispatch(state_->strand, [s = state_] {
        s->stopped = true;
        for (auto& conn : s->idle) {
            conn->close();
        }
        s->open -= s->idle.size();
        s->idle.clear();
        for (auto& w : s->waiters) {
            w->stopped = true;
            w->timer.cancel();
        }
        s->waiters.clear();
    });
}

std::size_t http_client::connections_opened() const {
    return state_->opened.load(std::memory_order_relaxed);
}

}  // namespace starling::auth
