#include "adapters/embedded/sqlite_db.h"

#include "adapters/embedded/sqlite_error.h"

#include <spdlog/spdlog.h>
#include <sqlite3.h>

namespace starling::adapters::embedded {

result<std::unique_ptr<sqlite_db>> sqlite_db::open(const std::filesystem::path& path,
                                                   const sqlite_open_options& options) {
    sqlite3* handle = nullptr;
    const int flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX;
    const int rc = sqlite3_open_v2(path.c_str(), &handle, flags, nullptr);
    if (rc != SQLITE_OK) {
        spdlog::error("sqlite: cannot open {}: {}", path.string(),
                      handle != nullptr ? sqlite3_errmsg(handle) : sqlite3_errstr(rc));
        sqlite3_close_v2(handle);
        return make_sqlite_error(rc);
    }
    sqlite3_extended_result_codes(handle, 1);
    std::unique_ptr<sqlite_db> db(new sqlite_db(handle));

    // locking_mode must precede the switch to WAL: in exclusive mode WAL keeps its index in
    // process memory (no -shm file) and the file lock is held until the connection closes.
    std::string pragmas;
    if (options.exclusive) {
        pragmas += "PRAGMA locking_mode=EXCLUSIVE;";
    }
    pragmas += "PRAGMA journal_mode=WAL;";
    pragmas += options.fsync_commits ? "PRAGMA synchronous=FULL;" : "PRAGMA synchronous=NORMAL;";
    pragmas += options.foreign_keys ? "PRAGMA foreign_keys=ON;" : "PRAGMA foreign_keys=OFF;";
    if (auto st = db->exec(pragmas); !st) {
        return st.error();
    }
    // journal_mode answers with the mode it actually set; anything but "wal" (a read-only
    // medium, an old file system) would silently weaken the durability the README promises.
    {
        auto mode = db->prepare("PRAGMA journal_mode");
        if (!mode) {
            return mode.error();
        }
        auto row = mode->step();
        if (!row) {
            return row.error();
        }
        if (!*row || mode->column_text(0) != "wal") {
            spdlog::error("sqlite: {} refuses WAL journal mode", path.string());
            return make_sqlite_error(SQLITE_CANTOPEN);
        }
    }  // resets the statement: COMMIT below fails while one is still running
    // Take the exclusive lock now (a write transaction) so a second process fails at open,
    // not at its first write.
    if (options.exclusive) {
        if (auto st = db->exec("BEGIN IMMEDIATE; COMMIT;"); !st) {
            return st.error();
        }
    }
    return db;
}

sqlite_db::~sqlite_db() {
    for (auto& [sql, stmt] : statements_) {
        sqlite3_finalize(stmt);
    }
    sqlite3_close_v2(handle_);
}

status sqlite_db::exec(const std::string& sql) {
    const int rc = sqlite3_exec(handle_, sql.c_str(), nullptr, nullptr, nullptr);
    if (rc != SQLITE_OK) {
        return error(rc);
    }
    return {};
}

result<sqlite_stmt> sqlite_db::prepare(std::string_view sql) {
    auto it = statements_.find(std::string(sql));
    if (it == statements_.end()) {
        sqlite3_stmt* stmt = nullptr;
        const int rc = sqlite3_prepare_v3(handle_, sql.data(), static_cast<int>(sql.size()),
                                          SQLITE_PREPARE_PERSISTENT, &stmt, nullptr);
        if (rc != SQLITE_OK) {
            return error(rc);
        }
        it = statements_.emplace(std::string(sql), stmt).first;
    }
    return sqlite_stmt(*this, it->second);
}

std::int64_t sqlite_db::changes() const { return sqlite3_changes64(handle_); }

std::error_code sqlite_db::error(int rc) const {
    // Constraint violations are expected outcomes the adapters map to their own codes; the
    // rest deserve a line in the log with SQLite's own explanation.
    if ((rc & 0xff) != SQLITE_CONSTRAINT) {
        spdlog::warn("sqlite: {} ({})", sqlite3_errmsg(handle_), rc);
    }
    return make_sqlite_error(rc);
}

std::int64_t sqlite_db::pragma_int(const char* name) {
    auto stmt = prepare(std::string("PRAGMA ") + name);
    if (!stmt) {
        return -1;
    }
    auto row = stmt->step();
    return row && *row ? stmt->column_int64(0) : -1;
}

sqlite_stmt::~sqlite_stmt() {
    if (stmt_ != nullptr) {
        reset();
    }
}

void sqlite_stmt::reset() {
    sqlite3_reset(stmt_);
    sqlite3_clear_bindings(stmt_);
    bind_rc_ = SQLITE_OK;
}

sqlite_stmt& sqlite_stmt::bind(int index, std::int64_t value) {
    const int rc = sqlite3_bind_int64(stmt_, index, value);
    if (bind_rc_ == SQLITE_OK) {
        bind_rc_ = rc;
    }
    return *this;
}

sqlite_stmt& sqlite_stmt::bind(int index, std::string_view text) {
    const int rc =
        sqlite3_bind_text64(stmt_, index, text.data(), text.size(), SQLITE_STATIC, SQLITE_UTF8);
    if (bind_rc_ == SQLITE_OK) {
        bind_rc_ = rc;
    }
    return *this;
}

sqlite_stmt& sqlite_stmt::bind_blob(int index, std::string_view bytes) {
    // A zero-length blob still binds a blob (not NULL): data() of an empty view may be null,
    // which SQLite would read as NULL.
    static const char empty = 0;
    const int rc = sqlite3_bind_blob64(stmt_, index, bytes.empty() ? &empty : bytes.data(),
                                       bytes.size(), SQLITE_STATIC);
    if (bind_rc_ == SQLITE_OK) {
        bind_rc_ = rc;
    }
    return *this;
}

sqlite_stmt& sqlite_stmt::bind_null(int index) {
    const int rc = sqlite3_bind_null(stmt_, index);
    if (bind_rc_ == SQLITE_OK) {
        bind_rc_ = rc;
    }
    return *this;
}

result<bool> sqlite_stmt::step() {
    // result<bool> cannot convert implicitly from error_code (bool is constructible from it),
    // hence the in_place_error tag.
    if (bind_rc_ != SQLITE_OK) {
        return {boost::system::in_place_error, db_->error(bind_rc_)};
    }
    const int rc = sqlite3_step(stmt_);
    if (rc == SQLITE_ROW) {
        return true;
    }
    if (rc == SQLITE_DONE) {
        return false;
    }
    return {boost::system::in_place_error, db_->error(rc)};
}

status sqlite_stmt::run() {
    auto r = step();
    if (!r) {
        return r.error();
    }
    return {};
}

std::int64_t sqlite_stmt::column_int64(int index) const {
    return sqlite3_column_int64(stmt_, index);
}

std::string sqlite_stmt::column_text(int index) const {
    const auto* text = sqlite3_column_text(stmt_, index);
    const int size = sqlite3_column_bytes(stmt_, index);
    if (text == nullptr) {
        return {};
    }
    return {reinterpret_cast<const char*>(text), static_cast<std::size_t>(size)};
}

std::string sqlite_stmt::column_blob(int index) const {
    const void* data = sqlite3_column_blob(stmt_, index);
    const int size = sqlite3_column_bytes(stmt_, index);
    if (data == nullptr) {
        return {};
    }
    return {static_cast<const char*>(data), static_cast<std::size_t>(size)};
}

bool sqlite_stmt::column_is_null(int index) const {
    return sqlite3_column_type(stmt_, index) == SQLITE_NULL;
}

result<sqlite_transaction> sqlite_transaction::begin(sqlite_db& db) {
    auto stmt = db.prepare("BEGIN");
    if (!stmt) {
        return stmt.error();
    }
    if (auto st = stmt->run(); !st) {
        return st.error();
    }
    return sqlite_transaction(db);
}

sqlite_transaction::~sqlite_transaction() {
    if (db_ != nullptr) {
        if (auto stmt = db_->prepare("ROLLBACK")) {
            (void)stmt->run();  // nothing more to do if even the rollback fails
        }
    }
}

status sqlite_transaction::commit() {
    auto stmt = db_->prepare("COMMIT");
    if (!stmt) {
        return stmt.error();
    }
    if (auto st = stmt->run(); !st) {
        return st;  // still active: the destructor rolls back
    }
    db_ = nullptr;
    return {};
}

}  // namespace starling::adapters::embedded
