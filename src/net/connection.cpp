#include "net/connection.h"

#include "net/errc.h"
#include "net/transport.h"

#include <boost/asio/error.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>

#include <memory>
#include <mutex>
#include <utility>
#include <vector>

namespace starling::net {
namespace {

std::atomic<std::uint64_t> next_connection_id{1};

std::size_t hard_limit_of(const connection_options& options) {
    return options.write_buffer_hard_limit != 0 ? options.write_buffer_hard_limit
                                                : 4 * options.write_buffer_high_water_mark;
}

}  // namespace

// Two halves. The write queue is shared with sending threads and guarded by `mutex`; the
// atomics mirror what other threads may read without it. Everything below "strand-confined" is
// touched only on the transport's strand.
struct connection::state {
    state(std::unique_ptr<transport> t, const connection_options& o, accept_guard g)
        : stream(std::move(t)),
          executor(stream->get_executor()),
          options(o),
          hard_limit(hard_limit_of(o)),
          guard(std::move(g)) {}

    std::unique_ptr<transport> stream;
    boost::asio::any_io_executor executor;
    const connection_options options;
    const std::size_t hard_limit;

    // --- shared with sending threads, guarded by `mutex`
    std::mutex mutex;
    std::vector<std::string> pending;  // accepted by send(), not yet handed to a write
    bool accepting_sends = true;       // false after close()/abort()/failure
    bool writer_active = false;        // a write is in flight or a start_write is posted
    // Written under `mutex`, read anywhere.
    std::atomic<std::size_t> queued_bytes{0};  // pending + in flight
    std::atomic<bool> writable{true};
    // Any thread.
    std::atomic<bool> paused{false};
    std::atomic<bool> connect_done{false};  // connect_completed() was called

