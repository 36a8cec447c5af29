#pragma once

// log_engine: the machinery behind embedded_message_log — topic table, producer queue and
// writer thread (group commit), consumer-group coordinator, committed offsets, and the
// maintenance thread (retention, compaction).
//
// Produce path: produce() resolves the partition and appends a request to a bounded queue
// (fails fast past the bound). The writer thread takes the whole queue, stages every record
// into its partition's buffer, writes each touched partition file with one pwrite, fdatasyncs
// per fsync_policy, publishes the new records to readers, then runs the callbacks in produce
// order. Rejected requests travel through the same queue so their callbacks also run on the
// writer thread, in order.
//
// Threads: the writer ("slog-writer": all appends and every produce callback) and the
// maintenance thread ("slog-maint"); consumers read on their callers' threads.
// Locks, in the order they may nest: admin_mutex_ (create/delete topic) -> maintenance_mutex_
// -> io_mutex_ (held by the writer while it touches files) -> groups_mutex_ -> a consumer's
// mutex -> a partition's mutex -> a log_waiter's mutex. topics_mutex_, queue_mutex_,
// completion_mutex_, health_mutex_, maintenance_wait_mutex_ and the offset store's mutex are
// taken with nothing else acquired inside them.
//
// Disk space: the writer reads the free space of data_dir's file system (embedded_log_config
// watermarks) before a batch when a reading is due, and on its own every disk_check_interval
// while idle, so both the slowed and the refusing state end by themselves when space returns.
// A failed write or fdatasync fails that batch and makes healthy() false; the next batch tries
// again and a success clears it (no restart needed).
// Lifecycle: open() recovers data_dir/log and starts the threads; stop() drains the queue
// (every callback runs), syncs, joins the threads and fails later polls. Shared (shared_ptr)
// by the facade and every consumer, so a consumer that outlives the facade stays valid.

#include "adapters/embedded/log_config.h"
#include "adapters/embedded/log_offset_store.h"
#include "adapters/embedded/log_partition.h"
#include "base/result.h"
#include "starling/message_log.h"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace starling::adapters::embedded {

class embedded_log_consumer;

class log_engine : public std::enable_shared_from_this<log_engine> {
  public:
    static result<std::shared_ptr<log_engine>> open(embedded_log_config config);
    ~log_engine();
    log_engine(const log_engine&) = delete;
    log_engine& operator=(const log_engine&) = delete;

    void stop();

    status create_topic(const topic_spec& spec);
    status delete_topic(std::string_view name);
    result<std::int32_t> partition_count(std::string_view topic) const;
    void produce(std::string_view topic, std::string key, std::string value,
                 std::vector<log_header> headers, produce_callback done, std::int32_t partition);
    result<std::unique_ptr<log_consumer>> create_consumer(const consumer_spec& spec);
    status flush(std::chrono::milliseconds timeout);
    // False while a write or fdatasync error is outstanding (until a later one succeeds) and
    // while produces are refused for low disk space.
    bool healthy() const;
    embedded_log_status log_status() const;
    std::size_t queue_depth();

    // ---- for consumers ----
    bool stopped() const { return stopped_.load(std::memory_order_acquire); }
    result<std::shared_ptr<log_partition>> find_partition(const topic_partition& tp) const;
    log_offset_store& offsets() { return *offsets_; }
    // Removes a closing consumer: its group rebalances and it loses its partitions.
    void leave(embedded_log_consumer* consumer);

    // ---- test hooks ----
    void run_maintenance_for_test() { run_maintenance(true); }
    void inject_write_error_for_test(std::error_code error);
    std::size_t segment_count_for_test(const topic_partition& tp) const;

  private:
    struct topic_state {
        topic_spec spec;  // spec.partitions is the real count
        std::filesystem::path dir;
        std::vector<std::shared_ptr<log_partition>> partitions;
    };

    struct pending_record {
        std::shared_ptr<log_partition> partition;  // null when rejected at produce()
        std::string key;
        std::string value;
        std::vector<log_header> headers;
        produce_callback done;
        std::int64_t timestamp_ms = 0;
        std::int64_t offset = -1;
        std::error_code error;
        // A compacted (state) topic: still written below the free-space minimum, from the
        // reserve it keeps (sessions, subscriptions: small, and clients need them to connect).
        bool state_topic = false;
    };

    struct group_state {
        std::vector<embedded_log_consumer*> members;
    };

    explicit log_engine(embedded_log_config config);
    status recover();
    result<std::shared_ptr<topic_state>> load_topic(const std::filesystem::path& dir);
    std::shared_ptr<topic_state> find_topic(std::string_view name) const;

