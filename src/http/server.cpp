#include "http/server.h"

#include "base/assert.h"
#include "http/api_support.h"

#include <boost/asio/dispatch.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/field.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/write.hpp>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <atomic>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace starling::http {
namespace {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace bhttp = boost::beast::http;
using tcp = net::ip::tcp;

// How long a connection being closed keeps draining what the client still sends, and how
// much it drains at most (see session::linger).
constexpr std::chrono::seconds linger_timeout{5};
constexpr std::size_t linger_max_bytes = 1024 * 1024;
constexpr std::chrono::milliseconds accept_retry_delay{100};

}  // namespace

class session;

// Everything the server's asynchronous work touches; shared by the server object and every
// handler in flight, so it outlives the server object when it must.
struct server::state : std::enable_shared_from_this<server::state> {
    state(net::io_context& io_context, router table, server_options opts)
        : io(io_context),
          routes(std::make_shared<const router>(std::move(table))),
          options(opts),
          acceptor(net::make_strand(io_context)),
          retry_timer(acceptor.get_executor()) {}

    void accept();
    void on_accept(beast::error_code ec, tcp::socket socket);
    void forget(session* s);

    net::io_context& io;
    // Replaced once at most, when the start-up's health-only table gives way to the full one
    // (server::replace_routes); a request holds the table it was dispatched on.
    std::atomic<std::shared_ptr<const router>> routes;
    const server_options options;
    tcp::acceptor acceptor;         // after start(): touched only on its strand
    net::steady_timer retry_timer;  // on the acceptor's strand
    std::atomic<bool> started{false};
    std::atomic<std::uint16_t> port{0};

    mutable std::mutex mutex;  // guards the members below
    bool stopped = false;
    std::unordered_map<session*, std::weak_ptr<session>> sessions;
    std::size_t reserved_in_use = 0;                        // sessions in reserved slots
    std::unordered_map<std::string, std::size_t> per_host;  // open sessions per client host
};

// One connection. Runs only on its own strand; kept alive by the shared_ptr that each pending
// operation (or pending responder) holds, and closed when the last one lets go.
class session : public std::enable_shared_from_this<session> {
  public:
    session(tcp::socket&& socket, std::shared_ptr<server::state> owner, std::string host,
            bool reserved)
        : stream_(std::move(socket)),
          owner_(std::move(owner)),
          host_(std::move(host)),
          reserved_(reserved) {}

    ~session() { owner_->forget(this); }

    const std::string& host() const { return host_; }
    bool reserved() const { return reserved_; }

    session(const session&) = delete;
    session& operator=(const session&) = delete;

    void run() {
        net::dispatch(stream_.get_executor(), [self = shared_from_this()] { self->read(); });
    }

    // From any thread.
    void stop() {
        net::post(stream_.get_executor(), [self = shared_from_this()] { self->close(); });
    }

  private:
    void read() {
        if (closed_) {
            return;
        }
        parser_.emplace();
        parser_->header_limit(static_cast<std::uint32_t>(owner_->options.max_header_bytes));
        parser_->body_limit(owner_->options.max_body_bytes);
        stream_.expires_after(reserved_ ? std::min(owner_->options.idle_timeout,
                                                   owner_->options.reserved_idle_timeout)
                                        : owner_->options.idle_timeout);
        bhttp::async_read(
            stream_, buffer_, *parser_,
            [self = shared_from_this()](beast::error_code ec, std::size_t) { self->on_read(ec); });
    }

