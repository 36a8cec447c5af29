#pragma once

// mailbox<Msg>: the queue-and-scheduling half of an actor (docs/architecture.md §6).
//
// Structure. Two lock-free MPSC queues (mpsc_queue.h): *control* (connect, disconnect, stop,
// timer ticks) and *normal* (everything else, bounded by `capacity`). Two flags make the whole
// scheduling protocol:
//
//   tell:  reserve a slot (normal only) → push → pushed_ = true → CAS busy_ false→true; the
//          winner queues the mailbox on the dispatcher, losers return at once (the mailbox is
//          already queued or running).
//   turn:  (one worker) pushed_ = false → loop { drain control; handle one normal } until
//          `throughput` normal messages were handled or both queues look empty → busy_ = false
//          → if a limit stopped the turn or pushed_ is set, CAS busy_ again and re-queue at the
//          tail of the run queue.
//
// The lost wake-up. A producer that pushes while a turn is ending must not be forgotten. The
// producer links its node, sets pushed_, then CASes busy_; the consumer stores busy_ = false,
// then reads pushed_; all seq_cst. Either the producer's CAS sees the mailbox free (and
// schedules it) or the consumer sees pushed_ (and reschedules): both cannot miss. After
// busy_ = false the consumer touches only atomics of the mailbox, never queue nodes, since
// another worker may own the queues by then. A pop that finds nothing because an earlier
// producer is between its two push steps simply ends the turn: that producer has yet to CAS
// and will schedule the mailbox itself, so no worker spins waiting for it.
//
// Guarantees: a mailbox is run by at most one worker at a time (busy_ is held from the
// winning CAS until the end of the turn), so the handler needs no locks for actor state;
// messages from one sender thread are handled in send order (FIFO queues), with control
// messages overtaking normal ones by design: before each normal message the turn drains every
// control message queued (up to max_control_per_turn per turn, a guard against an actor that
// feeds itself control messages forever).

#include "actor/dispatcher.h"
#include "actor/mpsc_queue.h"
#include "actor/timer_service.h"
#include "base/assert.h"

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <type_traits>
#include <utility>

