#include "net/tcp_listener.h"

#include "net/errc.h"
#include "net/handshake.h"
#include "net/io_pool.h"
#include "net/tcp_transport.h"

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <fmt/format.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <spdlog/spdlog.h>
#include <sys/socket.h>

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <utility>

namespace starling::net {

namespace asio = boost::asio;
using asio::ip::tcp;

// Shared by the listener and its pending accept/retry operations, which complete on I/O
// threads and may do so after the listener object is gone (they then find `stopped`).
// Every use of `acceptor` and `retry_timer` holds `mutex`: Asio I/O objects are not
// thread-safe, and completions run on any thread of the pool.
struct tcp_listener::state {
    state(asio::io_context& ctx, listener_options o)
        : context(ctx),
          options(std::move(o)),
          admission(options.admission ? options.admission
                                      : admission_control::create(admission_options{})),
          gate(admission->add_gate(options.max_connections)),
          acceptor(ctx),
          retry_timer(ctx) {}

    asio::io_context& context;
    const listener_options options;
    const std::shared_ptr<admission_control> admission;
    const std::shared_ptr<admission_control::gate> gate;
    listener_stats stats;
    std::atomic<std::uint16_t> port{0};
    // Refusals and deadline closes are logged at most once per 10 s each.
    log_throttle refusal_log;
    log_throttle timeout_log;
    log_throttle accept_error_log;

    std::mutex mutex;
    std::condition_variable idle;
    tcp::acceptor acceptor;
    asio::steady_timer retry_timer;
    accept_handler handler;  // set once by start(), read without the lock afterwards
    bool started = false;
    bool stopped = false;
    int handlers_running = 0;

    static void accept_next(const std::shared_ptr<state>& s);
    static void on_accept(const std::shared_ptr<state>& s, const boost::system::error_code& ec,
                          tcp::socket socket);
    static void hand_over(const std::shared_ptr<state>& s, std::unique_ptr<transport> stream,
                          std::shared_ptr<admission_control::ticket> ticket,
                          std::chrono::steady_clock::time_point deadline);
    static void refused(const std::shared_ptr<state>& s, refusal why, const std::string& remote);
    static void connect_timed_out(const std::shared_ptr<state>& s, const std::string& remote);
};

namespace {

// The listener whose accept handler runs on this thread, so stop() from inside it does not
// wait for itself.
thread_local const void* handler_of = nullptr;

// A failing accept (EMFILE, ENOBUFS) would otherwise complete at once, forever.
constexpr std::chrono::milliseconds accept_retry_delay{100};

void set_keepalive(tcp::socket& socket, const keepalive_options& k) {
    if (!k.enabled) {
        return;
    }
    boost::system::error_code ignored;
    socket.set_option(asio::socket_base::keep_alive(true), ignored);
    // Failures leave the kernel's defaults (7200 s idle): harmless, so not reported.
    const int fd = socket.native_handle();
    const int idle = static_cast<int>(k.idle.count());
    const int interval = static_cast<int>(k.interval.count());
    const int count = k.count;
    ::setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof idle);
    ::setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &interval, sizeof interval);
    ::setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &count, sizeof count);
}

std::string suppressed_note(std::uint64_t suppressed) {
    return suppressed == 0 ? std::string()
                           : fmt::format(" ({} more since the last line)", suppressed);
}

}  // namespace

