#pragma once

// log_segment: one append-only file of framed records (log_format.h) holding a contiguous
// range of one partition's offsets, named after its base offset (20 decimal digits + ".log").
//
// Structure: the file plus a sparse index in memory — one (offset, file position) entry per
// index_interval_bytes of file — so a read of any offset costs one binary search and one pread
// of at most a few KiB before the wanted record, without keeping records in memory. The index
// is rebuilt by scanning the file at start-up (recover()).
//
// Ownership: shared_ptr, held by the partition's segment list, by the writer thread while it
// appends, and by readers for the duration of one read; a segment removed by retention or
// replaced by compaction keeps its descriptor open until the last reader lets go.
// Concurrency: the fields are plain data; log_partition documents which of its locks or threads
// guards each group below.

#include "adapters/embedded/log_file.h"
#include "base/result.h"

#include <cstdint>
#include <filesystem>
#include <limits>
#include <memory>
#include <string>
#include <vector>

namespace starling::adapters::embedded {

struct log_index_entry {
    std::int64_t offset = 0;
    std::uint32_t position = 0;
};

inline constexpr std::int64_t no_timestamp = std::numeric_limits<std::int64_t>::min();

struct log_segment {
    std::int64_t base_offset = 0;
    std::filesystem::path path;
    unique_fd fd;  // O_RDWR: the writer pwrite()s, readers pread()

    // Published view (guarded by log_partition::mutex_): what readers may see.
    std::uint64_t size = 0;
    std::int64_t last_offset = -1;  // -1: no record yet
    std::int64_t max_timestamp = no_timestamp;
    std::vector<log_index_entry> index;

    // Writer view (writer thread only; ahead of the published view during a batch).
    std::uint64_t written = 0;
    std::uint64_t last_indexed_position = 0;
    std::int64_t staged_last_offset = -1;
    std::int64_t staged_max_timestamp = no_timestamp;
    std::vector<log_index_entry> staged_index;
    std::int64_t first_timestamp = no_timestamp;  // for time-based rolling
    bool unsynced = false;                        // queued for the next interval fdatasync
    // A failed batch could not cut its bytes back (ftruncate failed): cut before the next write.
    bool tail_dirty = false;

    // File position to start reading at for `offset` (largest indexed offset <= it, else 0).
    std::uint64_t floor_position(std::int64_t offset) const;

    // Creates an empty segment file (fails if it exists).
    static result<std::shared_ptr<log_segment>> create(const std::filesystem::path& dir,
                                                       std::int64_t base_offset);

    // Opens an existing file and scans it: every frame's length and CRC is checked and offsets
    // must increase from max(base_offset, min_offset) and stay below `end_offset` (the next
    // segment's base; a record at or past it cannot belong here). `bad_bytes` is what follows the
    // last good frame (0 when the whole file is good). With `cut_bad_tail` (the active segment: a
    // torn write after a crash is normal) those bytes are truncated; without it (a closed segment,
    // where they mean damage) the file is left as it is and the segment covers the good prefix
    // only — the caller decides what to do with the file.
    static result<std::shared_ptr<log_segment>> recover(
        const std::filesystem::path& path, std::int64_t base_offset, std::int64_t min_offset,
        std::int64_t end_offset, std::uint32_t index_interval_bytes, bool cut_bad_tail,
        std::uint64_t& bad_bytes);

    static std::string file_name(std::int64_t base_offset);  // "00000000000000000042.log"
};

}  // namespace starling::adapters::embedded
