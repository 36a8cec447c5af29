#pragma once

// timer_service: one thread that fires callbacks at steady-clock instants.
//
// Structure: a binary min-heap of (deadline, id) plus a hash map id → (deadline, callback). The
// map is the truth; cancel() erases from it in O(1) and leaves a stale heap entry that the
// thread skips when it reaches the top. Keep-alive timers are re-armed on every packet, so
// stale entries could pile up: when they outnumber live timers the heap is rebuilt from the
// map (O(n), amortized O(1) per cancel), bounding memory at about twice the live timers.
// Equal deadlines fire in scheduling order (ids increase).

#include "starling/clock.h"

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

namespace starling::actor {

// Identifies one scheduled callback. Default-constructed = no timer. Ids are never reused, so
// cancelling a handle whose timer already fired is harmless.
struct timer_handle {
    std::uint64_t id = 0;
    explicit operator bool() const { return id != 0; }
    friend bool operator==(timer_handle, timer_handle) = default;
};

// Fires callbacks after a delay or at an instant, on its own thread.
//
// Callbacks must only post messages to mailboxes (see tell_after() in mailbox.h): they run on
// the single timer thread, so actor logic there would race with the actor's own turns and
// delay every other timer.
//
// Lifecycle: construct → start() → stop() (or destruction). Not restartable. Timers may be
// scheduled before start() (they fire once started, late ones at once). stop() waits for a
// callback in progress, then joins; timers still pending are dropped without firing, and later
// schedule calls return an empty handle.
//
// Time: read through the clock port (docs/style.md rule 11), so a test can inject a
// manual clock: after moving it, call poke() to make the thread re-read it. With the real clock
// nothing needs poking.
//
// Concurrency: every member is thread-safe. cancel() races with firing: it returns true only if
// the callback will not run; false means it already ran, is running now, or never existed. An
// actor that re-arms timers should therefore tag its tick messages (a generation number) and
// ignore stale ones.
class timer_service {
  public:
    using callback = std::function<void()>;
    using duration = std::chrono::steady_clock::duration;
    using time_point = std::chrono::steady_clock::time_point;

    explicit timer_service(std::string name,
                           const starling::clock& clock = system_clock::instance());
    ~timer_service();

    timer_service(const timer_service&) = delete;
    timer_service& operator=(const timer_service&) = delete;

    void start();
    void stop();

    timer_handle schedule_after(duration delay, callback fn);
    timer_handle schedule_at(time_point when, callback fn);
    bool cancel(timer_handle handle);

    // Wakes the thread to re-read the clock now (for an injected manual clock).
    void poke();

    std::size_t pending() const;
    std::uint64_t fired() const;
    const std::string& name() const { return name_; }
    // Heap entries including cancelled ones not yet skipped (memory bound check).
    std::size_t heap_size_for_test() const;

  private:
    struct entry {
        time_point deadline;
        std::uint64_t id;
    };
    struct later {
        bool operator()(const entry& a, const entry& b) const {
            return a.deadline != b.deadline ? a.deadline > b.deadline : a.id > b.id;
        }
    };
    struct timer {
        time_point deadline;
        callback fn;
    };
    enum class state : std::uint8_t { created, running, stopped };

    void run();
    void push_locked(entry e);
    void rebuild_heap_locked();

    const std::string name_;
    const starling::clock& clock_;

    mutable std::mutex mutex_;
    std::condition_variable wake_;
    state state_ = state::created;
    std::uint64_t next_id_ = 1;
    std::uint64_t fired_ = 0;
    std::vector<entry> heap_;  // min-heap by `later`, may hold cancelled (stale) entries
    std::unordered_map<std::uint64_t, timer> timers_;

    std::mutex lifecycle_mutex_;
    std::thread thread_;
};

}  // namespace starling::actor
