#include "adapters/embedded/log_partition.h"

#include "adapters/embedded/log_errc.h"
#include "adapters/embedded/log_format.h"
#include "base/assert.h"

#include <fcntl.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <limits>
#include <unordered_map>

namespace starling::adapters::embedded {

namespace {

// Past this many staged bytes the writer writes what it has, so one huge batch does not pin a
// huge buffer per partition.
constexpr std::size_t max_staging_bytes = 1U << 20;
constexpr std::size_t scan_buffer_bytes = 1U << 20;

// Heterogeneous lookup so the compaction key map is probed with string_views.
struct key_hash {
    using is_transparent = void;
    std::size_t operator()(std::string_view key) const {
        return std::hash<std::string_view>{}(key);
    }
};
using key_map = std::unordered_map<std::string, std::int64_t, key_hash, std::equal_to<>>;

// Calls fn(view, frame, frame_size) for each record in the first `size` bytes of `segment`.
template <class Fn>
status scan_records(const log_segment& segment, std::uint64_t size, std::vector<char>& buffer,
                    Fn&& fn) {
    std::uint64_t position = 0;
    while (position < size) {
        const std::uint64_t want = std::min<std::uint64_t>(buffer.size(), size - position);
        auto got = pread_full(segment.fd.get(), buffer.data(), want, position);
        if (!got) {
            return got.error();
        }
        std::size_t used = 0;
        while (used < *got) {
            log_format::record_view record;
            std::size_t frame_size = 0;
            const auto status =
                log_format::parse_record(buffer.data() + used, *got - used, record, frame_size);
            if (status == log_format::parse_status::ok) {
                fn(record, buffer.data() + used, frame_size);
                used += frame_size;
                continue;
            }
            if (status == log_format::parse_status::corrupt ||
                position + used + std::max(frame_size, log_format::frame_header_bytes) > size) {
                return make_error_code(log_errc::corrupt_data);
            }
            if (used == 0) {
                buffer.resize(frame_size);
            }
            break;
        }
        position += used;
    }
    return {};
}

std::string stem(std::int64_t offset) {
    char name[24];
    std::snprintf(name, sizeof name, "%020lld", static_cast<long long>(offset));
    return name;
}

bool parse_offset(std::string_view digits, std::int64_t& out) {
    if (digits.size() != 20) {
        return false;
    }
    std::int64_t value = 0;
    for (char c : digits) {
        if (c < '0' || c > '9') {
            return false;
        }
        value = value * 10 + (c - '0');
    }
    out = value;
    return true;
}

void remove_quietly(const std::filesystem::path& path) {
    std::error_code ec;
    std::filesystem::remove(path, ec);
    if (ec) {
        spdlog::warn("embedded log: cannot remove {}: {}", path.string(), ec.message());
    }
}

}  // namespace

log_partition::log_partition(std::string topic, std::int32_t id, std::filesystem::path dir,
                             std::filesystem::path quarantine_dir,
                             const embedded_log_config& config)
    : topic_(std::move(topic)),
      id_(id),
      dir_(std::move(dir)),
      quarantine_dir_(std::move(quarantine_dir)),
      config_(config) {}

status log_partition::recover() {
    if (auto made = make_directories(dir_); !made) {
        return made.error();
    }
    std::vector<std::int64_t> bases;
    std::vector<std::pair<std::int64_t, std::int64_t>> swaps;  // [first, end) replaced
    std::error_code ec;
    for (const auto& entry : std::filesystem::directory_iterator(dir_, ec)) {
        const std::string name = entry.path().filename().string();
        std::int64_t first = 0;
        std::int64_t end = 0;
        if (name.ends_with(".cleaned") || name.ends_with(".tmp")) {
            remove_quietly(entry.path());  // an interrupted compaction's unfinished output
        } else if (name.size() == 46 && name.ends_with(".swap") && name[20] == '-' &&
                   parse_offset(std::string_view(name).substr(0, 20), first) &&
                   parse_offset(std::string_view(name).substr(21, 20), end)) {
            swaps.emplace_back(first, end);
        } else if (name.size() == 24 && name.ends_with(".log") &&
                   parse_offset(std::string_view(name).substr(0, 20), first)) {
            bases.push_back(first);
        } else {
            spdlog::warn("embedded log: ignoring unexpected file {}", entry.path().string());
        }
    }
    if (ec) {
        return ec;
    }
    // A finished compaction output (.swap) replaces the segments it covers: finish the swap.
    for (const auto& [first, end] : swaps) {
        std::erase_if(bases, [&, first = first, end = end](std::int64_t base) {
            if (base >= first && base < end) {
                remove_quietly(dir_ / log_segment::file_name(base));
                return true;
            }
            return false;
        });
        const auto swap_path = dir_ / (stem(first) + "-" + stem(end) + ".swap");
        std::filesystem::rename(swap_path, dir_ / log_segment::file_name(first), ec);
        if (ec) {
            return ec;
        }
        bases.push_back(first);
    }
    if (!swaps.empty()) {
        if (auto synced = sync_directory(dir_); !synced) {
            return synced.error();
        }
    }
    std::sort(bases.begin(), bases.end());

    std::int64_t last = -1;
    for (std::size_t i = 0; i < bases.size(); ++i) {
        const std::int64_t base = bases[i];
        const bool active = i + 1 == bases.size();
        const std::int64_t end = active ? std::numeric_limits<std::int64_t>::max() : bases[i + 1];
        std::uint64_t bad = 0;
        auto segment = log_segment::recover(dir_ / log_segment::file_name(base), base, last + 1,
                                            end, config_.index_interval_bytes, active, bad);
        if (!segment) {
            return segment.error();
        }
        if (bad > 0 && active) {
            // Normal after a crash: the write in flight was torn.
            spdlog::warn("embedded log: {}-{}: cut {} bytes of torn data from {}", topic_, id_, bad,
                         (*segment)->path.string());
        } else if (bad > 0) {
            segment = quarantine(std::move(*segment), bad);
            if (!segment) {
                return segment.error();
            }
            if (*segment == nullptr) {
                continue;  // nothing good in it: the partition goes on with the next segment
            }
        }
        if ((*segment)->last_offset >= 0) {
            last = (*segment)->last_offset;
        }
        segments_.push_back(std::move(*segment));
    }
    if (segments_.empty()) {
        auto segment = log_segment::create(dir_, 0);
        if (!segment) {
            return segment.error();
        }
        segments_.push_back(std::move(*segment));
        if (auto synced = sync_directory(dir_); !synced) {
            return synced.error();
        }
    }
    active_ = segments_.back();
    next_offset_ = std::max(active_->base_offset, last + 1);
    visible_next_ = next_offset_;
    return {};
}

result<std::shared_ptr<log_segment>> log_partition::quarantine(std::shared_ptr<log_segment> segment,
                                                               std::uint64_t bad_bytes) {
    ++quarantined_;
    const std::uint64_t good = segment->size;
    if (auto made = make_directories(quarantine_dir_); !made) {
        return made.error();
    }
    // A unique name: the same base may be quarantined again after a later start.
    const auto stamp = std::chrono::duration_cast<std::chrono::milliseconds>(
                           std::chrono::system_clock::now().time_since_epoch())
                           .count();
    const auto target =
        quarantine_dir_ / (stem(segment->base_offset) + "-" + std::to_string(stamp) + ".log");
    std::error_code ec;
    std::filesystem::rename(segment->path, target, ec);
    if (ec) {
        return ec;
    }
    for (const auto& dir : {dir_, quarantine_dir_}) {
        if (auto synced = sync_directory(dir); !synced) {
            return synced.error();
        }
    }
    spdlog::error(
        "embedded log: {}-{}: CORRUPT closed segment {}: bad record at byte {} of {}; the file "
        "was moved to {}. Offsets {}..{} are kept, the records after byte {} are lost and "
        "reading continues with the next segment",
        topic_, id_, segment->path.string(), good, good + bad_bytes, target.string(),
        segment->base_offset, segment->last_offset, good);
    if (good == 0 || segment->last_offset < 0) {
        return std::shared_ptr<log_segment>();
    }
    // Keep the good prefix under the segment's own name: copied to a .tmp file (recover()
    // deletes one a crash left behind), fdatasynced, renamed into place.
    auto tmp = segment->path;
    tmp += ".tmp";
    auto out = open_file(tmp, O_RDWR | O_CREAT | O_TRUNC);
    if (!out) {
        return out.error();
    }
    std::vector<char> buffer(std::min<std::uint64_t>(good, scan_buffer_bytes));
    for (std::uint64_t at = 0; at < good;) {
        const auto want = std::min<std::uint64_t>(buffer.size(), good - at);
        auto got = pread_full(segment->fd.get(), buffer.data(), want, at);
        if (!got) {
            return got.error();
        }
        if (*got == 0) {
            return make_error_code(log_errc::corrupt_data);  // the file shrank under us
        }
        if (auto written = pwrite_all(out->get(), buffer.data(), *got, at); !written) {
            return written.error();
        }
        at += *got;
    }
    if (auto synced = sync_data(out->get()); !synced) {
        return synced.error();
    }
    std::filesystem::rename(tmp, segment->path, ec);
    if (ec) {
        return ec;
    }
    if (auto synced = sync_directory(dir_); !synced) {
        return synced.error();
    }
    segment->fd = std::move(*out);
    return segment;
}

std::int64_t log_partition::log_start_offset() const {
    std::lock_guard lock(mutex_);
    return segments_.front()->base_offset;
}

std::int64_t log_partition::end_offset() const {
    std::lock_guard lock(mutex_);
    return visible_next_;
}

std::size_t log_partition::segment_count() const {
    std::lock_guard lock(mutex_);
    return segments_.size();
}

void log_partition::add_listener(log_waiter* waiter) {
    std::lock_guard lock(mutex_);
    listeners_.push_back(waiter);
}

void log_partition::remove_listener(log_waiter* waiter) {
    std::lock_guard lock(mutex_);
    std::erase(listeners_, waiter);
}

void log_partition::mark_deleted() {
    deleted_.store(true, std::memory_order_release);
    std::lock_guard lock(mutex_);
    for (log_waiter* waiter : listeners_) {
        waiter->notify();
    }
}

result<log_partition::read_outcome> log_partition::read(std::int64_t position,
                                                        std::size_t max_records,
                                                        std::vector<char>& buffer,
                                                        std::vector<log_record>& out) const {
    for (;;) {
        std::shared_ptr<log_segment> segment;
        std::uint64_t start = 0;
        std::uint64_t end = 0;
        std::int64_t next_base = -1;
        {
            std::lock_guard lock(mutex_);
            if (deleted()) {
                return read_outcome{false, position};
            }
            if (position < segments_.front()->base_offset || position > visible_next_) {
                return read_outcome{true, position};
            }
            if (position == visible_next_) {
                return read_outcome{false, position};
            }
            auto it = std::upper_bound(
                segments_.begin(), segments_.end(), position,
                [](std::int64_t value, const auto& s) { return value < s->base_offset; });
            const auto index = static_cast<std::size_t>(it - segments_.begin()) - 1;
            segment = segments_[index];
            start = segment->floor_position(position);
            end = segment->size;
            if (index + 1 < segments_.size()) {
                next_base = segments_[index + 1]->base_offset;
            }
        }

        std::size_t added = 0;
        bool corrupt = false;
        std::uint64_t at = start;
        while (added < max_records && at < end && !corrupt) {
            const std::uint64_t want = std::min<std::uint64_t>(buffer.size(), end - at);
            auto got = pread_full(segment->fd.get(), buffer.data(), want, at);
            if (!got) {
                return got.error();
            }
            std::size_t used = 0;
            while (added < max_records && used < *got) {
                log_format::record_view view;
                std::size_t frame_size = 0;
                const auto status =
                    log_format::parse_record(buffer.data() + used, *got - used, view, frame_size);
                if (status == log_format::parse_status::incomplete) {
                    if (at + used + std::max(frame_size, log_format::frame_header_bytes) > end) {
                        corrupt = true;  // published data always ends on a frame boundary
                    } else if (used == 0) {
                        buffer.resize(frame_size);
                    }
                    break;
                }
                if (status == log_format::parse_status::corrupt) {
                    corrupt = true;
                    break;
                }
                used += frame_size;
                if (view.offset >= position) {
                    log_record& record = out.emplace_back();
                    record.topic = topic_;
                    record.partition = id_;
                    log_format::materialize(view, record);
                    position = view.offset + 1;
                    ++added;
                }
            }
            at += used;
        }
        if (corrupt) {
            // Recovery verified every frame and closed data is never rewritten in place, so
            // this is damage from outside; skip to the next segment rather than stall.
            spdlog::error(
                "embedded log: {}-{}: corrupt record in {} at byte {}; skipping the "
                "rest of the segment",
                topic_, id_, segment->path.string(), at);
        }
        if (added > 0) {
            return read_outcome{false, position};
        }
        if ((at >= end || corrupt) && next_base >= 0) {
            position = std::max(position, next_base);  // past a compacted or damaged tail
            continue;
        }
        return read_outcome{false, position};
    }
}

result<std::int64_t> log_partition::stage(std::int64_t timestamp_ms, std::string_view key,
                                          std::string_view value,
                                          const std::vector<log_header>& headers) {
    const std::size_t size = log_format::record_frame_size(key, value, headers);
    std::uint64_t pending = active_->written + staging_.size();
    const bool full = pending > 0 && pending + size > config_.segment_bytes;
    const bool old = active_->first_timestamp != no_timestamp &&
                     timestamp_ms - active_->first_timestamp >= config_.segment_ms.count();
    if (full || old) {
        if (auto rolled = roll(); !rolled) {
            return rolled.error();
        }
        pending = 0;
    } else if (staging_.size() >= max_staging_bytes) {
        if (auto flushed = flush_staging(); !flushed) {
            return flushed.error();
        }
    }
    if (pending > 0 && pending - active_->last_indexed_position >= config_.index_interval_bytes) {
        active_->staged_index.push_back({next_offset_, static_cast<std::uint32_t>(pending)});
        active_->last_indexed_position = pending;
    }
    log_format::append_record(staging_, next_offset_, timestamp_ms, key, value, headers);
    active_->staged_last_offset = next_offset_;
    active_->staged_max_timestamp = std::max(active_->staged_max_timestamp, timestamp_ms);
    if (active_->first_timestamp == no_timestamp) {
        active_->first_timestamp = timestamp_ms;
    }
    if (batch_segments_.empty() || batch_segments_.back() != active_) {
        batch_segments_.push_back(active_);
    }
    return next_offset_++;
}

status log_partition::flush_staging() {
    if (staging_.empty()) {
        return {};
    }
    if (active_->tail_dirty) {
        // A failed batch left bytes past `written` that its cut did not remove.
        if (auto cut = truncate_file(active_->fd.get(), active_->written); !cut) {
            return cut.error();
        }
        active_->tail_dirty = false;
    }
    auto written =
        pwrite_all(active_->fd.get(), staging_.data(), staging_.size(), active_->written);
    if (!written) {
        (void)truncate_file(active_->fd.get(), active_->written);  // best effort: no torn frame
        return written.error();
    }
    active_->written += staging_.size();
    staging_.clear();
    return {};
}

status log_partition::roll() {
    if (auto flushed = flush_staging(); !flushed) {
        return flushed.error();
    }
    auto segment = log_segment::create(dir_, next_offset_);
    if (!segment && segment.error() == std::errc::file_exists) {
        // An empty file a failed batch rolled to and could not remove: no record lives in it
        // (nothing published has this base), so start it again.
        remove_quietly(dir_ / log_segment::file_name(next_offset_));
        segment = log_segment::create(dir_, next_offset_);
    }
    if (!segment) {
        return segment.error();
    }
    rolled_.push_back(*segment);  // published with the batch (publish_batch)
    active_ = std::move(*segment);
    batch_segments_.push_back(active_);
    rolled_in_batch_ = true;
    return {};
}

status log_partition::write_batch() { return flush_staging(); }

status log_partition::sync_batch() {
    for (const auto& segment : batch_segments_) {
        if (auto synced = sync_data(segment->fd.get()); !synced) {
            return synced.error();
        }
    }
    if (rolled_in_batch_) {
        return sync_directory(dir_);
    }
    return {};
}

void log_partition::collect_unsynced(std::vector<std::shared_ptr<log_segment>>& segments,
                                     std::vector<std::filesystem::path>& directories) {
    for (const auto& segment : batch_segments_) {
        if (!segment->unsynced) {
            segment->unsynced = true;
            segments.push_back(segment);
        }
    }
    if (rolled_in_batch_) {
        directories.push_back(dir_);
    }
}

void log_partition::publish_batch() {
    {
        std::lock_guard lock(mutex_);
        segments_.insert(segments_.end(), rolled_.begin(), rolled_.end());
        for (const auto& segment : batch_segments_) {
            segment->size = segment->written;
            segment->last_offset = segment->staged_last_offset;
            segment->max_timestamp = segment->staged_max_timestamp;
            segment->index.insert(segment->index.end(), segment->staged_index.begin(),
                                  segment->staged_index.end());
            segment->staged_index.clear();
        }
        visible_next_ = next_offset_;
        for (log_waiter* waiter : listeners_) {
            waiter->notify();
        }
    }
    rolled_.clear();
    batch_segments_.clear();
    in_batch_ = false;
    rolled_in_batch_ = false;
    batch_error_.clear();
}

void log_partition::abort_batch() {
    staging_.clear();
    // Segments rolled to in this batch were never published: drop them, and the next record
    // goes back to the segment its offset follows (a record in a segment whose base is above
    // its offset would be lost to readers and to recovery).
    for (const auto& segment : rolled_) {
        std::erase(batch_segments_, segment);
        remove_quietly(segment->path);  // if this fails, roll() replaces the empty file
    }
    rolled_.clear();
    {
        std::lock_guard lock(mutex_);
        next_offset_ = visible_next_;
        active_ = segments_.back();
        for (const auto& segment : batch_segments_) {
            // Cut back whatever of the batch reached the file; if even that fails, the next
            // write cuts it first (tail_dirty), so no stale frame follows new ones.
            if (!truncate_file(segment->fd.get(), segment->size)) {
                segment->tail_dirty = true;
            }
            segment->written = segment->size;
            segment->staged_last_offset = segment->last_offset;
            segment->staged_max_timestamp = segment->max_timestamp;
            segment->staged_index.clear();
            segment->last_indexed_position =
                segment->index.empty() ? 0 : segment->index.back().position;
            if (segment->last_offset < 0) {
                segment->first_timestamp = no_timestamp;  // still empty: no age to roll by
            }
        }
    }
    batch_segments_.clear();
    in_batch_ = false;
    rolled_in_batch_ = false;
    batch_error_.clear();
}

std::size_t log_partition::apply_retention(std::int64_t now_ms, std::int64_t retention_ms,
                                           std::int64_t retention_bytes) {
    std::vector<std::shared_ptr<log_segment>> removed;
    {
        std::lock_guard lock(mutex_);
        std::uint64_t total = 0;
        for (const auto& segment : segments_) {
            total += segment->size;
        }
        while (segments_.size() > 1) {
            const auto& front = segments_.front();
            const bool expired =
                retention_ms >= 0 && (front->max_timestamp == no_timestamp ||
                                      front->max_timestamp < now_ms - retention_ms);
            const bool oversize =
                retention_bytes >= 0 &&
                total - front->size >= static_cast<std::uint64_t>(retention_bytes);
            if (!expired && !oversize) {
                break;
            }
            total -= front->size;
            removed.push_back(front);
            segments_.erase(segments_.begin());
        }
    }
    for (const auto& segment : removed) {
        remove_quietly(segment->path);  // readers still holding it keep their descriptor
    }
    return removed.size();
}

status log_partition::compact(std::int64_t now_ms, bool force) {
    if (deleted()) {
        return {};
    }
    std::vector<std::shared_ptr<log_segment>> segments;
    std::vector<std::uint64_t> sizes;
    {
        std::lock_guard lock(mutex_);
        segments = segments_;
        for (const auto& segment : segments_) {
            sizes.push_back(segment->size);
        }
    }
    const std::size_t closed = segments.size() - 1;
    if (closed == 0 ||
        (!force && segments.back()->base_offset == clean_end_ && !tombstones_pending_)) {
        return {};
    }

    // Pass 1: the newest offset of every key, over all segments including the active one.
    std::vector<char> buffer(scan_buffer_bytes);
    key_map latest;
    for (std::size_t i = 0; i < segments.size(); ++i) {
        auto scanned =
            scan_records(*segments[i], sizes[i], buffer,
                         [&](const log_format::record_view& record, const char*, std::size_t) {
                             auto it = latest.find(record.key);
                             if (it == latest.end()) {
                                 latest.emplace(std::string(record.key), record.offset);
                             } else {
                                 it->second = record.offset;
                             }
                         });
        if (!scanned) {
            return scanned.error();
        }
    }

    // Pass 2: rewrite runs of closed segments, each run into one new segment no larger than
    // segment_bytes. Kept frames are copied byte for byte (their offsets and CRCs stay).
    const std::int64_t tombstone_deadline = now_ms - config_.tombstone_retention.count();
    bool tombstones_left = false;
    std::size_t first = 0;
    while (first < closed) {
        const std::int64_t base = segments[first]->base_offset;
        const auto cleaned_path = dir_ / (stem(base) + ".cleaned");
        auto out_fd = open_file(cleaned_path, O_RDWR | O_CREAT | O_TRUNC);
        if (!out_fd) {
            return out_fd.error();
        }
        auto output = std::make_shared<log_segment>();
        output->base_offset = base;
        output->path = dir_ / log_segment::file_name(base);
        std::string out;
        bool dropped = false;
        status write_status;
        auto emit = [&](const log_format::record_view& record, const char* frame,
                        std::size_t frame_size) {
            const auto it = latest.find(record.key);
            bool keep = it != latest.end() && it->second == record.offset;
            if (keep && record.value.empty()) {
                keep = record.timestamp_ms >= tombstone_deadline;
                tombstones_left = tombstones_left || keep;
            }
            if (!keep) {
                dropped = true;
                return;
            }
            const std::uint64_t position = output->written + out.size();
            if (position > 0 &&
                position - output->last_indexed_position >= config_.index_interval_bytes) {
                output->index.push_back({record.offset, static_cast<std::uint32_t>(position)});
                output->last_indexed_position = position;
            }
            out.append(frame, frame_size);
            output->last_offset = record.offset;
            output->max_timestamp = std::max(output->max_timestamp, record.timestamp_ms);
            if (output->first_timestamp == no_timestamp) {
                output->first_timestamp = record.timestamp_ms;
            }
            if (out.size() >= scan_buffer_bytes && write_status) {
                write_status = pwrite_all(out_fd->get(), out.data(), out.size(), output->written);
                output->written += out.size();
                out.clear();
            }
        };
        std::size_t last = first;
        for (std::size_t i = first; i < closed; ++i) {
            if (i > first && output->written + out.size() + sizes[i] > config_.segment_bytes) {
                break;
            }
            if (auto scanned = scan_records(*segments[i], sizes[i], buffer, emit); !scanned) {
                remove_quietly(cleaned_path);
                return scanned.error();
            }
            last = i;
        }
        if (!dropped && last == first) {
            remove_quietly(cleaned_path);  // nothing to gain from rewriting a lone segment
            first = last + 1;
            continue;
        }
        if (write_status && !out.empty()) {
            write_status = pwrite_all(out_fd->get(), out.data(), out.size(), output->written);
            output->written += out.size();
        }
        if (write_status) {
            write_status = sync_data(out_fd->get());
        }
        if (!write_status) {
            remove_quietly(cleaned_path);
            return write_status.error();
        }
        // Commit point: the .swap name records which segments the output replaces, so a crash
        // from here on is finished by recover().
        const auto swap_path =
            dir_ / (stem(base) + "-" + stem(segments[last + 1]->base_offset) + ".swap");
        std::error_code ec;
        std::filesystem::rename(cleaned_path, swap_path, ec);
        if (ec) {
            remove_quietly(cleaned_path);
            return ec;
        }
        if (auto synced = sync_directory(dir_); !synced) {
            return synced.error();
        }
        for (std::size_t i = first; i <= last; ++i) {
            remove_quietly(segments[i]->path);
        }
        std::filesystem::rename(swap_path, output->path, ec);
        if (ec) {
            return ec;
        }
        if (auto synced = sync_directory(dir_); !synced) {
            return synced.error();
        }
        output->fd = std::move(*out_fd);
        output->size = output->written;
        output->staged_last_offset = output->last_offset;
        output->staged_max_timestamp = output->max_timestamp;
        {
            std::lock_guard lock(mutex_);
            auto begin = std::find(segments_.begin(), segments_.end(), segments[first]);
            STARLING_BUG(begin != segments_.end(), "compacted segment vanished");
            if (begin != segments_.end()) {
                auto end = begin + static_cast<std::ptrdiff_t>(last - first + 1);
                *begin = output;
                segments_.erase(begin + 1, end);
            }
        }
        first = last + 1;
    }
    clean_end_ = segments.back()->base_offset;
    tombstones_pending_ = tombstones_left;
    return {};
}

}  // namespace starling::adapters::embedded
