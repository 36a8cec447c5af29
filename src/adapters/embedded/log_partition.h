#pragma once

// log_partition: one partition of one topic of the embedded log — its directory of segment
// files (log_segment.h), the writer's staging buffer, the readers' view, retention and
// compaction.
//
// Structure: `segments_` is ordered by base offset; the last one is the active segment, the
// only one ever appended to. Offsets are dense as written; compaction later removes records
// from closed segments without renumbering the rest, so readers must accept gaps.
//
// Threads and locks:
//   - writer thread (log_engine): begin_batch/stage/write_batch/sync_batch/publish_batch/
//     abort_batch, and the "writer view" fields of the active segment. It alone appends.
//   - readers (consumer threads): read(), log_start_offset(), end_offset(); they hold `mutex_`
//     only to pick a segment and a file position, then pread() without it.
//   - maintenance thread: apply_retention(), compact(); they swap segments under `mutex_`.
//   - `mutex_` guards segments_, the published fields of every segment, visible_next_ and
//     listeners_. Lock order: a consumer's mutex, then this, then a log_waiter's mutex.
// Lifecycle: constructed and recover()ed at start-up (or create_topic), then shared (via
// shared_ptr) by the topic table, queued produce requests and consumers. mark_deleted() when
// the topic is deleted: reads return nothing and the writer refuses new records.

#include "adapters/embedded/log_config.h"
#include "adapters/embedded/log_segment.h"
#include "adapters/embedded/log_waiter.h"
#include "base/result.h"
#include "starling/message_log.h"

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

namespace starling::adapters::embedded {

class log_partition {
  public:
    // `quarantine_dir`: where recover() moves a closed segment with a corrupt record.
    log_partition(std::string topic, std::int32_t id, std::filesystem::path dir,
                  std::filesystem::path quarantine_dir, const embedded_log_config& config);

    log_partition(const log_partition&) = delete;
    log_partition& operator=(const log_partition&) = delete;

    // Start-up: creates the directory if needed, finishes or discards an interrupted
    // compaction, scans every segment and rebuilds the offsets. A bad tail of the active (last)
    // segment is a torn write and is cut. A bad record in a closed segment is damage: the file is
    // moved to the quarantine directory, its good prefix is kept as the segment, and the records
    // after the damage are lost (offsets continue with the next segment); logged as an error and
    // counted in quarantined().
    status recover();
    // Closed segments recover() quarantined.
    std::size_t quarantined() const { return quarantined_; }

    const std::string& topic() const { return topic_; }
    std::int32_t id() const { return id_; }

    // ---- readers (any thread) ----
    std::int64_t log_start_offset() const;
    std::int64_t end_offset() const;  // offset the next record will get (high watermark)

    struct read_outcome {
        bool out_of_range = false;       // `position` is below the log start or past the end
        std::int64_t next_position = 0;  // where the next read continues
    };
    // Appends up to `max_records` records with offset >= position to `out`, in offset order.
    // `buffer` is the caller's reusable read buffer (grown when a record needs it).
    result<read_outcome> read(std::int64_t position, std::size_t max_records,
                              std::vector<char>& buffer, std::vector<log_record>& out) const;

    void add_listener(log_waiter* waiter);
    void remove_listener(log_waiter* waiter);

    bool deleted() const { return deleted_.load(std::memory_order_acquire); }
    void mark_deleted();

    // ---- writer thread ----
    bool in_batch() const { return in_batch_; }
    void begin_batch() { in_batch_ = true; }
    // Encodes one record into the staging buffer and returns its offset. Rolls the active
    // segment first when the record would take it past segment_bytes or segment_ms (which
    // writes what is staged so far to the old segment).
    result<std::int64_t> stage(std::int64_t timestamp_ms, std::string_view key,
                               std::string_view value, const std::vector<log_header>& headers);
    // Writes the staged bytes with one pwrite. On failure the file is cut back to its size
    // before the write.
    status write_batch();
    // fdatasync of every segment written in this batch, and of the directory after a roll.
    status sync_batch();
    // Interval mode: hands the segments written in this batch (once each) and whether the
    // directory changed to the periodic fdatasync.
    void collect_unsynced(std::vector<std::shared_ptr<log_segment>>& segments,
                          std::vector<std::filesystem::path>& directories);
    // Makes the batch readable and notifies waiting consumers.
    void publish_batch();
    // Forgets the batch after a failure (nothing of it becomes readable): the files are cut
    // back (or marked to be cut before the next write), segments the batch rolled to are
    // removed, and the next record gets the first unpublished offset again — so a later batch
    // can succeed once the cause (a full disk) is gone.
    void abort_batch();
    // Marks this partition's part of the batch failed (the first error is kept).
    void fail_batch(std::error_code error) {
        if (!batch_error_) {
            batch_error_ = error;
        }
    }
    const std::error_code& batch_error() const { return batch_error_; }

    // ---- maintenance thread ----
    // Deletes closed segments from the oldest while they are past retention_ms (by their
    // newest timestamp) or the partition is over retention_bytes without them. Returns how
    // many were deleted.
    std::size_t apply_retention(std::int64_t now_ms, std::int64_t retention_ms,
                                std::int64_t retention_bytes);
    // Rewrites closed segments keeping only the last record of each key (tombstones older than
    // tombstone_retention dropped too), merging neighbours up to segment_bytes. Skipped when
    // nothing was closed since the last pass, unless `force`.
    status compact(std::int64_t now_ms, bool force);

    // Test view: number of segment files.
    std::size_t segment_count() const;

  private:
    status roll();
    status flush_staging();
    // recover(): moves a closed segment with a bad record aside and keeps its good prefix.
    result<std::shared_ptr<log_segment>> quarantine(std::shared_ptr<log_segment> segment,
                                                    std::uint64_t bad_bytes);

    const std::string topic_;
    const std::int32_t id_;
    const std::filesystem::path dir_;
    const std::filesystem::path quarantine_dir_;
    const embedded_log_config config_;  // a copy: partitions may outlive the engine's setup
    std::size_t quarantined_ = 0;       // set by recover()

    mutable std::mutex mutex_;
    std::vector<std::shared_ptr<log_segment>> segments_;  // guarded by mutex_
    std::int64_t visible_next_ = 0;                       // guarded by mutex_
    std::vector<log_waiter*> listeners_;                  // guarded by mutex_
    std::atomic<bool> deleted_{false};

    // Writer thread only.
    std::shared_ptr<log_segment> active_;
    // Segments rolled to in the current batch: in segments_ only from publish_batch() on, so
    // neither readers nor retention or compaction see a segment (or treat its predecessor as
    // closed) before the batch that created it succeeded.
    std::vector<std::shared_ptr<log_segment>> rolled_;
    std::int64_t next_offset_ = 0;
    std::string staging_;
    std::vector<std::shared_ptr<log_segment>> batch_segments_;
    bool in_batch_ = false;
    bool rolled_in_batch_ = false;
    std::error_code batch_error_;

    // Maintenance thread only.
    std::int64_t clean_end_ = -1;  // active base offset when compaction last ran
    bool tombstones_pending_ = false;
};

}  // namespace starling::adapters::embedded
