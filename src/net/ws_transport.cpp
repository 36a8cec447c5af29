#include "net/ws_transport.h"

#include "base/text.h"
#include "net/errc.h"

#include <boost/asio/post.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/websocket.hpp>
#include <boost/beast/websocket/ssl.hpp>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <type_traits>
#include <utility>

namespace starling::net {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace websocket = beast::websocket;
using tcp = asio::ip::tcp;
using tls_stream = asio::ssl::stream<tcp::socket>;

namespace {

// After a large message the read buffer is given back, so an idle connection keeps at most this.
constexpr std::size_t keep_buffer_capacity = 4096;

// The upgrade request's header block is bounded; a larger one fails the handshake.
constexpr std::uint32_t upgrade_header_limit = 8192;

// MQTT over WebSocket: every MQTT byte travels in binary messages; a message may hold part of a
// packet or several packets (the decoder is incremental), so reads just yield message bytes.
//
// The read buffer is a flat_buffer capped at the maximum message size; after a message larger
// than 4 KiB it is shrunk again. Writes send one binary message per gathered write, in a
// single frame (no auto-fragmentation, no copy: a server does not mask). Shutdown sends a
// close frame; the peer's close reply ends the pending read, which reports end of stream.
//
// Lifecycle and concurrency: see transport. `Next` is tcp::socket (ws) or an ssl::stream over
// one (wss), which keeps its ssl::context alive through context_.
template <class Next>
class ws_transport final : public transport {
  public:
    template <class... Args>
    ws_transport(std::shared_ptr<asio::ssl::context> context, std::string remote_address,
                 std::size_t max_message_size, Args&&... next_layer_args)
        : context_(std::move(context)),
          ws_(std::forward<Args>(next_layer_args)...),
          remote_address_(std::move(remote_address)),
          buffer_(max_message_size) {
        boost::system::error_code ec;
        beast::get_lowest_layer(ws_).set_option(tcp::no_delay(true), ec);
    }

    ~ws_transport() override { close(); }

    asio::any_io_executor get_executor() override { return ws_.get_executor(); }

    void async_read(read_handler handler) override {
        if (delivered_ == 0) {
            read_message(std::move(handler));
            return;
        }
        // The bytes of the last message may still be in use by the handler that is calling us:
        // release them only once it has returned.
        asio::post(ws_.get_executor(), [this, h = std::move(handler)]() mutable {
            buffer_.consume(delivered_);
            delivered_ = 0;
            if (buffer_.capacity() > keep_buffer_capacity) {
                buffer_.shrink_to_fit();
            }
            read_message(std::move(h));
        });
    }

    void async_write(std::span<const asio::const_buffer> buffers, write_handler handler) override {
        ws_.async_write(buffers, [h = std::move(handler)](const boost::system::error_code& ec,
                                                          std::size_t n) { h(ec, n); });
    }

    void async_shutdown(shutdown_handler handler) override {
        ws_.async_close(websocket::close_code::normal,
                        [h = std::move(handler)](const boost::system::error_code& ec) { h(ec); });
    }

    void close() override {
        boost::system::error_code ignored;
        beast::get_lowest_layer(ws_).close(ignored);
    }

    const std::string& remote_address() const override { return remote_address_; }
    const tls_peer_info* tls_peer() const override { return peer_ ? &*peer_ : nullptr; }

    websocket::stream<Next>& ws() { return ws_; }
    void set_peer(tls_peer_info peer) { peer_ = std::move(peer); }

  private:
    void read_message(read_handler handler) {
        ws_.async_read(buffer_, [this, h = std::move(handler)](const boost::system::error_code& ec,
                                                               std::size_t n) {
            if (ec == websocket::error::closed || ec == asio::ssl::error::stream_truncated) {
                h(asio::error::eof, {});
                return;
            }
            if (ec) {
                h(ec, {});
                return;
            }
            if (!ws_.got_binary()) {
                // [MQTT-6.0.0-1]: a text frame closes the network connection.
                buffer_.consume(n);
                h(boost::system::error_code(std::error_code(errc::websocket_text_frame)), {});
                return;
            }
            delivered_ = n;
            const auto data = buffer_.data();
            h({}, std::span<const std::uint8_t>(static_cast<const std::uint8_t*>(data.data()), n));
        });
    }

