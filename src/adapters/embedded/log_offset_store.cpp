#include "adapters/embedded/log_offset_store.h"

#include "adapters/embedded/log_errc.h"
#include "adapters/embedded/log_format.h"

#include <fcntl.h>
#include <spdlog/spdlog.h>

namespace starling::adapters::embedded {

namespace {

constexpr std::uint8_t kind_commit = 1;
constexpr std::uint8_t kind_forget_topic = 2;
constexpr std::size_t entry_fixed_bytes = 17;
constexpr std::uint64_t min_rewrite_bytes = 1U << 20;

void append_entry(std::string& out, std::uint8_t kind, std::string_view group,
                  std::string_view topic, std::int32_t partition, std::int64_t offset) {
    const std::size_t frame = log_format::begin_frame(out);
    const std::size_t at = out.size();
    out.resize(at + entry_fixed_bytes);
    char* p = out.data() + at;
    p[0] = static_cast<char>(kind);
    log_format::put_u16(p + 1, static_cast<std::uint16_t>(group.size()));
    log_format::put_u16(p + 3, static_cast<std::uint16_t>(topic.size()));
    log_format::put_u32(p + 5, static_cast<std::uint32_t>(partition));
    log_format::put_u64(p + 9, static_cast<std::uint64_t>(offset));
    out.append(group);
    out.append(topic);
    log_format::finish_frame(out, frame);
}

std::uint64_t entry_bytes(std::string_view group, std::string_view topic) {
    return log_format::frame_header_bytes + entry_fixed_bytes + group.size() + topic.size();
}

}  // namespace

log_offset_store::log_offset_store(std::filesystem::path dir, fsync_policy policy)
    : dir_(std::move(dir)), path_(dir_ / "offsets.journal"), policy_(policy) {}

result<std::unique_ptr<log_offset_store>> log_offset_store::open(const std::filesystem::path& dir,
                                                                 fsync_policy policy) {
    std::unique_ptr<log_offset_store> store(new log_offset_store(dir, policy));
    if (auto replayed = store->replay(); !replayed) {
        return replayed.error();
    }
    return store;
}

status log_offset_store::replay() {
    std::filesystem::path tmp = path_;
    tmp += ".tmp";
    std::error_code ignored;
    std::filesystem::remove(tmp, ignored);  // an interrupted rewrite; the journal is intact
    auto fd = open_file(path_, O_RDWR | O_CREAT);
    if (!fd) {
        return fd.error();
    }
    fd_ = std::move(*fd);
    auto content = read_whole_file(path_);
    if (!content) {
        return content.error();
    }
    std::size_t used = 0;
    while (used < content->size()) {
        std::string_view body;
        std::size_t frame_size = 0;
        const auto parsed = log_format::parse_frame(content->data() + used, content->size() - used,
                                                    body, frame_size);
        if (parsed != log_format::parse_status::ok || body.size() < entry_fixed_bytes) {
            break;
        }
        const char* p = body.data();
        const std::uint8_t kind = static_cast<std::uint8_t>(p[0]);
        const std::size_t group_size = log_format::get_u16(p + 1);
        const std::size_t topic_size = log_format::get_u16(p + 3);
        if (entry_fixed_bytes + group_size + topic_size != body.size()) {
            break;
        }
        std::string_view group(p + entry_fixed_bytes, group_size);
        std::string topic(p + entry_fixed_bytes + group_size, topic_size);
        if (kind == kind_commit) {
            const auto partition = static_cast<std::int32_t>(log_format::get_u32(p + 5));
            const auto offset = static_cast<std::int64_t>(log_format::get_u64(p + 9));
            auto it = groups_.find(group);
            if (it == groups_.end()) {
                it = groups_.emplace(std::string(group), group_offsets{}).first;
            }
            it->second[topic_partition{std::move(topic), partition}] = offset;
        } else if (kind == kind_forget_topic) {
            for (auto& [name, offsets] : groups_) {
                std::erase_if(offsets,
                              [&](const auto& entry) { return entry.first.topic == topic; });
            }
        } else {
            break;
        }
        used += frame_size;
    }
    if (used < content->size()) {
        spdlog::warn("embedded log: cut {} bytes of torn data from {}", content->size() - used,
                     path_.string());
        if (auto cut = truncate_file(fd_.get(), used); !cut) {
            return cut.error();
        }
    }
    size_ = used;
    return {};
}

std::optional<std::int64_t> log_offset_store::committed(const std::string& group,
                                                        const topic_partition& tp) const {
    std::lock_guard lock(mutex_);
    auto it = groups_.find(group);
    if (it == groups_.end()) {
        return std::nullopt;
    }
    auto entry = it->second.find(tp);
    if (entry == it->second.end()) {
        return std::nullopt;
    }
    return entry->second;
}

status log_offset_store::commit(const std::string& group,
                                const std::vector<std::pair<topic_partition, std::int64_t>>& next) {
    if (group.size() > 0xffff) {
        return make_error_code(log_errc::invalid_argument);
    }
    std::string bytes;
    for (const auto& [tp, offset] : next) {
        if (tp.topic.size() > 0xffff || offset < 0) {
            return make_error_code(log_errc::invalid_argument);
        }
        append_entry(bytes, kind_commit, group, tp.topic, tp.partition, offset);
    }
    std::lock_guard lock(mutex_);
    if (auto appended = append(bytes); !appended) {
        return appended.error();
    }
    auto& offsets = groups_[group];
    for (const auto& [tp, offset] : next) {
        offsets[tp] = offset;
    }
    return {};
}

status log_offset_store::forget_topic(std::string_view topic) {
    std::string bytes;
    append_entry(bytes, kind_forget_topic, {}, topic, 0, 0);
    std::lock_guard lock(mutex_);
    if (auto appended = append(bytes); !appended) {
        return appended.error();
    }
    for (auto& [name, offsets] : groups_) {
        std::erase_if(offsets, [&](const auto& entry) { return entry.first.topic == topic; });
    }
    return {};
}

status log_offset_store::append(const std::string& bytes) {
    if (!fd_.valid()) {
        return make_error_code(log_errc::stopped);
    }
    if (auto written = pwrite_all(fd_.get(), bytes.data(), bytes.size(), size_); !written) {
        (void)truncate_file(fd_.get(), size_);
        return written.error();
    }
    size_ += bytes.size();
    dirty_ = true;
    if (policy_ == fsync_policy::always) {
        if (auto synced = sync_data(fd_.get()); !synced) {
            return synced.error();
        }
        dirty_ = false;
    }
    if (size_ >= min_rewrite_bytes) {
        std::uint64_t live = 0;
        for (const auto& [name, offsets] : groups_) {
            for (const auto& [tp, offset] : offsets) {
                live += entry_bytes(name, tp.topic);
            }
        }
        if (size_ > 4 * live) {
            if (auto rewritten = rewrite(); !rewritten) {
                // The old journal is intact; try again on a later commit.
                spdlog::warn("embedded log: cannot rewrite {}: {}", path_.string(),
                             rewritten.error().message());
            }
        }
    }
    return {};
}

status log_offset_store::rewrite() {
    std::string bytes;
    for (const auto& [name, offsets] : groups_) {
        for (const auto& [tp, offset] : offsets) {
            append_entry(bytes, kind_commit, name, tp.topic, tp.partition, offset);
        }
    }
    std::filesystem::path tmp = path_;
    tmp += ".tmp";
    auto fd = open_file(tmp, O_RDWR | O_CREAT | O_TRUNC);
    if (!fd) {
        return fd.error();
    }
    status done = pwrite_all(fd->get(), bytes.data(), bytes.size(), 0);
    if (done) {
        done = sync_data(fd->get());
    }
    if (done) {
        std::error_code ec;
        std::filesystem::rename(tmp, path_, ec);
        if (ec) {
            done = ec;
        }
    }
    if (!done) {
        std::error_code ignored;
        std::filesystem::remove(tmp, ignored);
        return done.error();
    }
    // From the rename on, appends must go to the new file.
    fd_ = std::move(*fd);
    size_ = bytes.size();
    dirty_ = false;
    return sync_directory(dir_);
}

void log_offset_store::close() {
    sync_if_dirty();
    std::lock_guard lock(mutex_);
    fd_.reset();
}

void log_offset_store::sync_if_dirty() {
    std::lock_guard lock(mutex_);
    if (!dirty_ || !fd_.valid()) {
        return;
    }
    if (auto synced = sync_data(fd_.get()); !synced) {
        spdlog::error("embedded log: fdatasync of {} failed: {}", path_.string(),
                      synced.error().message());
        return;
    }
    dirty_ = false;
}

}  // namespace starling::adapters::embedded