namespace starling::actor {

struct mailbox_options {
    // Bound of the normal queue. tell() returns false beyond it so the sender can push back
    // (stop reading the socket, skip a non-persistent copy, pause a consumer).
    std::size_t capacity = 1024;
    // Normal messages handled per turn before the worker moves on to another mailbox.
    std::uint32_t throughput = 5;
};

// Which queue a message goes to.
enum class lane : std::uint8_t { normal, control };

// Per-mailbox counters (relaxed atomics, for metrics only).
struct mailbox_stats {
    std::atomic<std::uint64_t> processed{0};
    // tell() on a full normal queue. Tells refused because the mailbox is closed or its
    // dispatcher stopped are not counted: they are shutdown, not backpressure.
    std::atomic<std::uint64_t> rejected{0};
};

// A bounded actor mailbox for messages of type Msg (typically a std::variant of the actor's
// message structs), handled one at a time by `handler` on a worker of `dispatcher`.
//
// Lifecycle: create() → tell()s → close() (or last reference dropped). After close() every
// tell returns false and messages still queued are discarded by the next turn (or by the
// destructor), never handled. A tell racing with close() may return true and still be
// discarded: it counts as pending at close.
//
// Ownership: shared_ptr-owned. The dispatcher holds a reference while the mailbox is queued or
// running, so a running handler never outlives its mailbox. The handler owns the actor state
// (e.g. a lambda capturing a unique_ptr to it): it is destroyed with the mailbox, on whichever
// thread drops the last reference. A handler must not capture a shared_ptr to its own mailbox
// (a cycle); capture a weak_ptr or raw pointer for self-tells.
//
// Concurrency: tell(), tell_control(), close(), depth(), stats() from any thread, including
// from inside the handler (self-tells are handled in a later turn, never re-entrantly). The
// handler runs on one worker at a time, must not block, and must not throw (a throw is counted
// as a bug in dispatcher_stats::handler_failures and the message is lost).
//
// Why control is unbounded: control messages are produced by the broker itself (one connect,
// one disconnect, one stop, timer ticks an actor armed), never one per byte or packet a client
// sends, so their number per mailbox is bounded by the actor's own lifecycle. Refusing them
// would lose a disconnect or a stop, which is worse than the few bytes they occupy.
template <class Msg>
class mailbox final : public detail::schedulable,
                      public std::enable_shared_from_this<mailbox<Msg>> {
    struct private_tag {};

  public:
    using message_type = Msg;
    using handler_type = std::function<void(Msg&&)>;

    static std::shared_ptr<mailbox> create(const dispatcher& on, handler_type handler,
                                           mailbox_options options = {}) {
        return std::make_shared<mailbox>(private_tag{}, on.core(), std::move(handler), options);
    }

    mailbox(private_tag, std::shared_ptr<detail::dispatcher_core> core, handler_type handler,
            mailbox_options options)
        : core_(std::move(core)),
          handler_(std::move(handler)),
          capacity_(options.capacity),
          throughput_(options.throughput == 0 ? 1 : options.throughput) {
        STARLING_ASSERT(handler_);
    }

    mailbox(const mailbox&) = delete;
    mailbox& operator=(const mailbox&) = delete;

    // Queues a normal message. False when the normal queue is full (counted in
    // stats().rejected), the mailbox is closed, or its dispatcher is stopping. A refused
    // message is not moved from, so the caller still owns it (to retry, park or drop).
    bool tell(Msg&& message) {
        if (!accepting()) {
            return false;
        }
        std::size_t depth = normal_depth_.load(std::memory_order_relaxed);
        do {
            if (depth >= capacity_) {
                stats_.rejected.fetch_add(1, std::memory_order_relaxed);
                core_->stats().tells_rejected.fetch_add(1, std::memory_order_relaxed);
                return false;
            }
        } while (!normal_depth_.compare_exchange_weak(depth, depth + 1, std::memory_order_relaxed));
        normal_.push(new node(std::move(message)));
        pushed_.store(true, std::memory_order_seq_cst);
        schedule_if_free();
        return true;
    }

    // Queues a control message: handled before any normal message not yet started, never
    // refused for capacity (see the class comment). False only when closed or stopping (the
    // message is then not moved from).
    bool tell_control(Msg&& message) {
        if (!accepting()) {
            return false;
        }
        control_depth_.fetch_add(1, std::memory_order_relaxed);
        control_.push(new node(std::move(message)));
        pushed_.store(true, std::memory_order_seq_cst);
        schedule_if_free();
        return true;
    }

    bool tell(lane which, Msg&& message) {
        return which == lane::control ? tell_control(std::move(message)) : tell(std::move(message));
    }

    // Stops accepting; queued messages are discarded by the next turn without being handled.
    // Callable from the handler itself (the rest of the turn is discarded). Idempotent.
    void close() {
        closed_.store(true, std::memory_order_seq_cst);
        schedule_if_free();  // a turn frees the queued messages now rather than at destruction
    }

    bool closed() const { return closed_.load(std::memory_order_acquire); }

    // Messages queued, both lanes (approximate while producers race; exact when quiet).
    std::size_t depth() const {
        return normal_depth_.load(std::memory_order_relaxed) +
               control_depth_.load(std::memory_order_relaxed);
    }
    std::size_t capacity() const { return capacity_; }
    const mailbox_stats& stats() const { return stats_; }

  private:
    using queue = mpsc_queue<Msg>;

    // Control messages per turn. Far above what the broker produces (a handful per actor life);
    // it only stops an actor that keeps telling itself control messages from holding a worker
    // forever. Control still overtakes normal: the next turn starts with control again.
    static constexpr std::uint32_t max_control_per_turn = 256;
    using node = typename queue::value_node;

    bool accepting() const {
        return !closed_.load(std::memory_order_acquire) && !core_->stopping();
    }

    void schedule_if_free() {
        bool expected = false;
        if (busy_.compare_exchange_strong(expected, true, std::memory_order_seq_cst)) {
            // Refused only once the dispatcher is stopping: no turn will come, and this thread,
            // owning the flag, frees the queued messages — a queued message may own the actor
            // that owns this mailbox, a cycle otherwise.
            auto self = this->shared_from_this();  // the actor may die with its messages
            if (!core_->schedule(self)) {
                discard_while_stopped();
            }
        }
    }

    // No turn will come (the dispatcher is stopping). The owner of busy_ frees what is queued,
    // gives the flag back and takes it again when more was pushed meanwhile: a producer that
    // passed accepting() just before the stop pushes after the discard, fails to take the flag
    // while it is held here, and relies on this re-check (or takes the flag itself once it is
    // free) — else its message, which may own the actor, would never be freed.
    void discard_while_stopped() {
        for (;;) {
            pushed_.store(false, std::memory_order_seq_cst);
            discard_all();
            busy_.store(false, std::memory_order_seq_cst);
            if (!pushed_.load(std::memory_order_seq_cst)) {
                return;
            }
            bool expected = false;
            if (!busy_.compare_exchange_strong(expected, true, std::memory_order_seq_cst)) {
                return;  // the producer took the flag: it frees its message itself
            }
        }
    }

    void run_turn() override {
        // Consume the "pushed" signal first: every node linked before a producer's signal that
        // this exchange reads is visible to the pops below (release/acquire through pushed_).
        pushed_.exchange(false, std::memory_order_seq_cst);

        std::uint64_t handled = 0;
        std::uint32_t normal_handled = 0;
        std::uint32_t control_handled = 0;
        bool more = false;  // stopped by a per-turn limit, not by running dry
        for (;;) {
            if (closed_.load(std::memory_order_acquire)) {
                discard_all();
                break;
            }
            if (node* control = control_.pop()) {
                control_depth_.fetch_sub(1, std::memory_order_relaxed);
                deliver(control);
                ++handled;
                if (++control_handled == max_control_per_turn) {
                    more = true;  // a self-feeding control loop: yield the worker
                    break;
                }
                continue;  // control first: drain it before the next normal message
            }
            if (normal_handled == throughput_) {
                more = true;
                break;
            }
            node* normal = normal_.pop();
            if (normal == nullptr) {
                break;
            }
            normal_depth_.fetch_sub(1, std::memory_order_relaxed);
            deliver(normal);
            ++handled;
            ++normal_handled;
        }
        if (handled != 0) {
            stats_.processed.fetch_add(handled, std::memory_order_relaxed);
            core_->stats().messages_processed.fetch_add(handled, std::memory_order_relaxed);
        }

        // From here on this thread no longer owns the mailbox: only atomics may be touched
        // (another worker may already be popping).
        busy_.store(false, std::memory_order_seq_cst);
        if (more || pushed_.load(std::memory_order_seq_cst)) {
            schedule_if_free();  // yield: back of the run queue, behind other mailboxes
        }
    }

    // The dispatcher stopped with this mailbox queued: its turn never comes.
    void discard_queued() override { discard_while_stopped(); }

    void deliver(node* raw) {
        std::unique_ptr<node> owned(raw);
        try {
            handler_(std::move(owned->value));
        } catch (...) {
            // Handlers must not throw (docs/style.md rule 5); keep the worker and the actor alive.
            core_->stats().handler_failures.fetch_add(1, std::memory_order_relaxed);
            STARLING_BUG(false, "actor handler threw; message dropped");
        }
    }

    void discard_all() {
        while (node* control = control_.pop()) {
            control_depth_.fetch_sub(1, std::memory_order_relaxed);
            delete control;
        }
        while (node* normal = normal_.pop()) {
            normal_depth_.fetch_sub(1, std::memory_order_relaxed);
            delete normal;
        }
    }

    const std::shared_ptr<detail::dispatcher_core> core_;
    handler_type handler_;
    const std::size_t capacity_;
    const std::uint32_t throughput_;

    std::atomic<bool> busy_{false};
    std::atomic<bool> pushed_{false};  // a node was linked since the current turn began
    std::atomic<bool> closed_{false};
    std::atomic<std::size_t> normal_depth_{0};
    std::atomic<std::size_t> control_depth_{0};
    mailbox_stats stats_;

    queue control_;
    queue normal_;
};

// Timer helpers: the only sanctioned way for a timer to reach actor logic is a message. The
// callback runs on the timer thread and only tells the mailbox; the handler runs on a worker.
// Holds a weak reference: a mailbox that died before the deadline gets nothing. A tell refused
// (closed, or full on lane::normal) drops the message, which is why ticks default to control.
template <class Msg>
timer_handle tell_after(timer_service& timers, std::chrono::steady_clock::duration delay,
                        const std::shared_ptr<mailbox<Msg>>& target,
                        std::type_identity_t<Msg>&& message, lane which = lane::control) {
    // std::function needs a copyable callable; the shared_ptr carries a move-only Msg.
    return timers.schedule_after(delay,
                                 [weak = std::weak_ptr<mailbox<Msg>>(target),
                                  payload = std::make_shared<Msg>(std::move(message)), which] {
                                     if (auto box = weak.lock()) {
                                         box->tell(which, std::move(*payload));
                                     }
                                 });
}

template <class Msg>
timer_handle tell_at(timer_service& timers, std::chrono::steady_clock::time_point when,
                     const std::shared_ptr<mailbox<Msg>>& target,
                     std::type_identity_t<Msg>&& message, lane which = lane::control) {
    return timers.schedule_at(when, [weak = std::weak_ptr<mailbox<Msg>>(target),
                                     payload = std::make_shared<Msg>(std::move(message)), which] {
        if (auto box = weak.lock()) {
            box->tell(which, std::move(*payload));
        }
    });
}

}  // namespace starling::actor
