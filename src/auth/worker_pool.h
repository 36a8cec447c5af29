#pragma once

// worker_pool: a few threads for the CPU-heavy or blocking parts of authentication (bcrypt
// verification costs tens of milliseconds by design), so they never run on an I/O thread or
// inside an actor turn.
//
// Bounded: submit() refuses work once `queue_limit` jobs wait, and the caller answers "busy"
// instead of queueing without limit (a CONNECT flood must not grow memory).
//
// Lifecycle: threads start in the constructor; stop() (or the destructor) drops the jobs still
// queued and joins. Jobs already running finish first. Concurrency: submit() from any thread.

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace starling::auth {

class worker_pool {
  public:
    worker_pool(std::string name, std::size_t threads, std::size_t queue_limit);
    ~worker_pool();

    worker_pool(const worker_pool&) = delete;
    worker_pool& operator=(const worker_pool&) = delete;

    // False when the queue is full or the pool stopped; the job is then dropped unrun.
    bool submit(std::function<void()> job);
    void stop();

  private:
    void run();

    const std::size_t queue_limit_;
    std::mutex mutex_;
    std::condition_variable wake_;
    std::deque<std::function<void()>> jobs_;
    bool stopping_ = false;
    std::vector<std::thread> threads_;
};

}  // namespace starling::auth
