#pragma once

// embedded_message_log: the message-log port (include/starling/message_log.h) as an
// in-process, partitioned, persistent log under data_dir/log/ — what a single Starling node
// runs on when no Kafka is configured. Kafka's semantics are kept (partitions, dense offsets,
// consumer groups, committed offsets, retention, compaction) so the broker code is the same in
// both modes, and so is the promise: an acknowledged record survives kill -9 and restart.
// README.md in this folder describes the design, the file format and the measured speed.
//
// Lifecycle: open() recovers the directory and starts the writer and maintenance threads;
// stop() (or the destructor) waits for every queued produce's callback, syncs, joins the
// threads and makes consumers' poll() fail with log_errc::stopped. Consumers may outlive the
// log object.
// Threads: every produce callback runs on the log's writer thread, in produce order, except
// after stop() has finished, when produce() runs it at once on the caller's thread with
// log_errc::stopped. All methods are thread-safe; a consumer is used by one thread at a time.
// Errors: log_errc (log_errc.h), or the errno of a failed file operation. A failed write or
// fdatasync fails its batch and makes healthy() false; later produces are tried again and the
// first batch that succeeds makes it true (a disk that was full and has room again needs no
// restart). Below the free-space minimum (embedded_log_config::min_free_bytes) every produce to
// a non-compacted topic fails with log_errc::disk_full (== std::errc::no_space_on_device) and
// healthy() is false, until space returns.

#include "adapters/embedded/log_config.h"
#include "adapters/embedded/log_errc.h"
#include "base/result.h"
#include "starling/message_log.h"

#include <chrono>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace starling::adapters::embedded {

class log_engine;

class embedded_message_log final : public message_log {
  public:
    // Opens (creating if needed) data_dir/log and recovers it: torn tails are cut, offsets and
    // committed group offsets rebuilt. Fails on an unusable directory or corrupt metadata.
    static result<std::unique_ptr<embedded_message_log>> open(embedded_log_config config);

    ~embedded_message_log() override;
    embedded_message_log(const embedded_message_log&) = delete;
    embedded_message_log& operator=(const embedded_message_log&) = delete;

    // Idempotent. Blocks until queued produces have completed and threads have exited. Not
    // from inside a produce callback.
    void stop();

    status create_topic(const topic_spec& spec) override;
    status delete_topic(std::string_view name) override;
    result<std::int32_t> partition_count(std::string_view topic) override;
    void produce(std::string_view topic, std::string key, std::string value,
                 std::vector<log_header> headers, produce_callback done,
                 std::int32_t partition = -1) override;
    result<std::unique_ptr<log_consumer>> create_consumer(const consumer_spec& spec) override;
    status flush(std::chrono::milliseconds timeout) override;
    bool healthy() const override;

    // Disk state, outstanding write error and counters, for health details and metrics. Cheap
    // (reads what the writer keeps); any thread.
    embedded_log_status log_status() const;

    // Records accepted by produce() and not yet taken by the writer (for a gauge).
    std::size_t queue_depth() const;

    // ---- test hooks ----
    // Runs retention and (forced) compaction now, on the calling thread.
    void run_maintenance_for_test();
    // Every later write fails with `error` as if write(2) had returned it.
    void inject_write_error_for_test(std::error_code error);
    std::size_t segment_count_for_test(const topic_partition& tp) const;

  private:
    explicit embedded_message_log(std::shared_ptr<log_engine> engine);

    std::shared_ptr<log_engine> engine_;
};

}  // namespace starling::adapters::embedded
