#include "adapters/embedded/sqlite_migrations.h"

#include "adapters/embedded/sqlite_db.h"
#include "adapters/embedded/sqlite_error.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <map>

namespace starling::adapters::embedded {

namespace {

// Kept in the runner rather than in V001 because the runner reads it before knowing whether
// any migration ran. Portable SQL: the PostgreSQL runner can use the same statement.
constexpr const char* schema_version_ddl =
    "CREATE TABLE IF NOT EXISTS schema_version ("
    " version BIGINT NOT NULL PRIMARY KEY,"
    " name TEXT NOT NULL,"
    " checksum TEXT NOT NULL,"
    " applied_time BIGINT NOT NULL)";

struct applied_migration {
    std::string name;
    std::string checksum;
};

result<std::map<std::int64_t, applied_migration>> read_applied(sqlite_db& db) {
    auto stmt = db.prepare("SELECT version, name, checksum FROM schema_version ORDER BY version");
    if (!stmt) {
        return stmt.error();
    }
    std::map<std::int64_t, applied_migration> applied;
    for (;;) {
        auto row = stmt->step();
        if (!row) {
            return row.error();
        }
        if (!*row) {
            break;
        }
        applied.emplace(stmt->column_int64(0),
                        applied_migration{stmt->column_text(1), stmt->column_text(2)});
    }
    return applied;
}

status apply_one(sqlite_db& db, const sql_migration& m, std::int64_t now_ms) {
    auto tx = sqlite_transaction::begin(db);
    if (!tx) {
        return tx.error();
    }
    if (auto st = db.exec(std::string(m.sql)); !st) {
        spdlog::error("migration {} failed: {}", m.name, st.error().message());
        return st;
    }
    auto stmt = db.prepare(
        "INSERT INTO schema_version (version, name, checksum, applied_time) VALUES (?, ?, ?, ?)");
    if (!stmt) {
        return stmt.error();
    }
    const std::string checksum = sql_migration_checksum(m.sql);
    stmt->bind(1, m.version).bind(2, m.name).bind(3, std::string_view(checksum)).bind(4, now_ms);
    if (auto st = stmt->run(); !st) {
        return st;
    }
    return tx->commit();
}

}  // namespace

std::string sql_migration_checksum(std::string_view sql) {
    std::uint64_t hash = 14695981039346656037ULL;
    for (const char c : sql) {
        hash ^= static_cast<unsigned char>(c);
        hash *= 1099511628211ULL;
    }
    return fmt::format("{:016x}", hash);
}

result<std::int64_t> apply_sql_migrations(sqlite_db& db, std::span<const sql_migration> migrations,
                                          std::int64_t now_ms) {
    for (std::size_t i = 1; i < migrations.size(); ++i) {
        if (migrations[i].version <= migrations[i - 1].version) {
            return make_error_code(store_errc::invalid_argument);
        }
    }
    if (auto st = db.exec(schema_version_ddl); !st) {
        return st.error();
    }
    auto applied = read_applied(db);
    if (!applied) {
        return applied.error();
    }
    std::int64_t current = applied->empty() ? 0 : applied->rbegin()->first;
    for (const auto& [version, row] : *applied) {
        auto it = std::find_if(migrations.begin(), migrations.end(),
                               [v = version](const sql_migration& m) { return m.version == v; });
        if (it == migrations.end()) {
            spdlog::error("schema_version {} ({}) is unknown to this binary", version, row.name);
            return make_error_code(store_errc::schema_too_new);
        }
        if (sql_migration_checksum(it->sql) != row.checksum) {
            spdlog::error("migration {} was changed after it was applied", row.name);
            return make_error_code(store_errc::migration_changed);
        }
    }
    for (const auto& m : migrations) {
        if (applied->contains(m.version)) {
            continue;
        }
        if (m.version < current) {
            // A migration older than the newest applied one was never run: the files were
            // renumbered or a branch merged out of order. Applying it now would run DDL against
            // a schema it was not written for.
            spdlog::error("migration {} is older than applied version {}", m.name, current);
            return make_error_code(store_errc::migration_changed);
        }
        if (auto st = apply_one(db, m, now_ms); !st) {
            return st.error();
        }
        spdlog::info("applied migration {}", m.name);
        current = m.version;
    }
    return current;
}

}  // namespace starling::adapters::embedded
