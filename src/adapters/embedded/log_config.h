#pragma once

// Configuration of the embedded message log (embedded_message_log::open()). Every field has a
// working default; only data_dir must be set. The config module maps starling.yml keys onto it.

#include "base/result.h"
#include "starling/clock.h"

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string_view>

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

    // Timestamps of produced records and the "now" of retention; null = the system clock.
    const clock* time_source = nullptr;
};

}  // namespace starling::adapters::embedded