    void writer_loop();
    void process(std::vector<pending_record>& batch);
    void sync_unsynced();
    void maintenance_loop();
    void run_maintenance(bool force);
    void request_maintenance();

    // Writer thread: reads the free space when due (or when what was written since the last
    // reading may have crossed a watermark) and moves between disk_state values.
    void check_disk(bool force);
    disk_state current_disk_state() const {
        return static_cast<disk_state>(disk_state_.load(std::memory_order_acquire));
    }
    // Writer thread: a partition's write failed / succeeded. The log is unhealthy while any
    // partition's last write failed (a success elsewhere says nothing about that file); a
    // space error (ENOSPC, EDQUOT) also ends when a free-space reading shows room again.
    void partition_write_failed(const std::shared_ptr<log_partition>& partition,
                                std::error_code error);
    void partition_written(log_partition* partition);
    // Writer thread: an interval fdatasync round failed / succeeded.
    void sync_failed(std::error_code error);
    void sync_succeeded();
    void publish_write_health();  // writer thread: failing_ and sync_error_ -> health

    void rebalance(const std::string& group_id, group_state& group);  // groups_mutex_ held
    void rebalance_subscribers(std::string_view topic);

    const embedded_log_config config_;
    const clock& clock_;
    const std::filesystem::path root_;  // data_dir/log
    unique_fd lock_file_;               // flock()ed while this engine may write

    std::mutex admin_mutex_;
    std::mutex maintenance_mutex_;
    std::mutex io_mutex_;

    mutable std::shared_mutex topics_mutex_;
    std::map<std::string, std::shared_ptr<topic_state>, std::less<>> topics_;
    std::uint64_t trash_counter_ = 0;  // admin_mutex_

    std::unique_ptr<log_offset_store> offsets_;

    // Producer queue.
    std::mutex queue_mutex_;
    std::condition_variable queue_cv_;
    std::vector<pending_record> queue_;
    std::size_t queued_records_ = 0;  // accepted records in queue_ (rejections not counted)
    std::size_t queued_bytes_ = 0;
    std::uint64_t issued_ = 0;  // produce() calls so far
    bool writer_idle_ = false;
    bool stopping_ = false;
    bool writer_exited_ = false;

    // Completed callbacks, for flush().
    std::mutex completion_mutex_;
    std::condition_variable completion_cv_;
    std::uint64_t completed_ = 0;

    // Writer thread only.
    std::vector<log_partition*> touched_;
    std::vector<std::shared_ptr<log_segment>> unsynced_segments_;
    std::vector<std::filesystem::path> unsynced_directories_;
    std::chrono::steady_clock::time_point next_sync_;
    const bool monitor_disk_;  // a watermark is set
    // Partitions whose last write failed, with the error (kept alive: a deleted topic's
    // partition is dropped from here when its records are refused).
    std::map<log_partition*, std::pair<std::shared_ptr<log_partition>, std::error_code>> failing_;
    bool space_error_ = false;       // one of failing_ is ENOSPC / EDQUOT: read the space too
    disk_space_source disk_source_;  // statvfs unless a test's
    std::chrono::steady_clock::time_point next_disk_check_{};
    std::uint64_t written_since_check_ = 0;               // bytes, for the crossing estimate
    bool have_space_ = false;                             // one reading succeeded
    bool disk_read_failed_ = false;                       // logged once per failure streak
    std::chrono::steady_clock::time_point pace_until_{};  // slowed: next batch not before

    std::atomic<std::uint8_t> disk_state_{0};  // disk_state
    std::atomic<std::uint64_t> disk_refused_{0};
    std::atomic<std::uint64_t> write_errors_{0};
    std::size_t quarantined_ = 0;  // set by recover()

    std::atomic<bool> healthy_{true};  // no write error outstanding
    mutable std::mutex health_mutex_;
    std::error_code write_error_;     // health_mutex_: a failing partition's error (failing_)
    std::error_code sync_error_;      // health_mutex_: a failed interval fdatasync
    std::error_code injected_error_;  // health_mutex_
    disk_space space_;                // health_mutex_: the last reading

    std::mutex groups_mutex_;
    std::map<std::string, group_state, std::less<>> groups_;  // groups_mutex_
    std::set<embedded_log_consumer*> consumers_;              // groups_mutex_
    std::uint64_t member_sequence_ = 0;                       // groups_mutex_
    std::atomic<bool> stopped_{false};

    std::mutex stop_mutex_;
    std::mutex maintenance_wait_mutex_;
    std::condition_variable maintenance_cv_;
    bool maintenance_stop_ = false;       // maintenance_wait_mutex_
    bool maintenance_requested_ = false;  // maintenance_wait_mutex_: run now (low disk)

    std::thread writer_;
    std::thread maintenance_;
};

}  // namespace starling::adapters::embedded
