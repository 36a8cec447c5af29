#pragma once

// Versioned SQL migrations of the metadata schema (src/adapters/sql/migrations/V<n>__<name>.sql)
// and the runner that applies them to a SQLite database.
//
// The .sql files are written in the common subset of SQLite and PostgreSQL so the PostgreSQL
// adapter applies the same files. At build time CMake embeds their text into the binary
// (sqlite_embed_migrations.cmake generates sql_migrations_data.cpp), so a deployed broker
// needs no files besides its data_dir.
//
// schema_version records each applied migration (version, file name, checksum of its text,
// time). At start the runner checks the applied ones against the embedded ones and applies the
// missing ones in ascending order, each in its own transaction together with its
// schema_version row: a crash mid-migration leaves the previous version intact.

#include "base/result.h"

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace starling::adapters::embedded {

class sqlite_db;

struct sql_migration {
    std::int64_t version = 0;
    std::string_view name;  // file name, e.g. "V001__init.sql"
    std::string_view sql;
};

// The migrations compiled into this binary, ascending by version.
std::span<const sql_migration> embedded_sql_migrations();

// FNV-1a 64 of the text, as 16 hex digits: detects an applied migration edited afterwards.
std::string sql_migration_checksum(std::string_view sql);

// Applies the migrations of `migrations` newer than the database's version. Returns the
// resulting schema version. Fails with store_errc::schema_too_new when the database holds a
// version this binary does not know, store_errc::migration_changed when an applied migration's
// checksum differs, store_errc::invalid_argument when `migrations` is not strictly ascending.
result<std::int64_t> apply_sql_migrations(sqlite_db& db, std::span<const sql_migration> migrations,
                                          std::int64_t now_ms);

}  // namespace starling::adapters::embedded
