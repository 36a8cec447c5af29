#pragma once

// log_waiter: what a blocked consumer poll() sleeps on. Partitions keep a list of the waiters
// of the consumers they are assigned to and notify them when new records become readable; a
// rebalance, wakeup(), close() and the log's stop() notify too.
//
// Lost-wakeup rule: the consumer clears `signaled` *before* it looks for records, and sleeps
// only while `signaled` is still false, so a notification that lands between the look and the
// sleep is never missed.
// Ownership: a member of its consumer, which unregisters it from every partition before it is
// destroyed. Concurrency: all fields under `mutex` (a leaf lock: nothing is locked inside it).

#include <condition_variable>
#include <mutex>

namespace starling::adapters::embedded {

struct log_waiter {
    std::mutex mutex;
    std::condition_variable cv;
    bool signaled = false;  // something changed since the consumer last looked
    bool woken = false;     // wakeup() was called: the next (or current) poll returns early

    void notify() {
        {
            std::lock_guard lock(mutex);
            signaled = true;
        }
        cv.notify_one();
    }
};

}  // namespace starling::adapters::embedded
