#pragma once

// log_offset_store: the committed offsets of every consumer group of the embedded log,
// persisted in one append-only journal, data_dir/log/offsets.journal.
//
// Structure: a map group -> (topic, partition) -> next offset in memory; every commit() appends
// one frame per entry (log_format.h framing) with a single write. Replay at open() rebuilds the
// map, the last entry for a key winning, and cuts a torn tail. When the journal grows past
// four times the size of the live entries (and 1 MiB), it is rewritten from the map into a new
// file that atomically replaces the old one via rename.
//
//   journal entry body := u8 kind | u16 group_length | u16 topic_length | i32 partition
//                         | i64 offset | group | topic
//   kind 1 = commit; kind 2 = forget topic (group_length = 0, partition = offset = 0)
//
// Durability: fsync_policy::always syncs before commit() returns; `interval` leaves it to
// sync_if_dirty(), which the log's writer thread calls every fsync_interval.
// Concurrency: every method is thread-safe (one internal mutex, a leaf lock).

#include "adapters/embedded/log_config.h"
#include "adapters/embedded/log_file.h"
#include "base/result.h"
#include "starling/message_log.h"

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace starling::adapters::embedded {

class log_offset_store {
  public:
    static result<std::unique_ptr<log_offset_store>> open(const std::filesystem::path& dir,
                                                          fsync_policy policy);

    std::optional<std::int64_t> committed(const std::string& group,
                                          const topic_partition& tp) const;
    status commit(const std::string& group,
                  const std::vector<std::pair<topic_partition, std::int64_t>>& next);
    // Drops every group's offsets of a deleted topic.
    status forget_topic(std::string_view topic);

    void sync_if_dirty();
    // Syncs and closes the journal; later commits fail with log_errc::stopped.
    void close();

  private:
    using group_offsets = std::map<topic_partition, std::int64_t>;

    log_offset_store(std::filesystem::path dir, fsync_policy policy);
    status replay();
    status append(const std::string& bytes);
    status rewrite();

    const std::filesystem::path dir_;
    const std::filesystem::path path_;
    const fsync_policy policy_;

    mutable std::mutex mutex_;
    unique_fd fd_;            // invalid once closed
    std::uint64_t size_ = 0;  // journal bytes
    bool dirty_ = false;      // written since the last fdatasync
    std::map<std::string, group_offsets, std::less<>> groups_;
};

}  // namespace starling::adapters::embedded
