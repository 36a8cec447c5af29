#pragma once

// connection: one client's byte stream, whatever the transport (TCP now; TLS and WebSocket
// slot in as further `transport` implementations, see transport.h). No Asio in this header:
// the broker includes it everywhere, and the Asio machinery lives behind the pimpl.

#include "net/admission.h"
#include "net/tls_peer_info.h"

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <system_error>

namespace starling::net {

class transport;

struct connection_options {
    // Outbound backpressure (docs/architecture.md §8): above `high` queued bytes the connection is
    // non-writable; it is writable again once the queue drains below `low` (or empties).
    std::size_t write_buffer_high_water_mark = 1280 * 1024;
    std::size_t write_buffer_low_water_mark = 640 * 1024;
    // send() is still accepted while non-writable (the caller decides what to skip), but a
    // queue above this many bytes aborts the connection with errc::write_queue_overflow: a
    // caller that ignores writability must not be able to exhaust memory. 0 = 4 × high.
    std::size_t write_buffer_hard_limit = 0;
    // close(): how long to wait for the write queue to flush (and for the peer to acknowledge
    // our FIN) before closing hard.
    std::chrono::milliseconds close_timeout{5000};
};

// What a listener attaches to a connection it accepted (connection::create).
struct accept_guard {
    // The listener, address and descriptor slots the socket holds (admission.h); released when
    // the socket closes.
    std::shared_ptr<admission_control::ticket> ticket;
    // Unless the owner called connect_completed() by then, the connection is aborted with
    // errc::connect_timeout at this instant (accept time + the listener's connect timeout, so
    // the handshake's time counts). max() = no deadline.
    std::chrono::steady_clock::time_point connect_deadline =
        std::chrono::steady_clock::time_point::max();
    // Called once, on the strand, when the deadline closes the connection (for metrics).
    std::function<void()> on_connect_timeout;
};

// Per-connection counters (relaxed atomics, for metrics only).
struct connection_stats {
    std::atomic<std::uint64_t> bytes_received{0};
    std::atomic<std::uint64_t> bytes_sent{0};
    // Gathered writes issued; bytes_sent / write_operations shows how well sends coalesce.
    std::atomic<std::uint64_t> write_operations{0};
};

// What a connection reports to its owner (typically the client actor's I/O side).
// All three are called on the connection's strand (an I/O thread), one at a time, in order, and
// must not block. They may call any connection member.
class connection_handler {
  public:
    virtual ~connection_handler() = default;

    // Received bytes, valid only during the call (copy what the decoder must keep).
    virtual void on_bytes(std::span<const std::uint8_t> bytes) = 0;

    // The write queue crossed the high mark (false) or drained below the low mark (true).
    // Transitions that cancel out before the strand reports them may be coalesced; the value
    // passed is always the current state, and consecutive calls always alternate.
    virtual void on_writability_changed(bool writable) = 0;

    // Exactly once, last, after the socket is closed. `reason` is empty after a successful
    // close(), errc::peer_closed when the peer hung up, errc::aborted after abort(),
    // errc::write_queue_overflow / errc::close_timeout, or the system error that broke the
    // stream. The connection drops its reference to the handler right after.
    virtual void on_closed(std::error_code reason) = 0;
};

// One client connection.
//
// Lifecycle: create() (the listener does) → start(handler) → ... → close() or abort() or a peer
// or I/O failure → on_closed(reason). Sends made before start() are written; nothing is read
// before start(). While open, pending I/O keeps the connection alive, so the owner may drop
// its reference and still get on_closed. A connection with no I/O pending (reading paused,
// nothing to write) that loses its last reference is destroyed and its socket closed without
// on_closed: the handler is being destroyed with it anyway.
//
// Ownership: shared_ptr-owned; it owns its transport, and holds a shared_ptr to its handler
// from start() until on_closed() returns. That cycle (the handler usually holds the
// connection) is intentional: it is broken when the connection closes.
//
// Concurrency: strand-confined inside; every public member is thread-safe. send() takes a short
// mutex (the write queue) and posts to the strand only when the writer is idle; pause/resume
// are atomic flags (resume posts); close()/abort() post.
class connection final : public std::enable_shared_from_this<connection> {
    struct private_tag {};

  public:
    static std::shared_ptr<connection> create(std::unique_ptr<transport> stream,
                                              const connection_options& options,
                                              accept_guard guard = {});

    connection(private_tag, std::unique_ptr<transport> stream, const connection_options& options,
               accept_guard guard);
    ~connection();

    connection(const connection&) = delete;
    connection& operator=(const connection&) = delete;

    // Starts reading and reporting to `handler`. Call once; later calls are ignored. On a
    // connection that already closed, on_closed is called (on the strand) straight away.
    void start(std::shared_ptr<connection_handler> handler);

    // Queues `bytes` for writing; coalesced with other queued sends into one gathered write.
    // Returns false (and drops the bytes) once close()/abort() was called or the connection
    // failed, or when this send would pass the hard limit, which aborts the connection.
    bool send(std::string bytes);

    // False while queued bytes are above the high water mark (see connection_options). Updated
    // synchronously by send(), so a caller sees its own send's effect at once.
    bool is_writable() const;
    // Bytes accepted by send() and not yet written to the socket (queued plus in flight).
    std::size_t queued_bytes() const;

    // TCP backpressure: stop / restart reading the socket. Paused from inside on_bytes, no
    // further on_bytes happens until resume; paused from another thread, at most one read
    // already in progress may still be delivered. While paused the kernel receive buffer fills
    // and the peer's sends stall.
    void pause_reading();
    void resume_reading();
    bool reading_paused() const;

    // Graceful: stop accepting sends, flush the queue, send FIN, wait for the peer's FIN (so
    // unread data in our receive buffer does not turn the close into a reset that destroys
    // what we flushed), then close; all bounded by close_timeout. Bytes received meanwhile are
    // dropped. on_closed({}) once the flush completed, errc::close_timeout if it did not.
    void close();
    // Immediate: drop the queue, close the socket, on_closed(errc::aborted).
    void abort();

    // The owner received what the connect deadline waits for (a complete MQTT CONNECT): the
    // deadline no longer applies. Any thread; idempotent. A deadline that fired before this call
    // won (the connection is closing with errc::connect_timeout).
    void connect_completed();

    std::uint64_t id() const { return id_; }
    const std::string& remote_address() const { return remote_address_; }
    const connection_stats& stats() const { return stats_; }
    // The TLS peer (protocol, cipher, client certificate chain) for TLS and WSS connections,
    // nullptr otherwise. Copied from the transport at creation; readable from any thread.
    const tls_peer_info* tls_peer() const { return tls_peer_.get(); }

  private:
    struct state;  // connection.cpp: the write queue, the strand-side state, the Asio objects

    void run_start(std::shared_ptr<connection_handler> handler);
    void start_reading();
    void on_read(std::error_code ec, std::span<const std::uint8_t> bytes);
    void start_write();
    void on_write(std::error_code ec);
    void on_writes_drained();
    void on_shutdown(std::error_code ec);
    void begin_close();
    void on_close_timer();
    void on_connect_deadline();
    void notify_writability();
    void terminate(std::error_code reason);
    template <class F>
    void post(F&& f);

    const std::uint64_t id_;
    const std::string remote_address_;
    const std::unique_ptr<const tls_peer_info> tls_peer_;
    connection_stats stats_;
    std::unique_ptr<state> state_;
};

}  // namespace starling::net
