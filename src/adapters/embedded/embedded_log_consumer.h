#pragma once

// embedded_log_consumer: the embedded log's log_consumer. Either a member of a consumer group
// (spec.topics: the log's group coordinator assigns it partitions and moves them at once when
// members join or leave) or manually assigned (spec.assignment).
//
// Reading: per assigned partition it keeps a position (next offset to read) and reads with
// pread through log_partition::read() into one reusable buffer, so a consumer costs a few KiB
// however far behind it is. poll() sleeps on its log_waiter, which the partitions notify when
// records are published; the same notification calls the ready callback, when one is set.
//
// Lifecycle: created by embedded_message_log::create_consumer() (owned by the caller through
// unique_ptr), close() or destruction leaves the group. It keeps the log's engine alive; after
// the log stops, poll() fails with log_errc::stopped.
// Concurrency: one thread at a time calls the log_consumer methods (as with Kafka), except
// wakeup(), which any thread may call. The engine calls assign() and notify_stopped() from
// other threads (another member joining, topic admin, stop()); `mutex_` guards the assignment
// against them.

#include "adapters/embedded/log_waiter.h"
#include "starling/message_log.h"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace starling::adapters::embedded {

class log_engine;
class log_partition;

class embedded_log_consumer final : public log_consumer {
  public:
    struct assigned_partition {
        topic_partition tp;
        std::shared_ptr<log_partition> partition;
        std::optional<std::int64_t> committed;  // where to start when newly assigned
    };

    embedded_log_consumer(std::shared_ptr<log_engine> engine, consumer_spec spec,
                          std::string member_key, std::size_t fetch_buffer_bytes);
    ~embedded_log_consumer() override;

    result<std::vector<log_record>> poll(std::chrono::milliseconds timeout) override;
    status commit(const std::vector<std::pair<topic_partition, std::int64_t>>& next) override;
    status seek(const topic_partition& tp, std::int64_t offset) override;
    void pause(const std::vector<topic_partition>& tps) override;
    void resume(const std::vector<topic_partition>& tps) override;
    std::vector<topic_partition> assignment() const override;
    result<std::int64_t> end_offset(const topic_partition& tp) override;
    void wakeup() override;
    void close() override;
    bool set_ready_callback(std::function<void()> ready) override;

    // ---- engine side ----
    const consumer_spec& spec() const { return spec_; }
    // Sort key of a group member: instance_id first (stable across restarts), else join order.
    const std::string& member_key() const { return member_key_; }
    bool group_managed() const { return !spec_.topics.empty(); }
    bool subscribes_to(std::string_view topic) const;
    // Replaces the assignment. Partitions kept keep their position and pause state; new ones
    // start at `committed`, else at the reset policy. Called with the engine's group lock held.
    void assign(std::vector<assigned_partition> next);
    void notify_stopped() { waiter_.notify(); }

  private:
    struct partition_state {
        topic_partition tp;
        std::shared_ptr<log_partition> partition;
        std::int64_t position = 0;
        bool paused = false;
    };

    std::int64_t reset_position(const log_partition& partition) const;
    partition_state* find(const topic_partition& tp);
    // Reads what is available on unpaused partitions (mutex_ held).
    result<std::vector<log_record>> fetch();

    const std::shared_ptr<log_engine> engine_;
    const consumer_spec spec_;
    const std::string member_key_;

    mutable std::mutex mutex_;
    std::vector<partition_state> parts_;  // guarded by mutex_
    bool closed_ = false;                 // guarded by mutex_

    log_waiter waiter_;
    std::vector<char> buffer_;  // poll thread only
    std::size_t rotation_ = 0;  // poll thread only: partition to read first, for fairness
};

}  // namespace starling::adapters::embedded
