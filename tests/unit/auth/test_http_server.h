#pragma once

// Test helpers for the auth provider tests: an io_context on its own thread, and a small Beast
// HTTP/1.1 server on 127.0.0.1 (port 0) whose answers the test scripts per request.
//
// test_http_server: construct with a handler, read port(); the handler runs on the server's
// thread for each request and returns the response to send, or nullopt to never answer (the
// connection is held open until the server is destroyed). Counts accepted connections and
// records every request. Destruction stops the server and joins its thread.

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>

#include <atomic>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace starling::auth::test {

class io_thread {
  public:
    io_thread() : guard_(io_.get_executor()), thread_([this] { io_.run(); }) {}
    ~io_thread() {
        guard_.reset();
        io_.stop();
        thread_.join();
    }
    boost::asio::any_io_executor executor() { return io_.get_executor(); }
    boost::asio::io_context& context() { return io_; }

  private:
    boost::asio::io_context io_;
    boost::asio::executor_work_guard<boost::asio::io_context::executor_type> guard_;
    std::thread thread_;
};

struct recorded_request {
    std::string method;
    std::string target;
    std::map<std::string, std::string> headers;
    std::string body;
};

struct scripted_response {
    unsigned status = 200;
    std::string body;
    std::string content_type = "application/json";
    bool close = false;  // send "Connection: close" and close after the response
};

class test_http_server {
  public:
    using handler = std::function<std::optional<scripted_response>(const recorded_request&)>;

    // With `tls` set, connections are TLS (the context holds the server certificate).
    explicit test_http_server(handler h, boost::asio::ssl::context* tls = nullptr)
        : handler_(std::move(h)), tls_(tls), acceptor_(io_) {
        namespace asio = boost::asio;
        asio::ip::tcp::endpoint ep(asio::ip::make_address("127.0.0.1"), 0);
        acceptor_.open(ep.protocol());
        acceptor_.set_option(asio::socket_base::reuse_address(true));
        acceptor_.bind(ep);
        acceptor_.listen();
        port_ = acceptor_.local_endpoint().port();
        asio::co_spawn(io_, accept_loop(this), asio::detached);
        thread_ = std::thread([this] { io_.run(); });
    }

    ~test_http_server() {
        io_.stop();
        thread_.join();
    }

    std::uint16_t port() const { return port_; }
    std::string url(const std::string& path = "/auth") const {
        return std::string(tls_ != nullptr ? "https" : "http") +
               "://127.0.0.1:" + std::to_string(port_) + path;
    }
    std::size_t accepts() const { return accepts_.load(); }
    std::vector<recorded_request> requests() const {
        std::lock_guard lock(mutex_);
        return requests_;
    }

  private:
    static boost::asio::awaitable<void> accept_loop(test_http_server* self) {
        namespace asio = boost::asio;
        for (;;) {
            auto [ec, socket] =
                co_await self->acceptor_.async_accept(asio::as_tuple(asio::use_awaitable));
            if (ec) {
                co_return;
            }
            self->accepts_.fetch_add(1);
            if (self->tls_ != nullptr) {
                asio::co_spawn(self->io_, tls_session(self, std::move(socket)), asio::detached);
            } else {
                asio::co_spawn(self->io_, session(self, std::move(socket)), asio::detached);
            }
        }
    }

    static boost::asio::awaitable<void> tls_session(test_http_server* self,
                                                    boost::asio::ip::tcp::socket socket) {
        namespace asio = boost::asio;
        asio::ssl::stream<asio::ip::tcp::socket> stream(std::move(socket), *self->tls_);
        auto [ec] = co_await stream.async_handshake(asio::ssl::stream_base::server,
                                                    asio::as_tuple(asio::use_awaitable));
        if (ec) {
            co_return;
        }
        co_await session(self, std::move(stream));
    }

    template <class Stream>
    static boost::asio::awaitable<void> session(test_http_server* self, Stream socket) {
        namespace asio = boost::asio;
        namespace http = boost::beast::http;
        constexpr auto tuple = asio::as_tuple(asio::use_awaitable);
        boost::beast::flat_buffer buffer;
        for (;;) {
            http::request<http::string_body> req;
            auto [rec, n] = co_await http::async_read(socket, buffer, req, tuple);
            if (rec) {
                co_return;
            }
            recorded_request rr{
                std::string(req.method_string()), std::string(req.target()), {}, req.body()};
            for (const auto& field : req) {
                rr.headers[std::string(field.name_string())] = std::string(field.value());
            }
            {
                std::lock_guard lock(self->mutex_);
                self->requests_.push_back(rr);
            }
            auto answer = self->handler_(rr);
            if (!answer) {
                // Never answer: park until the server stops.
                asio::steady_timer forever(socket.get_executor(),
                                           asio::steady_timer::time_point::max());
                co_await forever.async_wait(tuple);
                co_return;
            }
            http::response<http::string_body> res{static_cast<http::status>(answer->status), 11};
            res.set(http::field::content_type, answer->content_type);
            res.body() = answer->body;
            res.keep_alive(!answer->close && req.keep_alive());
            res.prepare_payload();
            auto [wec, w] = co_await http::async_write(socket, res, tuple);
            if (wec || !res.keep_alive()) {
                boost::system::error_code ignored;
                boost::beast::get_lowest_layer(socket).shutdown(
                    asio::ip::tcp::socket::shutdown_both, ignored);
                co_return;
            }
        }
    }

    handler handler_;
    boost::asio::ssl::context* tls_ = nullptr;
    boost::asio::io_context io_;
    boost::asio::ip::tcp::acceptor acceptor_;
    std::uint16_t port_ = 0;
    std::atomic<std::size_t> accepts_{0};
    mutable std::mutex mutex_;
    std::vector<recorded_request> requests_;
    std::thread thread_;
};

}  // namespace starling::auth::test
