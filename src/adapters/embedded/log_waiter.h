#pragma once

// log_waiter: what a blocked consumer poll() sleeps on. Partitions keep a list of the waiters
// of the consumers they are assigned to and notify them when new records become readable; a
// rebalance, wakeup(), close() and the log's stop() notify too.
//
// Lost-wakeup rule: the consumer clears `signaled` *before* it looks for records, and sleeps
// only while `signaled` is still false, so a notification that lands between the look and the
// sleep is never missed.
// Ready callback (log_consumer::set_ready_callback): called inside notify() and wakeup() with
// `mutex` held, so clearing it under `mutex` guarantees no call is running or will run.
// Ownership: a member of its consumer, which unregisters it from every partition before it is
// destroyed. Concurrency: all fields under `mutex`. Nothing is locked inside it except what the
// ready callback locks (the owner's scheduler, which never calls into the log while holding it).

#include <condition_variable>
#include <functional>
#include <mutex>

namespace starling::adapters::embedded {

struct log_waiter {
    std::mutex mutex;
    std::condition_variable cv;
    bool signaled = false;  // something changed since the consumer last looked
    bool woken = false;     // wakeup() was called: the next (or current) poll returns early
    std::function<void()> ready;

    void notify() {
        {
            std::lock_guard lock(mutex);
            signaled = true;
            if (ready) {
                ready();
            }
        }
        cv.notify_one();
    }
};

}  // namespace starling::adapters::embedded
