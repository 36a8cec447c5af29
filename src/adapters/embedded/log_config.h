#pragma once

// Configuration of the embedded message log (embedded_message_log::open()). Every field has a
// working default; only data_dir must be set. The config module maps starling.yml keys onto it.

#include "base/result.h"
#include "starling/clock.h"

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <string_view>
#include <system_error>

namespace starling::adapters::embedded {

// When the writer thread calls fdatasync. Every policy acknowledges a record only after its
// bytes were written to the file (a process crash after the ack cannot lose it); only `always`
// also survives power loss / kernel crash for every acknowledged record.
enum class fsync_policy : std::uint8_t {
    none,      // never (the kernel writes back on its own schedule); a clean stop() still syncs
    interval,  // at most every fsync_interval, in the background of acks (default)
    always,    // before acknowledging (group commit: one fdatasync per file per batch)
};

result<fsync_policy> parse_fsync_policy(std::string_view name);

// Size and free space of the file system holding the log (statvfs: f_blocks and f_bavail, the
// space an unprivileged writer may still use).
struct disk_space {
    std::uint64_t total_bytes = 0;
    std::uint64_t free_bytes = 0;
};
using disk_space_source = std::function<result<disk_space>(const std::filesystem::path&)>;

// Reads `dir`'s file system with statvfs(3).
result<disk_space> statvfs_disk_space(const std::filesystem::path& dir);

// Where the log stands against its free-space watermarks (embedded_log_config::min_free_bytes,
// slow_free_bytes).
enum class disk_state : std::uint8_t {
    ok,        // above both watermarks (or they are off)
    slowed,    // below slow_free_bytes: writes paced at slow_write_rate
    refusing,  // below min_free_bytes: produces to non-compacted topics fail (disk_full)
};
std::string_view to_string(disk_state state);  // "ok", "slowed", "refusing"

// What the log reports about itself (embedded_message_log::log_status()), for health and metrics.
struct embedded_log_status {
    disk_state disk = disk_state::ok;
    disk_space space;                  // last reading; zeros before the first one
    std::uint64_t min_free_bytes = 0;  // the configured watermarks
    std::uint64_t slow_free_bytes = 0;
    std::error_code write_error;             // the last write or fdatasync error not yet cleared
    std::uint64_t disk_refused_records = 0;  // produces refused for low disk, since open()
    std::uint64_t write_errors = 0;          // failed writes and fdatasyncs, since open()
    std::uint64_t quarantined_segments = 0;  // corrupt closed segments moved aside at open()
};

struct embedded_log_config {
    // The log lives in data_dir/log/ (created if absent).
    std::filesystem::path data_dir;

    fsync_policy fsync = fsync_policy::interval;
    std::chrono::milliseconds fsync_interval{1000};

    // A segment file is closed and a new one started past this size or age. Retention and
    // compaction work on whole closed segments.
    std::uint64_t segment_bytes = 64ULL << 20;
    std::chrono::milliseconds segment_ms{std::chrono::hours(24 * 7)};
    // One sparse-index entry per this many bytes of segment (memory: 12 bytes per entry).
    std::uint32_t index_interval_bytes = 4096;

    // Producer queue bounds (records accepted but not yet written). Past either, produce()
    // fails fast with log_errc::queue_full through its callback.
    std::size_t max_queued_records = 65536;
    std::size_t max_queued_bytes = 64ULL << 20;
    // Largest record accepted (its whole frame: key, value, headers and 38 bytes of framing).
    std::uint32_t max_record_bytes = 16U << 20;

    // Retention and compaction run this often on a background thread.
    std::chrono::milliseconds maintenance_interval{std::chrono::seconds(30)};
    // A tombstone (empty value) on a compacted topic is kept at least this long after it was
    // produced, so consumers reading from the start still see the delete.
    std::chrono::milliseconds tombstone_retention{std::chrono::hours(24)};

    // Each consumer's read buffer (grows to fit a larger record).
    std::size_t fetch_buffer_bytes = 64U << 10;

    // Size bound (bytes per partition) for topics created without one (retention_bytes -1) that
    // are not compacted: the oldest closed segments go first, as with the topic's own bound.
    // -1 = unbounded. The daemon sets queue.embedded.retention-bytes (1 GiB).
    std::int64_t default_retention_bytes = -1;

    // Free-space watermarks on data_dir's file system, checked by the writer at most every
    // disk_check_interval (and at once when the bytes written since the last reading may have
    // crossed one). Below slow_free_bytes the writer paces itself at slow_write_rate bytes/s
    // (acknowledgements come later, so publishers with a bounded window slow down). Below
    // min_free_bytes every produce to a topic that is not compacted (the message flow: msg.all,
    // msg.persisted, ...) fails with log_errc::disk_full (== std::errc::no_space_on_device);
    // compacted (state) topics are still written from the reserve, so clients can connect and
    // disconnect. Both states end by themselves when space returns. 0 = off (the default here;
    // the daemon sets queue.embedded.disk.*).
    std::uint64_t min_free_bytes = 0;
    std::uint64_t slow_free_bytes = 0;
    std::uint64_t slow_write_rate = 1U << 20;
    std::chrono::milliseconds disk_check_interval{1000};  // 0: before every batch, none idle
    // Test hook: where free space is read from; null = statvfs_disk_space.
    disk_space_source disk_space_for_test;

    // Timestamps of produced records and the "now" of retention; null = the system clock.
    const clock* time_source = nullptr;
};

}  // namespace starling::adapters::embedded
