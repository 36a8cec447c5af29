#include "adapters/embedded/log_segment.h"

#include "adapters/embedded/log_format.h"

#include <fcntl.h>

#include <algorithm>
#include <cstdio>

namespace starling::adapters::embedded {

std::uint64_t log_segment::floor_position(std::int64_t offset) const {
    auto it = std::upper_bound(
        index.begin(), index.end(), offset,
        [](std::int64_t value, const log_index_entry& entry) { return value < entry.offset; });
    if (it == index.begin()) {
        return 0;
    }
    return std::prev(it)->position;
}

std::string log_segment::file_name(std::int64_t base_offset) {
    char name[32];
    std::snprintf(name, sizeof name, "%020lld.log", static_cast<long long>(base_offset));
    return name;
}

result<std::shared_ptr<log_segment>> log_segment::create(const std::filesystem::path& dir,
                                                         std::int64_t base_offset) {
    auto segment = std::make_shared<log_segment>();
    segment->base_offset = base_offset;
    segment->path = dir / file_name(base_offset);
    auto fd = open_file(segment->path, O_RDWR | O_CREAT | O_EXCL);
    if (!fd) {
        return fd.error();
    }
    segment->fd = std::move(*fd);
    return segment;
}

result<std::shared_ptr<log_segment>> log_segment::recover(
    const std::filesystem::path& path, std::int64_t base_offset, std::int64_t min_offset,
    std::int64_t end_offset, std::uint32_t index_interval_bytes, bool cut_bad_tail,
    std::uint64_t& bad_bytes) {
    bad_bytes = 0;
    auto segment = std::make_shared<log_segment>();
    segment->base_offset = base_offset;
    segment->path = path;
    auto fd = open_file(path, O_RDWR);
    if (!fd) {
        return fd.error();
    }
    segment->fd = std::move(*fd);
    auto length = file_size(segment->fd.get());
    if (!length) {
        return length.error();
    }

    // Scan with a reusable buffer; a frame larger than the buffer grows it.
    std::vector<char> buffer(1U << 20);
    std::uint64_t position = 0;  // start of the first byte not yet accepted
    std::int64_t expected_min = std::max(base_offset, min_offset);
    bool bad = false;
    while (position < *length && !bad) {
        const std::uint64_t want = std::min<std::uint64_t>(buffer.size(), *length - position);
        auto got = pread_full(segment->fd.get(), buffer.data(), want, position);
        if (!got) {
            return got.error();
        }
        std::size_t used = 0;
        while (used < *got) {
            log_format::record_view record;
            std::size_t frame_size = 0;
            const auto status =
                log_format::parse_record(buffer.data() + used, *got - used, record, frame_size);
            if (status == log_format::parse_status::incomplete) {
                if (position + used +
                        (frame_size == 0 ? log_format::frame_header_bytes : frame_size) >
                    *length) {
                    bad = true;  // the file ends inside this frame: torn tail
                } else if (used == 0) {
                    buffer.resize(frame_size);  // a record larger than the buffer
                }
                break;
            }
            if (status == log_format::parse_status::corrupt || record.offset < expected_min ||
                record.offset >= end_offset) {
                bad = true;
                break;
            }
            const std::uint64_t at = position + used;
            if (at > 0 && at - segment->last_indexed_position >= index_interval_bytes) {
                segment->index.push_back({record.offset, static_cast<std::uint32_t>(at)});
                segment->last_indexed_position = at;
            }
            if (segment->first_timestamp == no_timestamp) {
                segment->first_timestamp = record.timestamp_ms;
            }
            segment->last_offset = record.offset;
            segment->max_timestamp = std::max(segment->max_timestamp, record.timestamp_ms);
            expected_min = record.offset + 1;
            used += frame_size;
        }
        position += used;
    }
    if (position < *length) {
        bad_bytes = *length - position;
        if (cut_bad_tail) {
            if (auto cut = truncate_file(segment->fd.get(), position); !cut) {
                return cut.error();
            }
        }
    }
    segment->size = position;
    segment->written = position;
    segment->staged_last_offset = segment->last_offset;
    segment->staged_max_timestamp = segment->max_timestamp;
    return segment;
}

}  // namespace starling::adapters::embedded
