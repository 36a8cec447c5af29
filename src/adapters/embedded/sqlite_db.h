#pragma once

// Thin RAII layer over the SQLite C API, shared by the embedded device inbox and the SQLite
// metadata store:
//   sqlite_db           one connection, with a cache of prepared statements
//   sqlite_stmt         a borrowed cached statement; resets itself when it goes out of scope
//   sqlite_transaction  BEGIN ... COMMIT, rolled back unless committed
//
// Concurrency: none. A connection is opened with SQLITE_OPEN_NOMUTEX and belongs to the one
// thread that opened it (a sqlite_worker); nothing here takes a lock.

#include "base/result.h"

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <system_error>
#include <unordered_map>

struct sqlite3;
struct sqlite3_stmt;

namespace starling::adapters::embedded {

struct sqlite_open_options {
    // synchronous=FULL (fsync on every commit, survives power loss) instead of NORMAL
    // (survives a process crash; see README "Durability").
    bool fsync_commits = false;
    bool foreign_keys = false;
    // locking_mode=EXCLUSIVE: a second process that opens the same file fails instead of
    // sharing it (two brokers on one data_dir would corrupt each other's state).
    bool exclusive = true;
};

class sqlite_stmt;

class sqlite_db {
  public:
    static result<std::unique_ptr<sqlite_db>> open(const std::filesystem::path& path,
                                                   const sqlite_open_options& options);
    ~sqlite_db();
    sqlite_db(const sqlite_db&) = delete;
    sqlite_db& operator=(const sqlite_db&) = delete;

    // Runs one or more statements without parameters (schema, pragmas, migrations).
    status exec(const std::string& sql);

    // The prepared statement for `sql`, compiled on first use and cached for the connection's
    // lifetime. Callers pass string literals; the text is the cache key.
    result<sqlite_stmt> prepare(std::string_view sql);

    // Rows changed by the last INSERT/UPDATE/DELETE.
    std::int64_t changes() const;

    // Turns a SQLite result code into an error_code, logging the connection's detailed message
    // (which constraint, which column) since the code alone loses it.
    std::error_code error(int rc) const;

    std::int64_t pragma_int(const char* name);

  private:
    explicit sqlite_db(sqlite3* handle) : handle_(handle) {}

    sqlite3* handle_;
    std::unordered_map<std::string, sqlite3_stmt*> statements_;
};

// A cached statement borrowed for one use: bind, step, read columns. Destruction resets it and
// clears its bindings so the next user starts clean. Text and blobs are bound without copying
// (SQLITE_STATIC): the bound data must outlive the last step().
class sqlite_stmt {
  public:
    sqlite_stmt(sqlite_db& db, sqlite3_stmt* stmt) : db_(&db), stmt_(stmt) {}
    sqlite_stmt(sqlite_stmt&& other) noexcept
        : db_(other.db_), stmt_(other.stmt_), bind_rc_(other.bind_rc_) {
        other.stmt_ = nullptr;
    }
    sqlite_stmt& operator=(sqlite_stmt&&) = delete;
    sqlite_stmt(const sqlite_stmt&) = delete;
    ~sqlite_stmt();

    // Parameters are 1-based, as in SQLite.
    sqlite_stmt& bind(int index, std::int64_t value);
    sqlite_stmt& bind(int index, std::string_view text);
    sqlite_stmt& bind_blob(int index, std::string_view bytes);
    sqlite_stmt& bind_null(int index);

    // One step: true when a row is available, false when the statement is done.
    result<bool> step();
    // Steps a statement that returns no rows (INSERT/UPDATE/DELETE) to completion.
    status run();
    // Rewinds the statement and clears its bindings, for another use in the same scope.
    void reset();

    // Columns are 0-based, as in SQLite.
    std::int64_t column_int64(int index) const;
    std::string column_text(int index) const;
    std::string column_blob(int index) const;
    bool column_is_null(int index) const;

  private:
    sqlite_db* db_;
    sqlite3_stmt* stmt_;
    int bind_rc_ = 0;  // first failed bind, reported by step()
};

class sqlite_transaction {
  public:
    static result<sqlite_transaction> begin(sqlite_db& db);
    sqlite_transaction(sqlite_transaction&& other) noexcept : db_(other.db_) {
        other.db_ = nullptr;
    }
    sqlite_transaction& operator=(sqlite_transaction&&) = delete;
    sqlite_transaction(const sqlite_transaction&) = delete;
    ~sqlite_transaction();  // rolls back unless committed

    status commit();

  private:
    explicit sqlite_transaction(sqlite_db& db) : db_(&db) {}
    sqlite_db* db_;  // null once committed or rolled back
};

}  // namespace starling::adapters::embedded