    void on_read(beast::error_code ec) {
        if (closed_ || ec == bhttp::error::end_of_stream || ec == beast::error::timeout ||
            ec == net::error::operation_aborted) {
            close();
            return;
        }
        if (ec) {
            // Whatever follows a broken request cannot be trusted: answer and close.
            keep_alive_ = false;
            version_ = 11;
            status_code code = status_code::bad_request;
            if (ec == bhttp::error::body_limit) {
                code = status_code::payload_too_large;
            } else if (ec == bhttp::error::header_limit) {
                code = status_code::request_header_fields_too_large;
            }
            send(error_response(code, ec.message()));
            return;
        }
        request req = parser_->release();
        // Who is asking, for per-address limits and logs; a client cannot claim an address.
        req.erase(peer_address_header);
        req.set(peer_address_header, host_);
        keep_alive_ = req.keep_alive() && !reserved_;  // a reserved slot serves one request
        version_ = req.version();
        if (reserved_ && !is_health(req.target())) {
            if (owner_->options.on_refused) {
                owner_->options.on_refused("reserved_slot");
            }
            send(error_response(status_code::service_unavailable,
                                "every connection slot is taken; only " +
                                    owner_->options.health_path + " is served"));
            return;
        }
        auto answered = std::make_shared<std::atomic<bool>>(false);
        responder respond = [self = shared_from_this(), answered](response res) {
            if (answered->exchange(true)) {
                STARLING_BUG(false, "http responder called more than once");
                return;
            }
            net::post(self->stream_.get_executor(),
                      [self, res = std::move(res)]() mutable { self->send(std::move(res)); });
        };
        const auto table = owner_->routes.load();
        table->dispatch(req, respond);
    }

    void send(response res) {
        if (closed_) {
            return;
        }
        bool stopping = false;
        {
            std::lock_guard lock(owner_->mutex);
            stopping = owner_->stopped;
        }
        res.version(version_);
        res.keep_alive(keep_alive_ && !stopping);
        res.set(bhttp::field::server, "starling");
        res.prepare_payload();
        response_ = std::move(res);
        stream_.expires_after(owner_->options.idle_timeout);
        bhttp::async_write(
            stream_, *response_,
            [self = shared_from_this()](beast::error_code ec, std::size_t) { self->on_write(ec); });
    }

    void on_write(beast::error_code ec) {
        if (ec) {
            close();
            return;
        }
        const bool keep_alive = response_->keep_alive();
        response_.reset();
        if (keep_alive) {
            read();
        } else {
            linger();
        }
    }

    // Ends a connection after its last response. Closing a socket that still has unread
    // input makes the kernel send a reset, which can destroy the response before the client
    // reads it (a 413 sent while the client is still uploading, say). So: stop sending, read
    // and discard until the client closes, a timeout passes or enough was drained; then close.
    void linger() {
        beast::error_code ignored;
        stream_.socket().shutdown(tcp::socket::shutdown_send, ignored);
        stream_.expires_after(std::min<std::chrono::steady_clock::duration>(
            linger_timeout, owner_->options.idle_timeout));
        drain();
    }

    void drain() {
        if (closed_) {
            return;
        }
        buffer_.clear();
        stream_.async_read_some(buffer_.prepare(4096),
                                [self = shared_from_this()](beast::error_code ec, std::size_t n) {
                                    self->drained_ += n;
                                    if (ec || self->drained_ > linger_max_bytes) {
                                        self->close();
                                    } else {
                                        self->drain();
                                    }
                                });
    }

    void close() {
        if (closed_) {
            return;
        }
        closed_ = true;
        beast::error_code ignored;
        stream_.socket().shutdown(tcp::socket::shutdown_both, ignored);
        stream_.close();
    }

    bool is_health(std::string_view target) const {
        const auto path = target.substr(0, target.find('?'));
        const std::string_view health = owner_->options.health_path;
        return path.starts_with(health) &&
               (path.size() == health.size() || path[health.size()] == '/');
    }

    beast::tcp_stream stream_;
    std::shared_ptr<server::state> owner_;
    const std::string host_;  // the client's host, for the per-address count
    const bool reserved_;     // in a health-only slot
    beast::flat_buffer buffer_;
    std::optional<bhttp::request_parser<bhttp::string_body>> parser_;
    std::optional<response> response_;  // the one being written
    unsigned version_ = 11;
    bool keep_alive_ = false;
    bool closed_ = false;
    std::size_t drained_ = 0;
};

void server::state::accept() {
    acceptor.async_accept(net::make_strand(io),
                          [self = shared_from_this()](beast::error_code ec, tcp::socket socket) {
                              self->on_accept(ec, std::move(socket));
                          });
}

