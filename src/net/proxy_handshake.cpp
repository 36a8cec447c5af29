#include "net/proxy_handshake.h"

#include "net/admission.h"
#include "net/proxy_protocol.h"
#include "net/tcp_transport.h"

#include <boost/asio/read.hpp>
#include <boost/asio/steady_timer.hpp>
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdint>
#include <utility>
#include <variant>

namespace starling::net {

namespace asio = boost::asio;

namespace {

// One header read in flight. Held (shared) by its completion handlers, so it lives exactly as
// long as the read; every member is used on the socket's strand only.
struct proxy_read_op : std::enable_shared_from_this<proxy_read_op> {
    asio::ip::tcp::socket socket;
    std::string remote_address;
    handshaker::done_handler done;
    std::shared_ptr<handshaker> inner;
    std::string listener;
    std::function<void(std::string_view)> on_failure;
    handshake_context context;
    std::shared_ptr<log_throttle> log_limit;
    asio::steady_timer timer;
    proxy_protocol::parser parser;
    // Large enough for the biggest v2 header the parser accepts; read into piecewise.
    std::array<std::uint8_t, proxy_protocol::max_v2_header_size> buffer{};
    std::size_t received = 0;
    bool timed_out = false;

    proxy_read_op(asio::ip::tcp::socket s, std::string remote, handshaker::done_handler d,
                  std::shared_ptr<handshaker> in, std::string name,
                  std::function<void(std::string_view)> failure, handshake_context ctx,
                  std::shared_ptr<log_throttle> throttle)
        : socket(std::move(s)),
          remote_address(std::move(remote)),
          done(std::move(d)),
          inner(std::move(in)),
          listener(std::move(name)),
          on_failure(std::move(failure)),
          context(std::move(ctx)),
          log_limit(std::move(throttle)),
          timer(socket.get_executor()) {}

    // How many more bytes to read without reading past the header (see proxy_handshake.h).
    std::size_t next_read_size() const {
        constexpr std::size_t first_read = 8;
        if (received < first_read) {
            return first_read - received;
        }
        if (buffer[0] != proxy_protocol::v2_signature[0]) {
            return 1;  // v1: a line ending in CRLF, of unknown length
        }
        if (received < proxy_protocol::v2_fixed_size) {
            return proxy_protocol::v2_fixed_size - received;
        }
        const std::size_t declared = (std::size_t{buffer[14]} << 8) | std::size_t{buffer[15]};
        return proxy_protocol::v2_fixed_size + declared - received;
    }

    void read_more() {
        if (timed_out) {
            // The deadline fired while a completed read was queued: its cancel missed.
            fail("timeout", "no PROXY protocol header within the handshake timeout");
            return;
        }
        const std::size_t want = next_read_size();
        if (want == 0 || received + want > buffer.size()) {
            // The parser decides before either can happen; never spin or overrun the buffer.
            fail("proxy", "PROXY protocol header length out of range");
            return;
        }
        asio::async_read(socket, asio::buffer(buffer.data() + received, want),
                         [self = shared_from_this()](const boost::system::error_code& ec,
                                                     std::size_t n) { self->on_read(ec, n); });
    }

    void on_read(const boost::system::error_code& ec, std::size_t n) {
        if (ec) {
            if (timed_out) {
                fail("timeout", "no PROXY protocol header within the handshake timeout");
            } else {
                fail("proxy", "connection ended before a complete PROXY protocol header (" +
                                  ec.message() + ")");
            }
            return;
        }
        const auto fed = std::span<const std::uint8_t>(buffer.data() + received, n);
        received += n;
        auto r = parser.feed(fed);
        if (std::holds_alternative<proxy_protocol::parser::need_more>(r)) {
            read_more();
            return;
        }
        if (auto* error = std::get_if<std::error_code>(&r)) {
            const std::string& detail = parser.detail();
            fail("proxy",
                 error->message() + (detail.empty() ? std::string() : " (" + detail + ")"));
            return;
        }
        timer.cancel();
        auto& h = std::get<proxy_protocol::header>(r);
        std::string peer = h.source_address.empty() ? remote_address : std::move(h.source_address);
        spdlog::debug("listener.{}: PROXY header from {}: client {}", listener, remote_address,
                      peer);
        if (context.admit_address && !context.admit_address(peer)) {
            // Refused by a per-address limit: counted and logged (throttled) by the listener.
            boost::system::error_code ignored;
            socket.close(ignored);
            done(nullptr);
            return;
        }
        if (inner) {
            handshake_context next{.deadline = context.deadline, .admit_address = {}};
            inner->start(std::move(socket), std::move(peer), std::move(next), std::move(done));
            return;
        }
        done(std::make_unique<tcp_transport>(std::move(socket), std::move(peer)));
    }

    void fail(std::string_view reason, const std::string& why) {
        timer.cancel();
        // Throttled: a flood of connections without the header must not flood the log.
        std::uint64_t suppressed = 0;
        if (log_limit->should_log(std::chrono::steady_clock::now(), suppressed)) {
            spdlog::info(
                "listener.{}: connection from {} closed: {}{}", listener, remote_address, why,
                suppressed == 0 ? std::string()
                                : fmt::format(" ({} more like it not logged)", suppressed));
        }
        if (on_failure) {
            on_failure(reason);
        }
        boost::system::error_code ignored;
        socket.close(ignored);
        done(nullptr);
    }
};

}  // namespace

proxy_handshaker::proxy_handshaker(std::string listener, std::shared_ptr<handshaker> inner,
                                   handshake_options options)
    : listener_(std::move(listener)),
      inner_(std::move(inner)),
      options_(std::move(options)),
      log_limit_(std::make_shared<log_throttle>()) {}

void proxy_handshaker::start(asio::ip::tcp::socket socket, std::string remote_address,
                             handshake_context context, done_handler done) {
    const auto deadline =
        std::min(context.deadline, std::chrono::steady_clock::now() + options_.timeout);
    auto op = std::make_shared<proxy_read_op>(std::move(socket), std::move(remote_address),
                                              std::move(done), inner_, listener_,
                                              options_.on_failure, std::move(context), log_limit_);
    op->timer.expires_at(deadline);
    // The timer holds the op only weakly: once the header is read the op hands the socket on
    // and must not be kept alive (nor close anything) by a pending deadline.
    op->timer.async_wait(
        [weak = std::weak_ptr<proxy_read_op>(op)](const boost::system::error_code& ec) {
            if (ec) {
                return;
            }
            if (auto self = weak.lock()) {
                self->timed_out = true;
                // Cancel rather than close: the read completes with operation_aborted and
                // fail() counts it before closing, so a peer never sees the close first.
                boost::system::error_code ignored;
                self->socket.cancel(ignored);
            }
        });
    op->read_more();
}

}  // namespace starling::net
