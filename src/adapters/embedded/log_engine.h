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
// completion_mutex_, health_mutex_ and the offset store's mutex are taken with nothing else
// acquired inside them.
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
    bool healthy() const { return healthy_.load(std::memory_order_acquire); }
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

    void set_unhealthy(std::error_code error);
    std::error_code health_error() const;

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

    std::atomic<bool> healthy_{true};
    mutable std::mutex health_mutex_;
    std::error_code health_error_;    // health_mutex_
    std::error_code injected_error_;  // health_mutex_

    std::mutex groups_mutex_;
    std::map<std::string, group_state, std::less<>> groups_;  // groups_mutex_
    std::set<embedded_log_consumer*> consumers_;              // groups_mutex_
    std::uint64_t member_sequence_ = 0;                       // groups_mutex_
    std::atomic<bool> stopped_{false};

    std::mutex stop_mutex_;
    std::mutex maintenance_wait_mutex_;
    std::condition_variable maintenance_cv_;
    bool maintenance_stop_ = false;  // maintenance_wait_mutex_

    std::thread writer_;
    std::thread maintenance_;
};

}  // namespace starling::adapters::embedded
