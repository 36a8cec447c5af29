#pragma once

// worker_pool: a few threads for the CPU-heavy or blocking parts of authentication (bcrypt
// verification costs tens of milliseconds by design), so they never run on an I/O thread or
// inside an actor turn.
//
// Two lanes, each a bounded FIFO: `normal`, and `low` for work on behalf of source addresses
// that failed authentication recently (auth_request::suspect). Workers always take the normal
// lane first, so a wrong-password flood queues behind everyone else instead of in front.
//
// Bounded in space and in time: submit() refuses work once `queue_limit` jobs wait in that lane
// (the caller answers "busy" instead of queueing without limit: a CONNECT flood must not grow
// memory), and a job that waited longer than `max_queue_wait` is not run — its `on_expired`
// runs instead, so the caller can answer "busy" before its own deadline passes rather than have
// the answer arrive too late to matter. Expired jobs are found at the front of either lane
// whenever a worker looks for work, so a starved low lane is still emptied promptly.
//
// Lifecycle: threads start in the constructor; stop() (or the destructor) drops the jobs still
// queued (neither run nor expired) and joins. Jobs already running finish first. Concurrency:
// submit() from any thread; jobs and on_expired run on the pool's threads.

#include "starling/clock.h"

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace starling::auth {

class worker_pool {
  public:
    enum class lane : std::uint8_t { normal, low };

    // `max_queue_wait` 0 = jobs never expire.
    worker_pool(std::string name, std::size_t threads, std::size_t queue_limit,
                std::chrono::milliseconds max_queue_wait = std::chrono::milliseconds(0),
                const starling::clock& clk = starling::system_clock::instance());
    ~worker_pool();

    worker_pool(const worker_pool&) = delete;
    worker_pool& operator=(const worker_pool&) = delete;

    // False when the lane is full or the pool stopped; the job is then dropped unrun (and
    // on_expired is not called either).
    bool submit(std::function<void()> job, std::function<void()> on_expired = {},
                lane l = lane::normal);
    void stop();

    // Jobs waiting in a lane (for tests and metrics).
    std::size_t queued(lane l) const;
    // Jobs not run because they waited past max_queue_wait, since start.
    std::uint64_t expired() const;

  private:
    struct queued_job {
        std::function<void()> job;
        std::function<void()> on_expired;
        starling::clock::steady_point enqueued;
    };
    void run();
    std::deque<queued_job>& lane_of(lane l) { return l == lane::low ? low_ : normal_; }

    const std::size_t queue_limit_;
    const std::chrono::milliseconds max_queue_wait_;
    const starling::clock& clock_;
    mutable std::mutex mutex_;
    std::condition_variable wake_;
    std::deque<queued_job> normal_;
    std::deque<queued_job> low_;
    std::uint64_t expired_ = 0;
    bool stopping_ = false;
    std::vector<std::thread> threads_;
};

}  // namespace starling::auth
