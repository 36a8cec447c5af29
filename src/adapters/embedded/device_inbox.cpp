#include "adapters/embedded/device_inbox.h"

#include "adapters/embedded/sqlite_error.h"

#include <algorithm>
#include <map>
#include <optional>
#include <utility>

namespace starling::adapters::embedded {

namespace {

constexpr std::int64_t schema_version = 2;

constexpr const char* schema_v1_ddl =
    "CREATE TABLE inbox_client ("
    " client_id TEXT NOT NULL PRIMARY KEY,"
    " last_packet_id INTEGER NOT NULL,"
    " message_count INTEGER NOT NULL) WITHOUT ROWID;"
    "CREATE TABLE inbox_message ("
    " seq INTEGER PRIMARY KEY,"
    " client_id TEXT NOT NULL,"
    " packet_id INTEGER NOT NULL,"
    " pubrel INTEGER NOT NULL,"
    " expires_at_ms INTEGER NOT NULL,"
    " record BLOB NOT NULL);"
    "CREATE INDEX inbox_message_client ON inbox_message (client_id);"
    "CREATE UNIQUE INDEX inbox_message_packet_id ON inbox_message (client_id, packet_id);";

// Version 2: the last log position taken per client and log (device_inbox.h, log_position).
constexpr const char* schema_v2_ddl =
    "CREATE TABLE inbox_log_position ("
    " client_id TEXT NOT NULL,"
    " log TEXT NOT NULL,"
    " log_offset INTEGER NOT NULL,"
    " timestamp_ms INTEGER NOT NULL,"
    " PRIMARY KEY (client_id, log)) WITHOUT ROWID;"
    "PRAGMA user_version = 2;";

// A new file gets every version's DDL; a version 1 file (an earlier release) gets the rest.
status create_schema(sqlite_db& db) {
    const std::int64_t version = db.pragma_int("user_version");
    if (version == schema_version) {
        return {};
    }
    if (version > schema_version) {
        return make_error_code(store_errc::schema_too_new);
    }
    auto tx = sqlite_transaction::begin(db);
    if (!tx) {
        return tx.error();
    }
    if (version == 0) {
        if (auto st = db.exec(schema_v1_ddl); !st) {
            return st;
        }
    }
    if (auto st = db.exec(schema_v2_ddl); !st) {
        return st;
    }
    return tx->commit();
}

constexpr std::uint16_t next_packet_id(std::uint16_t id) {
    return id == 65535 ? std::uint16_t{1} : static_cast<std::uint16_t>(id + 1);
}

struct client_row {
    std::uint16_t last_packet_id = 0;
    std::int64_t message_count = 0;
};

result<client_row> read_client(sqlite_db& db, const std::string& client_id) {
    auto stmt =
        db.prepare("SELECT last_packet_id, message_count FROM inbox_client WHERE client_id = ?");
    if (!stmt) {
        return stmt.error();
    }
    auto row = stmt->bind(1, client_id).step();
    if (!row) {
        return row.error();
    }
    if (!*row) {
        return client_row{};
    }
    const std::int64_t last = stmt->column_int64(0);
    if (last < 0 || last > 65535) {
        return make_error_code(store_errc::corrupt_record);
    }
    return client_row{static_cast<std::uint16_t>(last), stmt->column_int64(1)};
}

status write_client(sqlite_db& db, const std::string& client_id, const client_row& row) {
    auto stmt = db.prepare(
        "INSERT INTO inbox_client (client_id, last_packet_id, message_count) VALUES (?, ?, ?)"
        " ON CONFLICT (client_id) DO UPDATE SET last_packet_id = excluded.last_packet_id,"
        " message_count = excluded.message_count");
    if (!stmt) {
        return stmt.error();
    }
    return stmt->bind(1, client_id)
        .bind(2, std::int64_t{row.last_packet_id})
        .bind(3, row.message_count)
        .run();
}

struct stored_position {
    std::int64_t offset = 0;
    std::int64_t timestamp_ms = 0;
};

// Which entries of the batch are new (not repeats of a stored log position), and each log's
// position after the batch: its last new entry's.
result<std::vector<bool>> find_new_entries(sqlite_db& db, const std::string& client_id,
                                           const std::vector<inbox_entry>& batch,
                                           std::map<std::string, stored_position>& newest) {
    std::map<std::string, std::optional<stored_position>> stored;
    auto select = db.prepare(
        "SELECT log_offset, timestamp_ms FROM inbox_log_position WHERE client_id = ? AND log = ?");
    if (!select) {
        return select.error();
    }
    std::vector<bool> fresh(batch.size(), true);
    for (std::size_t i = 0; i < batch.size(); ++i) {
        const log_position& from = batch[i].from;
        if (from.log.empty()) {
            continue;
        }
        auto it = stored.find(from.log);
        if (it == stored.end()) {
            select->bind(1, client_id).bind(2, from.log);
            auto row = select->step();
            if (!row) {
                return row.error();
            }
            std::optional<stored_position> position;
            if (*row) {
                position = stored_position{select->column_int64(0), select->column_int64(1)};
            }
            select->reset();
            it = stored.emplace(from.log, position).first;
        }
        if (it->second && from.offset <= it->second->offset &&
            from.timestamp_ms <= it->second->timestamp_ms) {
            fresh[i] = false;
        } else {
            newest[from.log] = stored_position{from.offset, from.timestamp_ms};
        }
    }
    return fresh;
}

status write_positions(sqlite_db& db, const std::string& client_id,
                       const std::map<std::string, stored_position>& newest) {
    if (newest.empty()) {
        return {};
    }
    auto upsert = db.prepare(
        "INSERT INTO inbox_log_position (client_id, log, log_offset, timestamp_ms)"
        " VALUES (?, ?, ?, ?) ON CONFLICT (client_id, log) DO UPDATE SET"
        " log_offset = excluded.log_offset, timestamp_ms = excluded.timestamp_ms");
    if (!upsert) {
        return upsert.error();
    }
    for (const auto& [log, position] : newest) {
        upsert->bind(1, client_id)
            .bind(2, log)
            .bind(3, position.offset)
            .bind(4, position.timestamp_ms);
        if (auto st = upsert->run(); !st) {
            return st;
        }
        upsert->reset();
    }
    return {};
}

status adjust_count(sqlite_db& db, const std::string& client_id, std::int64_t delta) {
    auto stmt =
        db.prepare("UPDATE inbox_client SET message_count = message_count + ? WHERE client_id = ?");
    if (!stmt) {
        return stmt.error();
    }
    return stmt->bind(1, delta).bind(2, client_id).run();
}

}  // namespace

embedded_device_inbox::embedded_device_inbox(options opts, const clock& clk)
    : options_(std::move(opts)),
      clock_(clk),
      worker_(sqlite_worker::options{
          .path = options_.data_dir / "device_inbox.db",
          .queue_capacity = options_.queue_capacity,
          .thread_name = "sqlite-inbox",
          .open = {.fsync_commits = options_.fsync_commits},
      }) {}

result<std::unique_ptr<embedded_device_inbox>> embedded_device_inbox::open(options opts,
                                                                           const clock& clk) {
    if (opts.settings.max_messages == 0 || opts.settings.max_messages > 65535 ||
        opts.settings.default_ttl_ms <= 0 || opts.queue_capacity == 0) {
        return make_error_code(store_errc::invalid_argument);
    }
    std::error_code ec;
    std::filesystem::create_directories(opts.data_dir, ec);
    if (ec) {
        return ec;
    }
    std::unique_ptr<embedded_device_inbox> inbox(new embedded_device_inbox(std::move(opts), clk));
    auto* raw = inbox.get();
    auto st = inbox->worker_.start([raw](sqlite_db& db) -> status {
        auto created = create_schema(db);
        raw->synchronous_.store(db.pragma_int("synchronous"), std::memory_order_relaxed);
        return created;
    });
    if (!st) {
        return st.error();
    }
    return inbox;
}

embedded_device_inbox::~embedded_device_inbox() { stop(); }

void embedded_device_inbox::stop() { worker_.stop(); }

bool embedded_device_inbox::healthy() const {
    return worker_.running() && storage_ok_.load(std::memory_order_relaxed);
}

void embedded_device_inbox::append(const std::string& client_id, std::vector<inbox_entry> batch,
                                   callback<append_result> done) {
    submit(std::move(done), [this, client_id, batch = std::move(batch)](sqlite_db& db) {
        return do_append(db, client_id, batch);
    });
}

result<device_inbox::append_result> embedded_device_inbox::do_append(
    sqlite_db& db, const std::string& client_id, const std::vector<inbox_entry>& batch) {
    append_result out;
    if (batch.empty()) {
        return out;
    }
    const std::int64_t now = clock_.epoch_ms();
    const auto max = static_cast<std::int64_t>(options_.settings.max_messages);

    auto tx = sqlite_transaction::begin(db);
    if (!tx) {
        return tx.error();
    }
    auto client = read_client(db, client_id);
    if (!client) {
        return client.error();
    }
    std::map<std::string, stored_position> newest;
    auto fresh = find_new_entries(db, client_id, batch, newest);
    if (!fresh) {
        return fresh.error();
    }
    const auto n = static_cast<std::int64_t>(std::count(fresh->begin(), fresh->end(), true));

    // Make room before inserting, so at every insert fewer than max <= 65535 messages hold an
    // id and the id search below always finds a free one.
    const std::int64_t excess = std::max<std::int64_t>(0, client->message_count + n - max);
    const std::int64_t trim_existing = std::min(excess, client->message_count);
    const std::int64_t trim_batch = excess - trim_existing;
    if (trim_existing > 0) {
        auto trim = db.prepare(
            "DELETE FROM inbox_message WHERE seq IN (SELECT seq FROM inbox_message"
            " WHERE client_id = ? ORDER BY seq LIMIT ?)");
        if (!trim) {
            return trim.error();
        }
        if (auto st = trim->bind(1, client_id).bind(2, trim_existing).run(); !st) {
            return st.error();
        }
        client->message_count -= db.changes();
    }

    auto insert = db.prepare(
        "INSERT INTO inbox_message (client_id, packet_id, pubrel, expires_at_ms, record)"
        " VALUES (?, ?, 0, ?, ?) ON CONFLICT (client_id, packet_id) DO NOTHING");
    if (!insert) {
        return insert.error();
    }
    out.packet_ids.reserve(batch.size());
    std::uint16_t id = client->last_packet_id;
    std::int64_t new_entries = 0;  // of the batch so far
    for (std::size_t i = 0; i < batch.size(); ++i) {
        if (!(*fresh)[i]) {
            out.packet_ids.push_back(0);  // a repeat of its log position: not stored again
            ++out.repeats;
            continue;
        }
        id = next_packet_id(id);
        if (new_entries++ < trim_batch) {
            out.packet_ids.push_back(id);  // assigned, then trimmed with the batch's head
            continue;
        }
        const auto& entry = batch[i];
        const std::int64_t expires =
            entry.expires_at_ms != 0 ? entry.expires_at_ms : now + options_.settings.default_ttl_ms;
        for (;;) {
            insert->bind(1, client_id)
                .bind(2, std::int64_t{id})
                .bind(3, expires)
                .bind_blob(4, entry.record);
            if (auto st = insert->run(); !st) {
                return st.error();
            }
            const bool inserted = db.changes() == 1;
            insert->reset();
            if (inserted) {
                break;
            }
            id = next_packet_id(id);  // still held by a pending message: skip it
        }
        out.packet_ids.push_back(id);
        ++client->message_count;
    }
    client->last_packet_id = id;
    if (auto st = write_client(db, client_id, *client); !st) {
        return st.error();
    }
    if (auto st = write_positions(db, client_id, newest); !st) {
        return st.error();
    }
    if (auto st = tx->commit(); !st) {
        return st.error();
    }
    out.trimmed = static_cast<std::uint32_t>(excess);
    return out;
}

void embedded_device_inbox::read_pending(const std::string& client_id, std::size_t max,
                                         callback<std::vector<inbox_message>> done) {
    submit(std::move(done),
           [this, client_id, max](sqlite_db& db) { return do_read(db, client_id, max); });
}

result<std::vector<inbox_message>> embedded_device_inbox::do_read(sqlite_db& db,
                                                                  const std::string& client_id,
                                                                  std::size_t max) {
    std::vector<inbox_message> out;
    if (max == 0) {
        return out;
    }
    const std::int64_t now = clock_.epoch_ms();
    std::vector<std::int64_t> expired;
    {
        auto stmt = db.prepare(
            "SELECT seq, packet_id, pubrel, expires_at_ms, record FROM inbox_message"
            " WHERE client_id = ? ORDER BY seq");
        if (!stmt) {
            return stmt.error();
        }
        stmt->bind(1, client_id);
        while (out.size() < max) {
            auto row = stmt->step();
            if (!row) {
                return row.error();
            }
            if (!*row) {
                break;
            }
            const std::int64_t expires = stmt->column_int64(3);
            if (expires <= now) {
                expired.push_back(stmt->column_int64(0));
                continue;
            }
            const std::int64_t packet_id = stmt->column_int64(1);
            if (packet_id < 1 || packet_id > 65535) {
                return make_error_code(store_errc::corrupt_record);
            }
            out.push_back(inbox_message{
                .packet_id = static_cast<std::uint16_t>(packet_id),
                .pubrel = stmt->column_int64(2) != 0,
                .expires_at_ms = expires,
                .record = stmt->column_blob(4),
            });
        }
    }
    if (expired.empty()) {
        return out;
    }
    // Expired messages are deleted as the read meets them (Redis drops their keys by TTL and
    // GET_MESSAGES removes the dangling ZSET members the same way).
    auto tx = sqlite_transaction::begin(db);
    if (!tx) {
        return tx.error();
    }
    auto del = db.prepare("DELETE FROM inbox_message WHERE seq = ?");
    if (!del) {
        return del.error();
    }
    for (const std::int64_t seq : expired) {
        if (auto st = del->bind(1, seq).run(); !st) {
            return st.error();
        }
        del->reset();
    }
    if (auto st = adjust_count(db, client_id, -static_cast<std::int64_t>(expired.size())); !st) {
        return st.error();
    }
    if (auto st = tx->commit(); !st) {
        return st.error();
    }
    return out;
}

void embedded_device_inbox::remove_batch(const std::string& client_id,
                                         std::vector<std::uint16_t> packet_ids,
                                         done_callback done) {
    submit(std::move(done), [client_id, ids = std::move(packet_ids)](sqlite_db& db) -> status {
        auto tx = sqlite_transaction::begin(db);
        if (!tx) {
            return tx.error();
        }
        std::int64_t removed = 0;
        for (auto id : ids) {
            auto stmt =
                db.prepare("DELETE FROM inbox_message WHERE client_id = ? AND packet_id = ?");
            if (!stmt) {
                return stmt.error();
            }
            if (auto st = stmt->bind(1, client_id).bind(2, std::int64_t{id}).run(); !st) {
                return st;
            }
            removed += db.changes();
        }
        if (removed == 0) {
            return {};  // unknown ids: nothing changed, nothing to commit
        }
        if (auto st = adjust_count(db, client_id, -removed); !st) {
            return st;
        }
        return tx->commit();
    });
}

void embedded_device_inbox::mark_pubrel(const std::string& client_id, std::uint16_t packet_id,
                                        done_callback done) {
    submit(std::move(done), [client_id, packet_id](sqlite_db& db) -> status {
        // Only the flag changes: expires_at_ms stays (TBMQ's SET without EX dropped the TTL).
        auto stmt =
            db.prepare("UPDATE inbox_message SET pubrel = 1 WHERE client_id = ? AND packet_id = ?");
        if (!stmt) {
            return stmt.error();
        }
        return stmt->bind(1, client_id).bind(2, std::int64_t{packet_id}).run();
    });
}

void embedded_device_inbox::clear(const std::string& client_id, done_callback done) {
    submit(std::move(done), [client_id](sqlite_db& db) -> status {
        auto tx = sqlite_transaction::begin(db);
        if (!tx) {
            return tx.error();
        }
        for (const char* sql : {"DELETE FROM inbox_message WHERE client_id = ?",
                                "DELETE FROM inbox_client WHERE client_id = ?",
                                "DELETE FROM inbox_log_position WHERE client_id = ?"}) {
            auto stmt = db.prepare(sql);
            if (!stmt) {
                return stmt.error();
            }
            if (auto st = stmt->bind(1, client_id).run(); !st) {
                return st;
            }
        }
        return tx->commit();
    });
}

}  // namespace starling::adapters::embedded