    // --- strand-confined
    enum class phase : std::uint8_t { created, open, closing, closed };
    phase current = phase::created;
    bool started = false;
    std::shared_ptr<connection_handler> handler;
    std::error_code closed_reason;
    bool read_in_flight = false;
    bool peer_eof = false;  // closing: the peer's FIN arrived
    bool fin_sent = false;  // closing: the queue flushed and our FIN went out
    bool last_notified_writable = true;
    std::vector<std::string> in_flight;  // the strings the current write gathers
    std::vector<boost::asio::const_buffer> gather;
    std::size_t in_flight_bytes = 0;
    // Both timers are boxed and exist only while armed: an inline steady_timer is 64 bytes
    // that every idle connection would carry for nothing.
    std::unique_ptr<boost::asio::steady_timer> close_timer;  // created by close() only
    // The listener's slots (released when the socket closes) and connect deadline.
    accept_guard guard;
    std::unique_ptr<boost::asio::steady_timer> connect_timer;  // armed by run_start()
};

std::shared_ptr<connection> connection::create(std::unique_ptr<transport> stream,
                                               const connection_options& options,
                                               accept_guard guard) {
    return std::make_shared<connection>(private_tag{}, std::move(stream), options,
                                        std::move(guard));
}

connection::connection(private_tag, std::unique_ptr<transport> stream,
                       const connection_options& options, accept_guard guard)
    : id_(next_connection_id.fetch_add(1, std::memory_order_relaxed)),
      remote_address_(stream->remote_address()),
      tls_peer_(stream->tls_peer() != nullptr
                    ? std::make_unique<const tls_peer_info>(*stream->tls_peer())
                    : nullptr),
      state_(std::make_unique<state>(std::move(stream), options, std::move(guard))) {}

connection::~connection() = default;

template <class F>
void connection::post(F&& f) {
    boost::asio::post(state_->executor, std::forward<F>(f));
}

// ---------------------------------------------------------------- any thread

void connection::start(std::shared_ptr<connection_handler> handler) {
    post([self = shared_from_this(), h = std::move(handler)]() mutable {
        self->run_start(std::move(h));
    });
}

bool connection::send(std::string bytes) {
    state& s = *state_;
    const std::size_t size = bytes.size();
    bool kick = false;
    bool overflow = false;
    {
        std::lock_guard lock(s.mutex);
        if (!s.accepting_sends) {
            return false;
        }
        const std::size_t queued = s.queued_bytes.load(std::memory_order_relaxed) + size;
        if (queued > s.hard_limit) {
            s.accepting_sends = false;
            overflow = true;
        } else if (size != 0) {
            s.pending.push_back(std::move(bytes));
            s.queued_bytes.store(queued, std::memory_order_relaxed);
            if (queued > s.options.write_buffer_high_water_mark &&
                s.writable.load(std::memory_order_relaxed)) {
                s.writable.store(false, std::memory_order_relaxed);
                kick = true;  // the strand must report the change
            }
            if (!s.writer_active) {
                s.writer_active = true;
                kick = true;
            }
        }
    }
    if (overflow) {
        post([self = shared_from_this()] { self->terminate(errc::write_queue_overflow); });
        return false;
    }
    if (kick) {
        // One post covers both jobs: start the writer if idle (start_write re-checks) and
        // report writability (notify_writability compares with what it reported last).
        post([self = shared_from_this()] {
            self->start_write();
            self->notify_writability();
        });
    }
    return true;
}

bool connection::is_writable() const { return state_->writable.load(std::memory_order_relaxed); }

std::size_t connection::queued_bytes() const {
    return state_->queued_bytes.load(std::memory_order_relaxed);
}

void connection::pause_reading() { state_->paused.store(true, std::memory_order_relaxed); }

void connection::resume_reading() {
    state_->paused.store(false, std::memory_order_relaxed);
    post([self = shared_from_this()] { self->start_reading(); });
}

bool connection::reading_paused() const { return state_->paused.load(std::memory_order_relaxed); }

void connection::close() {
    {
        std::lock_guard lock(state_->mutex);
        state_->accepting_sends = false;
    }
    post([self = shared_from_this()] { self->begin_close(); });
}

void connection::abort() {
    {
        std::lock_guard lock(state_->mutex);
        state_->accepting_sends = false;
    }
    post([self = shared_from_this()] { self->terminate(errc::aborted); });
}

void connection::connect_completed() {
    if (state_->connect_done.exchange(true)) {
        return;
    }
    // Frees the timer now rather than at the deadline (it would find connect_done anyway);
    // destroying it cancels its wait.
    post([self = shared_from_this()] { self->state_->connect_timer.reset(); });
}

// ---------------------------------------------------------------- strand

void connection::run_start(std::shared_ptr<connection_handler> handler) {
    state& s = *state_;
    if (s.started || !handler) {
        return;  // started twice
    }
    s.started = true;
    if (s.current == state::phase::closed) {
        handler->on_closed(s.closed_reason);
        return;
    }
    s.handler = std::move(handler);
    if (s.current == state::phase::created) {
        s.current = state::phase::open;
    }
    notify_writability();  // sends before start may already have crossed the high mark
    if (s.guard.connect_deadline != std::chrono::steady_clock::time_point::max() &&
        !s.connect_done.load(std::memory_order_relaxed)) {
        // Weak: the deadline alone must not keep a connection alive that nothing else holds.
        s.connect_timer = std::make_unique<boost::asio::steady_timer>(s.executor);
        s.connect_timer->expires_at(s.guard.connect_deadline);
        s.connect_timer->async_wait([weak = weak_from_this()](const boost::system::error_code& ec) {
            if (ec) {
                return;
            }
            if (auto self = weak.lock()) {
                self->on_connect_deadline();
            }
        });
    }
    start_reading();
}

void connection::on_connect_deadline() {
    state& s = *state_;
    if (s.connect_done.load(std::memory_order_relaxed) || s.current == state::phase::closed) {
        return;
    }
    if (s.guard.on_connect_timeout) {
        s.guard.on_connect_timeout();
    }
    terminate(errc::connect_timeout);
}

void connection::start_reading() {
    state& s = *state_;
    if (s.read_in_flight) {
        return;
    }
    switch (s.current) {
        case state::phase::open:
            if (s.paused.load(std::memory_order_relaxed)) {
                return;
            }
            break;
        case state::phase::closing:
            if (s.peer_eof) {
                return;  // closing reads only to see the FIN; pause does not apply
            }
            break;
        case state::phase::created:
        case state::phase::closed:
            return;
    }
    s.read_in_flight = true;
    s.stream->async_read([self = shared_from_this()](const boost::system::error_code& ec,
                                                     std::span<const std::uint8_t> bytes) {
        // Translate end-of-stream here so the rest of the class needs no Asio error enums.
        self->on_read(ec == boost::asio::error::eof ? std::error_code(errc::peer_closed)
                                                    : std::error_code(ec),
                      bytes);
    });
}

void connection::on_read(std::error_code ec, std::span<const std::uint8_t> bytes) {
    state& s = *state_;
    s.read_in_flight = false;
    if (s.current == state::phase::closed) {
        return;
    }
    if (ec) {
        if (s.current == state::phase::closing && ec == errc::peer_closed) {
            s.peer_eof = true;
            if (s.fin_sent) {
                terminate({});  // both directions done: a clean close
            }
            // else the flush is still running; on_shutdown finishes the close
            return;
        }
        terminate(ec);
        return;
    }
    stats_.bytes_received.fetch_add(bytes.size(), std::memory_order_relaxed);
    if (s.current == state::phase::open) {
        s.handler->on_bytes(bytes);  // may pause, send, close or abort
    }
    start_reading();
}

void connection::start_write() {
    state& s = *state_;
    if (s.current == state::phase::closed || !s.in_flight.empty()) {
        return;  // closed, or a write is in flight (its completion continues the loop)
    }
    {
        std::lock_guard lock(s.mutex);
        if (s.pending.empty()) {
            s.writer_active = false;
        } else {
            s.in_flight.swap(s.pending);  // `pending` keeps the old vector's capacity
        }
    }
    if (s.in_flight.empty()) {
        on_writes_drained();
        return;
    }
    s.gather.clear();
    s.gather.reserve(s.in_flight.size());
    s.in_flight_bytes = 0;
    for (const std::string& piece : s.in_flight) {
        s.gather.emplace_back(piece.data(), piece.size());
        s.in_flight_bytes += piece.size();
    }
    stats_.write_operations.fetch_add(1, std::memory_order_relaxed);
    s.stream->async_write(
        s.gather, [self = shared_from_this()](const boost::system::error_code& ec, std::size_t) {
            self->on_write(ec);
        });
}

void connection::on_write(std::error_code ec) {
    state& s = *state_;
    const std::size_t written = s.in_flight_bytes;
    s.in_flight.clear();
    s.gather.clear();
    s.in_flight_bytes = 0;
    if (s.in_flight.capacity() > 256) {
        // A burst grew the vectors; do not keep that memory on an idle connection.
        s.in_flight.shrink_to_fit();
        s.gather.shrink_to_fit();
    }
    if (s.current == state::phase::closed) {
        return;  // terminate() already reset the counters
    }
    if (ec) {
        terminate(ec);
        return;
    }
    stats_.bytes_sent.fetch_add(written, std::memory_order_relaxed);
    {
        std::lock_guard lock(s.mutex);
        const std::size_t queued = s.queued_bytes.load(std::memory_order_relaxed) - written;
        s.queued_bytes.store(queued, std::memory_order_relaxed);
        if (!s.writable.load(std::memory_order_relaxed) &&
            (queued < s.options.write_buffer_low_water_mark || queued == 0)) {
            s.writable.store(true, std::memory_order_relaxed);
        }
    }
    notify_writability();
    start_write();
}

void connection::on_writes_drained() {
    state& s = *state_;
    if (s.current != state::phase::closing || s.fin_sent) {
        return;
    }
    // close() stopped sends, so the queue stays empty: flush complete, send our FIN.
    s.fin_sent = true;
    s.stream->async_shutdown([self = shared_from_this()](const boost::system::error_code& ec) {
        self->on_shutdown(ec);
    });
}

void connection::on_shutdown(std::error_code ec) {
    state& s = *state_;
    if (s.current == state::phase::closed) {
        return;
    }
    if (ec) {
        terminate(ec);
        return;
    }
    if (s.peer_eof) {
        terminate({});
        return;
    }
    start_reading();  // linger until the peer's FIN (or the close timer)
}

void connection::begin_close() {
    state& s = *state_;
    if (s.current == state::phase::closing || s.current == state::phase::closed) {
        return;
    }
    s.current = state::phase::closing;
    s.close_timer = std::make_unique<boost::asio::steady_timer>(s.executor);
    s.close_timer->expires_after(s.options.close_timeout);
    s.close_timer->async_wait([self = shared_from_this()](const boost::system::error_code& ec) {
        if (!ec) {
            self->on_close_timer();
        }
    });
    bool idle = false;
    {
        std::lock_guard lock(s.mutex);
        idle = !s.writer_active;
    }
    if (idle) {
        on_writes_drained();
    }
    start_reading();  // even if paused: to notice the peer's FIN
}

void connection::on_close_timer() {
    state& s = *state_;
    if (s.current != state::phase::closing) {
        return;
    }
    // Our FIN went out: everything we queued reached the kernel, the peer just never closed.
    terminate(s.fin_sent ? std::error_code{} : std::error_code(errc::close_timeout));
}

void connection::notify_writability() {
    state& s = *state_;
    if (!s.handler || s.current != state::phase::open) {
        return;
    }
    const bool writable = s.writable.load(std::memory_order_relaxed);
    if (writable != s.last_notified_writable) {
        s.last_notified_writable = writable;
        s.handler->on_writability_changed(writable);
    }
}

void connection::terminate(std::error_code reason) {
    state& s = *state_;
    if (s.current == state::phase::closed) {
        return;
    }
    s.current = state::phase::closed;
    s.closed_reason = reason;
    std::vector<std::string> dropped;
    {
        std::lock_guard lock(s.mutex);
        s.accepting_sends = false;
        dropped.swap(s.pending);
        s.queued_bytes.store(0, std::memory_order_relaxed);
    }
    if (s.close_timer) {
        s.close_timer->cancel();
    }
    if (s.connect_timer) {
        s.connect_timer->cancel();
    }
    s.stream->close();       // outstanding reads and writes complete with operation_aborted
    s.guard.ticket.reset();  // the socket is closed: its listener and address slots are free
    if (s.handler) {
        auto handler = std::move(s.handler);
        handler->on_closed(reason);
    }
}

}  // namespace starling::net
