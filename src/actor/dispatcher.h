#pragma once

// The dispatcher: a named pool of worker threads that run mailboxes with work (docs/architecture.md
// §6). A mailbox that has work puts itself on the dispatcher's run queue once (it won the
// free → busy compare-and-set); a worker takes it off, runs one turn, and the mailbox either
// goes back to free or re-queues itself at the tail, behind every other mailbox with work.

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace starling::actor {

// Counters shared by every mailbox of one dispatcher. Plain atomics, relaxed: they are read by
// the metrics exporter, never used for synchronization. Mailboxes add their processed count
// once per turn (not per message) so workers do not contend on this cache line.
struct dispatcher_stats {
    std::atomic<std::uint64_t> messages_processed{0};
    std::atomic<std::uint64_t> tells_rejected{0};
    std::atomic<std::uint64_t> turns{0};
    // Handlers that threw (a bug: handlers must not throw); the message is lost, the actor lives.
    std::atomic<std::uint64_t> handler_failures{0};
};

namespace detail {

// Something the dispatcher can run: in practice a mailbox<Msg>. run_turn() is only ever called
// by one worker at a time for a given object (the mailbox's busy flag guarantees it).
class schedulable {
  public:
    virtual ~schedulable() = default;
    virtual void run_turn() = 0;
    // Called once by stop(), after the workers are joined, for work still queued: frees what
    // the turn would have handled. A queued message may own its actor (a call that keeps the
    // actor alive until it ran) while the actor owns the mailbox; left queued, that cycle leaks.
    virtual void discard_queued() {}
};

// The shared part of a dispatcher. Mailboxes hold a shared_ptr to it, so a mailbox that outlives
// its dispatcher (held by a connection during shutdown, say) only finds it stopped, never
// dangling.
//
// Concurrency: schedule() from any thread; start()/stop() from an owner thread (stop() never
// from a worker of this dispatcher, which would join itself). The run queue is a mutex-protected
// deque: it sees one push and one pop per *turn* (up to `throughput` messages), not per message,
// so one lock is not the bottleneck at the turn rates two to sixteen cores produce.
class dispatcher_core {
  public:
    enum class state : std::uint8_t { created, running, stopping, stopped };

    dispatcher_core(std::string name, std::size_t threads);
    ~dispatcher_core();

    dispatcher_core(const dispatcher_core&) = delete;
    dispatcher_core& operator=(const dispatcher_core&) = delete;

    void start();
    void stop();

    // Queues `work` for a turn. Accepted before start() (it runs once started); refused (false)
    // once stop() has begun, in which case the caller's busy flag stays set forever, which is
    // what we want: nothing will run it again.
    bool schedule(std::shared_ptr<schedulable> work);

    // True once stop() has begun: mailboxes refuse tells from then on.
    bool stopping() const { return state_.load(std::memory_order_acquire) >= state::stopping; }
    bool running() const { return state_.load(std::memory_order_acquire) == state::running; }

    const std::string& name() const { return name_; }
    std::size_t thread_count() const { return thread_count_; }
    std::size_t run_queue_depth() const;
    dispatcher_stats& stats() { return stats_; }
    const dispatcher_stats& stats() const { return stats_; }

  private:
    void worker_loop(std::size_t index);

    const std::string name_;
    const std::size_t thread_count_;
    std::atomic<state> state_{state::created};
    dispatcher_stats stats_;

    mutable std::mutex mutex_;
    std::condition_variable wake_;
    std::deque<std::shared_ptr<schedulable>> run_queue_;

    std::mutex lifecycle_mutex_;  // serializes start()/stop() callers
    std::vector<std::thread> workers_;
};

}  // namespace detail

// A named pool of N worker threads running mailboxes.
//
// Lifecycle: construct → start() → stop() (or destruction). Not restartable. Mailboxes created
// on it may be told before start(); their turns run once it starts.
//
// stop() lets each worker finish the turn it is running, then joins the threads. Mailboxes
// still waiting on the run queue are *dropped*, not drained: their pending messages are never
// handled and are destroyed at once (not with the mailbox: a message may own the mailbox's
// actor, and the actor the mailbox — that cycle would leak). Draining cannot be bounded in general
// (actors that keep telling each other would never let it finish), so an owner that needs a clean
// hand-off sends its actors a stop control message and waits for their acknowledgement *before*
// stopping the dispatcher. After stop() every tell() on its mailboxes returns false.
//
// Ownership: the dispatcher owns its threads and run queue; mailboxes share the core, so the
// dispatcher object may be destroyed before the last mailbox (which then refuses every tell).
//
// Concurrency: start()/stop() from an owning thread, never from one of this dispatcher's workers
// (stop() there panics: a thread cannot join itself). Everything else is thread-safe.
class dispatcher {
  public:
    dispatcher(std::string name, std::size_t threads);
    ~dispatcher();

    dispatcher(const dispatcher&) = delete;
    dispatcher& operator=(const dispatcher&) = delete;

    void start() { core_->start(); }
    void stop() { core_->stop(); }

    bool running() const { return core_->running(); }
    bool stopping() const { return core_->stopping(); }
    const std::string& name() const { return core_->name(); }
    std::size_t thread_count() const { return core_->thread_count(); }
    // Mailboxes waiting for a worker (a saturation signal for metrics).
    std::size_t run_queue_depth() const { return core_->run_queue_depth(); }
    const dispatcher_stats& stats() const { return core_->stats(); }

    // For mailbox<Msg> (and tests): the shared core a mailbox keeps a reference to.
    const std::shared_ptr<detail::dispatcher_core>& core() const { return core_; }

  private:
    std::shared_ptr<detail::dispatcher_core> core_;
};

}  // namespace starling::actor