    std::shared_ptr<asio::ssl::context> context_;  // before ws_: wss streams refer to it
    websocket::stream<Next> ws_;
    std::string remote_address_;
    std::optional<tls_peer_info> peer_;
    beast::flat_buffer buffer_;
    std::size_t delivered_ = 0;  // bytes handed to the last read handler, consumed on next read
};

}  // namespace

std::string choose_sub_protocol(std::string_view offered,
                                const std::vector<std::string>& configured) {
    std::size_t pos = 0;
    while (pos <= offered.size()) {
        const auto comma = offered.find(',', pos);
        const auto token = base::trim(offered.substr(
            pos, comma == std::string_view::npos ? std::string_view::npos : comma - pos));
        for (const auto& ours : configured) {
            if (!token.empty() && token == ours) {
                return ours;
            }
        }
        if (comma == std::string_view::npos) {
            break;
        }
        pos = comma + 1;
    }
    return {};
}

namespace {

// The checks of an upgrade request, in order; shared by the handshake and
// judge_upgrade_request (the fuzz target's entry point).
upgrade_verdict judge(const http::request<http::empty_body>& request, const ws_options& options) {
    upgrade_verdict out;
    if (!websocket::is_upgrade(request)) {
        out.status = 400;
        out.why = "not a WebSocket upgrade request";
        return out;
    }
    auto target = std::string_view(request.target());
    target = target.substr(0, target.find('?'));
    if (target != options.path) {
        out.status = 404;
        out.why = "no WebSocket endpoint at " + std::string(target) + " (MQTT is served at " +
                  options.path + ")";
        return out;
    }
    const auto offered = std::string_view(request[http::field::sec_websocket_protocol]);
    auto protocol = choose_sub_protocol(offered, options.sub_protocols);
    if (protocol.empty()) {
        // [MQTT-6.0.0-3]/[MQTT-6.0.0-4]: the client must offer an MQTT subprotocol.
        out.status = 400;
        out.why = offered.empty() ? std::string(
                                        "no Sec-WebSocket-Protocol offered (expected "
                                        "one of the configured MQTT subprotocols)")
                                  : "none of the offered subprotocols \"" + std::string(offered) +
                                        "\" is configured";
        return out;
    }
    out.accepted = true;
    out.status = 101;
    out.protocol = std::move(protocol);
    return out;
}

}  // namespace

std::optional<upgrade_verdict> judge_upgrade_request(std::string_view request_head,
                                                     const ws_options& options) {
    http::request_parser<http::empty_body> parser;
    parser.header_limit(upgrade_header_limit);
    parser.eager(true);
    boost::system::error_code ec;
    std::size_t offset = 0;
    while (offset < request_head.size() && !parser.is_done()) {
        const auto n = parser.put(
            asio::buffer(request_head.data() + offset, request_head.size() - offset), ec);
        if (ec == http::error::need_more) {
            return std::nullopt;  // the handshake would read on (until its deadline)
        }
        if (ec) {
            return std::nullopt;  // malformed: the handshake fails with "upgrade"
        }
        if (n == 0) {
            break;
        }
        offset += n;
    }
    if (!parser.is_done()) {
        return std::nullopt;
    }
    return judge(parser.get(), options);
}

struct ws_handshaker::shared {
    ws_options options;
    std::shared_ptr<tls_context_provider> contexts;
};

namespace {

// One upgrade in flight; held by its completion handlers.
template <class Next>
struct ws_handshake_op : std::enable_shared_from_this<ws_handshake_op<Next>> {
    static constexpr bool tls = std::is_same_v<Next, tls_stream>;

    ws_handshake_op(std::unique_ptr<ws_transport<Next>> t, handshaker::done_handler d,
                    std::shared_ptr<const ws_handshaker::shared> c)
        : transport(std::move(t)),
          timer(transport->get_executor()),
          done(std::move(d)),
          config(std::move(c)) {}

    std::unique_ptr<ws_transport<Next>> transport;
    asio::steady_timer timer;
    handshaker::done_handler done;
    std::shared_ptr<const ws_handshaker::shared> config;
    beast::flat_buffer buffer{8192};
    http::request_parser<http::empty_body> parser;
    http::response<http::string_body> refusal;
    bool timed_out = false;