void server::state::on_accept(beast::error_code ec, tcp::socket socket) {
    if (ec == net::error::operation_aborted || !acceptor.is_open()) {
        return;
    }
    if (!ec) {
        boost::system::error_code endpoint_ec;
        const auto endpoint = socket.remote_endpoint(endpoint_ec);
        std::string host = endpoint_ec ? std::string() : endpoint.address().to_string();
        std::shared_ptr<session> s;
        const char* refused = nullptr;
        {
            // Registration and stop() serialize here, so a session either is registered
            // before stop() looks (and gets closed) or sees stopped (and is never started).
            std::lock_guard lock(mutex);
            if (stopped) {
                return;
            }
            auto& from_host = per_host[host];
            const std::size_t ordinary = sessions.size() - reserved_in_use;
            if (options.max_connections_per_address != 0 &&
                from_host >= options.max_connections_per_address) {
                refused = "address_connections";
            } else if (ordinary < options.max_connections) {
                s = std::make_shared<session>(std::move(socket), shared_from_this(), host, false);
            } else if (reserved_in_use < options.reserved_health_connections) {
                s = std::make_shared<session>(std::move(socket), shared_from_this(), host, true);
                ++reserved_in_use;
            } else {
                refused = "max_connections";
            }
            if (s) {
                ++from_host;
                sessions.emplace(s.get(), s);
            } else if (from_host == 0) {
                per_host.erase(host);
            }
        }
        if (s) {
            s->run();
        } else if (refused != nullptr) {
            spdlog::debug("{}: connection from {} refused: {}", options.name, host, refused);
            if (options.on_refused) {
                options.on_refused(refused);
            }
        }
    } else {
        // Not fatal for the listener, but retrying at once would spin while the cause lasts
        // (out of file descriptors, typically): pause briefly first.
        spdlog::warn("{}: accept failed: {}", options.name, ec.message());
        retry_timer.expires_after(accept_retry_delay);
        retry_timer.async_wait([self = shared_from_this()](beast::error_code wait_ec) {
            if (!wait_ec) {
                self->accept();
            }
        });
        return;
    }
    accept();
}

void server::state::forget(session* s) {
    std::lock_guard lock(mutex);
    if (sessions.erase(s) == 0) {
        return;
    }
    if (s->reserved()) {
        --reserved_in_use;
    }
    if (auto it = per_host.find(s->host()); it != per_host.end() && --it->second == 0) {
        per_host.erase(it);
    }
}

server::server(boost::asio::io_context& io, router routes, server_options options)
    : state_(std::make_shared<state>(io, std::move(routes), options)) {}

server::~server() { stop(); }

status server::start(std::string_view address, std::uint16_t port) {
    auto& s = *state_;
    {
        std::lock_guard lock(s.mutex);
        if (s.stopped || s.started.exchange(true)) {
            return std::make_error_code(std::errc::invalid_argument);
        }
    }
    boost::system::error_code ec;
    const auto ip = net::ip::make_address(std::string(address), ec);
    if (ec) {
        return std::error_code(ec);
    }
    const tcp::endpoint endpoint{ip, port};
    s.acceptor.open(endpoint.protocol(), ec);
    if (!ec) {
        s.acceptor.set_option(net::socket_base::reuse_address(true), ec);
    }
    if (!ec) {
        s.acceptor.bind(endpoint, ec);
    }
    if (!ec) {
        s.acceptor.listen(net::socket_base::max_listen_connections, ec);
    }
    if (ec) {
        boost::system::error_code ignored;
        s.acceptor.close(ignored);
        return std::error_code(ec);
    }
    s.port = s.acceptor.local_endpoint().port();
    net::post(s.acceptor.get_executor(), [self = state_] { self->accept(); });
    return {};
}

std::uint16_t server::local_port() const { return state_->port.load(); }

void server::stop() {
    std::vector<std::weak_ptr<session>> open;
    {
        std::lock_guard lock(state_->mutex);
        if (state_->stopped) {
            return;
        }
        state_->stopped = true;
        for (const auto& [ptr, weak] : state_->sessions) {
            open.push_back(weak);
        }
    }
    net::post(state_->acceptor.get_executor(), [self = state_] {
        boost::system::error_code ignored;
        self->acceptor.close(ignored);
        self->retry_timer.cancel();
    });
    // Locked outside the mutex: dropping the last reference runs ~session, which takes it.
    for (const auto& weak : open) {
        if (auto s = weak.lock()) {
            s->stop();
        }
    }
}

void server::replace_routes(router routes) {
    state_->routes.store(std::make_shared<const router>(std::move(routes)));
}

std::size_t server::connection_count() const {
    std::lock_guard lock(state_->mutex);
    return state_->sessions.size();
}

}  // namespace starling::http
