#include "adapters/postgres/pg_migrations.h"

#include "adapters/postgres/pg_error.h"

#include <fmt/format.h>
#include <pqxx/pqxx>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <map>

namespace starling::adapters::postgres {

namespace {

// The same statement as the SQLite runner's: portable SQL.
constexpr const char* schema_version_ddl =
    "CREATE TABLE IF NOT EXISTS schema_version ("
    " version BIGINT NOT NULL PRIMARY KEY,"
    " name TEXT NOT NULL,"
    " checksum TEXT NOT NULL,"
    " applied_time BIGINT NOT NULL)";

// First key of the advisory lock: "Starling migrations". The second is the schema's hash, so
// runs in different schemas of one database (tests) do not wait for each other.
constexpr int advisory_lock_class = 0x53544d47;

struct applied_migration {
    std::string name;
    std::string checksum;
};

// Holds the session-level advisory lock for the runner's lifetime.
class migration_lock {
  public:
    migration_lock(pqxx::connection_base& c, std::string key)
        : connection_(c), key_(std::move(key)) {
        pqxx::nontransaction tx(connection_);
        tx.exec_params("SELECT pg_advisory_lock($1, hashtext($2))", advisory_lock_class, key_);
    }
    ~migration_lock() {
        try {
            pqxx::nontransaction tx(connection_);
            tx.exec_params("SELECT pg_advisory_unlock($1, hashtext($2))", advisory_lock_class,
                           key_);
        } catch (const std::exception& e) {
            // The lock is the session's: it goes when the connection does.
            spdlog::warn("postgres: releasing the migration lock failed: {}", e.what());
        }
    }
    migration_lock(const migration_lock&) = delete;
    migration_lock& operator=(const migration_lock&) = delete;

  private:
    pqxx::connection_base& connection_;
    std::string key_;
};

result<std::int64_t> apply_locked(pqxx::connection_base& c,
                                  std::span<const sql_migration> migrations, std::int64_t now_ms) {
    {
        pqxx::nontransaction tx(c);
        tx.exec(schema_version_ddl);
    }
    std::map<std::int64_t, applied_migration> applied;
    {
        pqxx::nontransaction tx(c);
        for (const auto& row :
             tx.exec("SELECT version, name, checksum FROM schema_version ORDER BY version")) {
            applied.emplace(row[0].as<std::int64_t>(),
                            applied_migration{row[1].as<std::string>(), row[2].as<std::string>()});
        }
    }
    std::int64_t current = applied.empty() ? 0 : applied.rbegin()->first;
    for (const auto& [version, row] : applied) {
        auto it = std::find_if(migrations.begin(), migrations.end(),
                               [v = version](const sql_migration& m) { return m.version == v; });
        if (it == migrations.end()) {
            spdlog::error("postgres: schema_version {} ({}) is unknown to this binary", version,
                          row.name);
            return make_error_code(pg_errc::schema_too_new);
        }
        if (sql_migration_checksum(it->sql) != row.checksum) {
            spdlog::error("postgres: migration {} was changed after it was applied", row.name);
            return make_error_code(pg_errc::migration_changed);
        }
    }
    for (const auto& m : migrations) {
        if (applied.contains(m.version)) {
            continue;
        }
        if (m.version < current) {
            // Never run, yet older than the newest applied one: renumbered files or an
            // out-of-order merge; its DDL was not written for the schema as it is now.
            spdlog::error("postgres: migration {} is older than applied version {}", m.name,
                          current);
            return make_error_code(pg_errc::migration_changed);
        }
        pqxx::work tx(c);
        tx.exec(std::string(m.sql));
        tx.exec_params(
            "INSERT INTO schema_version (version, name, checksum, applied_time)"
            " VALUES ($1, $2, $3, $4)",
            m.version, std::string(m.name), sql_migration_checksum(m.sql), now_ms);
        tx.commit();
        spdlog::info("postgres: applied migration {}", m.name);
        current = m.version;
    }
    return current;
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

result<std::int64_t> apply_pg_migrations(pqxx::connection_base& connection,
                                         std::span<const sql_migration> migrations,
                                         const std::string& schema, std::int64_t now_ms) {
    for (std::size_t i = 1; i < migrations.size(); ++i) {
        if (migrations[i].version <= migrations[i - 1].version) {
            return make_error_code(pg_errc::invalid_argument);
        }
    }
    try {
        migration_lock lock(connection, schema.empty() ? "public" : schema);
        if (!schema.empty()) {
            // Under the lock: two nodes creating the schema at once would otherwise race on
            // pg_namespace's unique index. The name is a plain identifier (checked by open()).
            pqxx::nontransaction tx(connection);
            tx.exec(fmt::format("CREATE SCHEMA IF NOT EXISTS {}", schema));
        }
        return apply_locked(connection, migrations, now_ms);
    } catch (const std::exception& e) {
        spdlog::error("postgres: migrating the metadata schema failed: {}", e.what());
        return error_from_exception(e);
    }
}

}  // namespace starling::adapters::postgres