void tcp_listener::state::on_accept(const std::shared_ptr<state>& s,
                                    const boost::system::error_code& ec, tcp::socket socket) {
    std::unique_lock lock(s->mutex);
    if (s->stopped) {
        return;  // `socket`, if any, closes on destruction
    }
    if (ec) {
        if (ec == asio::error::operation_aborted) {
            return;
        }
        s->stats.accept_errors.fetch_add(1, std::memory_order_relaxed);
        std::uint64_t suppressed = 0;
        if (s->accept_error_log.should_log(std::chrono::steady_clock::now(), suppressed)) {
            spdlog::warn("listener.{} on port {}: accept failed: {}{}", s->options.name,
                         s->port.load(), ec.message(), suppressed_note(suppressed));
        }
        s->retry_timer.expires_after(accept_retry_delay);
        s->retry_timer.async_wait([s](const boost::system::error_code& wait_ec) {
            std::lock_guard retry_lock(s->mutex);
            if (!wait_ec && !s->stopped) {
                accept_next(s);
            }
        });
        return;
    }
    accept_next(s);  // keep accepting while this one is handed over
    lock.unlock();

    boost::system::error_code endpoint_ec;
    const auto endpoint = socket.remote_endpoint(endpoint_ec);
    std::string remote = endpoint_ec ? std::string("unknown") : tcp_transport::format(endpoint);
    // Before any byte is read: the listener's cap, the descriptor reserve, and (unless a PROXY
    // header will name the real client) the per-address limits.
    auto admitted =
        s->admission->admit(s->gate, s->options.address_from_proxy_header ? "" : remote);
    if (!admitted.admitted) {
        refused(s, *admitted.refused, remote);
        return;  // `socket` closes on destruction
    }
    std::shared_ptr<admission_control::ticket> ticket = std::move(admitted.admitted);
    set_keepalive(socket, s->options.keepalive);
    const auto deadline = s->options.connect_timeout.count() > 0
                              ? std::chrono::steady_clock::now() + s->options.connect_timeout
                              : std::chrono::steady_clock::time_point::max();

    if (s->options.handshake) {
        // The handshake completes later, on the socket's strand; the listener may be stopped
        // by then, which hand_over() checks. The ticket travels with it: a failed handshake
        // drops it with the socket.
        handshake_context context{.deadline = deadline, .admit_address = {}};
        if (s->options.address_from_proxy_header) {
            context.admit_address = [s, ticket](const std::string& client) {
                if (auto why = ticket->admit_address(client)) {
                    refused(s, *why, client);
                    return false;
                }
                return true;
            };
        }
        s->options.handshake->start(std::move(socket), std::move(remote), std::move(context),
                                    [s, ticket, deadline](std::unique_ptr<transport> stream) {
                                        if (stream) {
                                            hand_over(s, std::move(stream), ticket, deadline);
                                        }
                                    });
        return;
    }
    hand_over(s, std::make_unique<tcp_transport>(std::move(socket)), std::move(ticket), deadline);
}

void tcp_listener::state::refused(const std::shared_ptr<state>& s, refusal why,
                                  const std::string& remote) {
    s->stats.refused.fetch_add(1, std::memory_order_relaxed);
    if (s->options.on_refused) {
        s->options.on_refused(why);
    }
    std::uint64_t suppressed = 0;
    if (s->refusal_log.should_log(std::chrono::steady_clock::now(), suppressed)) {
        spdlog::warn("listener.{}: connection from {} refused: {}{}", s->options.name, remote,
                     to_string(why), suppressed_note(suppressed));
    }
}

void tcp_listener::state::connect_timed_out(const std::shared_ptr<state>& s,
                                            const std::string& remote) {
    s->stats.connect_timeouts.fetch_add(1, std::memory_order_relaxed);
    if (s->options.on_connect_timeout) {
        s->options.on_connect_timeout();
    }
    std::uint64_t suppressed = 0;
    if (s->timeout_log.should_log(std::chrono::steady_clock::now(), suppressed)) {
        spdlog::info("listener.{}: connection from {} closed: no CONNECT within {} ms{}",
                     s->options.name, remote, s->options.connect_timeout.count(),
                     suppressed_note(suppressed));
    }
}

