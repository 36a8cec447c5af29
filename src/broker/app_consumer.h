#pragma once

// app_consumer: the log consumer behind one source of a connected persistent APPLICATION client
// (application_delivery.h): its own topic msg.app.<clientId>, or one shared subscription's
// msg.app.shared.<filter>.
//
// It makes sure the topic exists (idempotent), reads partition 0 of msg.app.<clientId> with
// manual assignment under the group <prefix>.app.<clientId> (or, for a shared source, subscribes
// to msg.app.shared.<filter> in the share's group and drops buffered records of partitions the
// group took away), and keeps at most `buffer_limit` records in a buffer the actor drains. A
// full buffer pauses the partitions, so a full in-flight window or a non-writable channel (the
// actor stops draining) stops the reading; draining below half resumes it. Commits are applied
// from the consumer's turn (a log consumer is used by one thread at a time), from the target the
// actor publishes, at most one poll interval after it was set: one commit covers every
// acknowledgement of the interval.
//
// Threads: the consumer runs as a task of the node's consumer_pool — a few threads for every
// APPLICATION consumer of the node, not one thread each. A turn polls without waiting; the log
// consumer's ready callback (records, a rebalance), room in the buffer, a commit due, a retry
// after a failure and an idle tick (a Kafka member must poll regularly to stay in its group)
// bring the next turn. Setup (the admin call that creates the topic, the shared filter's
// lookup) runs in a turn too and blocks that pool thread for its duration.
//
// Lifecycle: start() schedules the first turn; stop() — or the destructor — waits for a turn in
// progress, commits the last target and closes the consumer (it leaves the group: its
// partitions move to the other members at once). Called from inside the consumer's own turn (the
// actor's wake-up dropped the last reference to the actor), it returns at once and the pool
// finishes the consumer right after the turn.
// Concurrency: take()/set_commit()/owns()/stop() from the actor; everything else in turns.

#include "base/result.h"
#include "broker/consumer_pool.h"
#include "starling/message_log.h"

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace starling::broker {

class app_consumer {
  public:
    struct options {
        std::string topic;
        std::string group;
        topic_spec spec;
        // Shared source: subscribe with group management (the members split the partitions);
        // otherwise read partition 0 by manual assignment.
        bool group_managed = false;
        // Makes the topic exist before the consumer is created (retried until it succeeds);
        // empty: create_topic(spec).
        std::function<status()> prepare;
        std::size_t buffer_limit = 1000;
        // How long a commit target may wait before it is committed; the first retry delay.
        std::chrono::milliseconds poll_interval{100};
        // A turn at least this often while nothing else asks for one.
        std::chrono::milliseconds idle_tick{1000};
    };
    // `wake` is called (from a pool thread) when records were added to an empty buffer.
    app_consumer(consumer_pool& pool, message_log& log, options opts, std::function<void()> wake);
    ~app_consumer();
    app_consumer(const app_consumer&) = delete;
    app_consumer& operator=(const app_consumer&) = delete;

    void start();
    void stop();

    // Moves out up to `max` buffered records, oldest first.
    std::vector<log_record> take(std::size_t max);
    // The next offset the group should resume from in `partition`; committed in a later turn
    // (only while the consumer owns the partition).
    void set_commit(std::int32_t partition, std::int64_t next_offset);
    // False once the group gave `partition` to another member: its records are the new owner's.
    // Always true for manual assignment.
    bool owns(std::int32_t partition) const;
    // Partitions the group gives this member now (group-managed; 1 for manual assignment).
    std::size_t owned_count() const;

  private:
    class task;
    consumer_pool& pool_;
    std::shared_ptr<task> task_;
    bool stopped_ = false;
};

}  // namespace starling::broker
