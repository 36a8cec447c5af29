#pragma once

// embedded_device_inbox: the embedded-mode device inbox (port include/starling/device_inbox.h),
// one SQLite file, <data_dir>/device_inbox.db, separate from the metadata store so inbox
// traffic never queues behind metadata calls.
//
// Data layout (created at open, versioned by PRAGMA user_version):
//   inbox_client(client_id PK, last_packet_id, message_count)
//       one row per client that ever had a message; last_packet_id survives an empty inbox and
//       goes only with clear(); message_count saves a count(*) on every append.
//   inbox_message(seq INTEGER PRIMARY KEY, client_id, packet_id, pubrel, expires_at_ms, record)
//       seq is the rowid: a new row always gets a larger one than every existing row, so
//       "ORDER BY seq" within a client is arrival order (oldest first).
//       index (client_id)            -> a client's messages in seq order (rowid is the suffix)
//       unique (client_id, packet_id) -> remove / mark_pubrel, and no id used twice.
//
// Semantics (TBMQ's Redis scripts, minus its PUBREL-drops-TTL bug):
//   * append assigns packet ids 1..65535 continuing from last_packet_id and wrapping 65535 -> 1;
//     an id still held by a pending message is skipped (MQTT forbids two in-flight messages
//     with one id; TBMQ overwrote the older one). Trimming first makes room, so a free id
//     always exists (max_messages <= 65535).
//   * past max_messages the oldest are trimmed, existing ones first, then the head of the batch
//     itself when the batch alone is larger; those still get ids. `trimmed` counts both.
//   * expires_at_ms == 0 means now + default_ttl_ms; a message with expires_at_ms <= now is
//     expired: read_pending deletes it and skips it.
//   * mark_pubrel flips the flag and keeps expires_at_ms and the record; unknown ids succeed,
//     like remove.
//
// Lifecycle: open() creates the directory and file, then starts the worker; stop() (or the
// destructor) finishes queued calls and closes the file. The clock must outlive the inbox.
// Concurrency: as sqlite_metadata_store — thread-safe methods that return at once, SQL and
// callbacks on the inbox's own thread in call order, and inline completion on the caller's
// thread only for store_errc::queue_full / store_errc::stopped.
// Durability: every successful callback follows a committed transaction; see the README.

#include "adapters/embedded/sqlite_worker.h"
#include "base/result.h"
#include "starling/clock.h"
#include "starling/device_inbox.h"

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <memory>

namespace starling::adapters::embedded {

class embedded_device_inbox final : public device_inbox {
  public:
    struct options {
        std::filesystem::path data_dir{};   // the file is data_dir / "device_inbox.db"
        inbox_settings settings{};          // max_messages must be 1..65535, default_ttl_ms > 0
        std::size_t queue_capacity = 8192;  // waiting calls; beyond: store_errc::queue_full
        bool fsync_commits = false;         // synchronous=FULL: survive power loss too
    };

    static result<std::unique_ptr<embedded_device_inbox>> open(options opts, const clock& clk);
    ~embedded_device_inbox() override;

    void stop();

    void append(const std::string& client_id, std::vector<inbox_entry> batch,
                callback<append_result> done) override;
    void read_pending(const std::string& client_id, std::size_t max,
                      callback<std::vector<inbox_message>> done) override;
    void remove_batch(const std::string& client_id, std::vector<std::uint16_t> packet_ids,
                      done_callback done) override;
    void mark_pubrel(const std::string& client_id, std::uint16_t packet_id,
                     done_callback done) override;
    void clear(const std::string& client_id, done_callback done) override;

    bool healthy() const override;

    std::size_t queue_depth() const { return worker_.queue_depth(); }
    // PRAGMA synchronous of the connection, read at open(): 1 = NORMAL, 2 = FULL (fsync_commits).
    std::int64_t synchronous_mode() const { return synchronous_.load(std::memory_order_relaxed); }

  private:
    embedded_device_inbox(options opts, const clock& clk);

    template <class R, class Work>
    void submit(std::function<void(R)> done, Work work) {
        post_call(worker_, storage_ok_, std::move(done), std::move(work));
    }

    result<append_result> do_append(sqlite_db& db, const std::string& client_id,
                                    const std::vector<inbox_entry>& batch);
    result<std::vector<inbox_message>> do_read(sqlite_db& db, const std::string& client_id,
                                               std::size_t max);

    const options options_;
    const clock& clock_;
    sqlite_worker worker_;
    std::atomic<bool> storage_ok_{true};
    std::atomic<std::int64_t> synchronous_{-1};
};

}  // namespace starling::adapters::embedded