void tcp_listener::state::hand_over(const std::shared_ptr<state>& s,
                                    std::unique_ptr<transport> stream,
                                    std::shared_ptr<admission_control::ticket> ticket,
                                    std::chrono::steady_clock::time_point deadline) {
    std::unique_lock lock(s->mutex);
    if (s->stopped) {
        return;  // `stream` closes on destruction
    }
    ++s->handlers_running;
    lock.unlock();

    accept_guard guard{.ticket = std::move(ticket), .connect_deadline = deadline};
    guard.on_connect_timeout = [s, remote = stream->remote_address()] {
        connect_timed_out(s, remote);
    };
    auto conn = connection::create(std::move(stream), s->options.connection, std::move(guard));
    s->stats.accepted.fetch_add(1, std::memory_order_relaxed);
    handler_of = s.get();
    s->handler(std::move(conn));
    handler_of = nullptr;

    lock.lock();
    if (--s->handlers_running == 0) {
        s->idle.notify_all();
    }
}

void tcp_listener::state::accept_next(const std::shared_ptr<state>& s) {
    // Each connection gets its own strand; the socket carries it as its executor, so every
    // completion of that connection is serialized without locks.
    s->acceptor.async_accept(asio::any_io_executor(asio::make_strand(s->context)),
                             [s](const boost::system::error_code& ec, tcp::socket socket) {
                                 on_accept(s, ec, std::move(socket));
                             });
}

tcp_listener::tcp_listener(io_pool& pool, listener_options options)
    : state_(std::make_shared<state>(pool.context(), std::move(options))) {}

tcp_listener::~tcp_listener() { stop(); }

status tcp_listener::start(accept_handler handler) {
    state& s = *state_;
    std::lock_guard lock(s.mutex);
    if (s.started || s.stopped) {
        return std::error_code(std::make_error_code(std::errc::operation_not_permitted));
    }
    boost::system::error_code ec;
    const auto address = asio::ip::make_address(s.options.bind_address, ec);
    if (ec) {
        return std::error_code(errc::invalid_address);
    }
    const tcp::endpoint endpoint(address, s.options.port);
    auto fail = [&s](const boost::system::error_code& error) {
        boost::system::error_code ignored;
        s.acceptor.close(ignored);
        return std::error_code(error);
    };
    s.acceptor.open(endpoint.protocol(), ec);
    if (ec) {
        return fail(ec);
    }
    // Lets a restarted broker bind while old connections sit in TIME_WAIT. (On Linux it does
    // not let two live listeners share a port.)
    s.acceptor.set_option(tcp::acceptor::reuse_address(true), ec);
    if (ec) {
        return fail(ec);
    }
    if (s.options.so_receive_buffer != 0) {
        const asio::socket_base::receive_buffer_size size(
            static_cast<int>(s.options.so_receive_buffer));
        s.acceptor.set_option(size, ec);
        if (ec) {
            return fail(ec);
        }
    }
    s.acceptor.bind(endpoint, ec);
    if (ec) {
        return fail(ec);
    }
    s.acceptor.listen(s.options.backlog, ec);
    if (ec) {
        return fail(ec);
    }
    const auto local = s.acceptor.local_endpoint(ec);
    if (ec) {
        return fail(ec);
    }
    s.port.store(local.port(), std::memory_order_relaxed);
    s.handler = std::move(handler);
    s.started = true;
    state::accept_next(state_);
    return {};
}

void tcp_listener::stop() {
    state& s = *state_;
    std::unique_lock lock(s.mutex);
    if (s.stopped) {
        return;
    }
    s.stopped = true;
    boost::system::error_code ignored;
    s.acceptor.close(ignored);  // the pending accept completes with operation_aborted
    s.retry_timer.cancel();
    if (handler_of == &s) {
        return;  // called from our own accept handler: it cannot wait for itself
    }
    s.idle.wait(lock, [&s] { return s.handlers_running == 0; });
}

std::uint16_t tcp_listener::local_port() const {
    return state_->port.load(std::memory_order_relaxed);
}

const listener_stats& tcp_listener::stats() const { return state_->stats; }

std::size_t tcp_listener::current_connections() const { return state_->gate->current(); }

}  // namespace starling::net