    void run(std::chrono::steady_clock::time_point deadline) {
        auto self = this->shared_from_this();
        timer.expires_at(std::min(
            deadline, std::chrono::steady_clock::now() + config->options.handshake.timeout));
        timer.async_wait([self](const boost::system::error_code& ec) {
            if (!ec && self->transport) {
                self->timed_out = true;
                self->transport->close();
            }
        });
        if constexpr (tls) {
            transport->ws().next_layer().async_handshake(
                asio::ssl::stream_base::server, [self](const boost::system::error_code& ec) {
                    if (ec) {
                        self->fail("tls", ec.message());
                        return;
                    }
                    self->transport->set_peer(
                        read_tls_peer(self->transport->ws().next_layer().native_handle(),
                                      self->config->contexts->options().client_auth));
                    self->read_request();
                });
        } else {
            read_request();
        }
    }

    void read_request() {
        auto self = this->shared_from_this();
        parser.header_limit(upgrade_header_limit);
        http::async_read(transport->ws().next_layer(), buffer, parser,
                         [self](const boost::system::error_code& ec, std::size_t) {
                             if (ec) {
                                 self->fail("upgrade", "reading the HTTP request: " + ec.message());
                                 return;
                             }
                             self->on_request();
                         });
    }

    void on_request() {
        const auto& request = parser.get();
        const auto& options = config->options;
        auto verdict = judge(request, options);
        if (!verdict.accepted) {
            refuse(static_cast<http::status>(verdict.status), std::move(verdict.why));
            return;
        }
        const std::string protocol = std::move(verdict.protocol);
        auto& ws = transport->ws();
        ws.set_option(websocket::stream_base::decorator([protocol](websocket::response_type& res) {
            res.set(http::field::sec_websocket_protocol, protocol);
            res.set(http::field::server, "starling");
        }));
        ws.read_message_max(options.max_message_size);
        ws.auto_fragment(false);
        ws.binary(true);
        auto self = this->shared_from_this();
        ws.async_accept(request, [self](const boost::system::error_code& ec) {
            if (ec) {
                self->fail("upgrade", "WebSocket accept: " + ec.message());
                return;
            }
            self->timer.cancel();
            if (!self->transport) {
                return;
            }
            self->done(std::move(self->transport));
        });
    }

    void refuse(http::status status, std::string why) {
        refusal.version(parser.get().version());
        refusal.result(status);
        refusal.set(http::field::server, "starling");
        refusal.set(http::field::content_type, "text/plain");
        refusal.keep_alive(false);
        refusal.body() = why + "\n";
        refusal.prepare_payload();
        auto self = this->shared_from_this();
        http::async_write(transport->ws().next_layer(), refusal,
                          [self, why](const boost::system::error_code&, std::size_t) {
                              self->fail("upgrade", why);
                          });
    }

    void fail(std::string_view reason, const std::string& detail) {
        timer.cancel();
        if (!transport) {
            return;
        }
        const auto& options = config->options;
        spdlog::debug("listener.{}: WebSocket handshake with {} failed: {}", options.listener,
                      transport->remote_address(), timed_out ? "handshake timeout" : detail);
        transport->close();
        transport.reset();
        if (options.handshake.on_failure) {
            options.handshake.on_failure(timed_out ? "timeout" : reason);
        }
        done(nullptr);
    }
};

}  // namespace

ws_handshaker::ws_handshaker(ws_options options, std::shared_ptr<tls_context_provider> contexts)
    : shared_(std::make_shared<const shared>(shared{std::move(options), std::move(contexts)})) {}

void ws_handshaker::start(tcp::socket socket, std::string remote_address,
                          handshake_context accepted, done_handler done) {
    const auto max = shared_->options.max_message_size;
    if (shared_->contexts) {
        auto context = shared_->contexts->current();
        auto& ctx = *context;
        auto t = std::make_unique<ws_transport<tls_stream>>(
            std::move(context), std::move(remote_address), max, std::move(socket), ctx);
        std::make_shared<ws_handshake_op<tls_stream>>(std::move(t), std::move(done), shared_)
            ->run(accepted.deadline);
        return;
    }
    auto t = std::make_unique<ws_transport<tcp::socket>>(nullptr, std::move(remote_address), max,
                                                         std::move(socket));
    std::make_shared<ws_handshake_op<tcp::socket>>(std::move(t), std::move(done), shared_)
        ->run(accepted.deadline);
}

}  // namespace starling::net
