#pragma once

// The metadata schema's migrations in PostgreSQL's dialect, and the runner that applies them.
//
// One schema, two dialects: the files of src/adapters/sql/migrations/V<n>__<name>.sql are
// written in the common subset of SQLite and PostgreSQL, and both adapters apply them. Where
// PostgreSQL needs something else, a file of the same name in
// src/adapters/sql/migrations/postgresql/ replaces the common one for this adapter only (and a
// new name there adds a PostgreSQL-only version). CMake embeds the resulting set into the
// binary (src/adapters/embedded/sqlite_embed_migrations.cmake, run with this header's names).
//
// The runner works as the SQLite one (schema_version rows with a checksum, one transaction per
// migration, refuse edited / unknown / skipped versions) and adds what a shared server needs:
// every node of a cluster runs it at start, so it holds a PostgreSQL advisory lock (per schema)
// while it reads and applies, and the second node finds the work done.
//
// Runs at start-up on the thread that opens the store; throws nothing (libpqxx exceptions are
// turned into error codes).

#include "base/result.h"

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace pqxx {
class connection_base;
}

namespace starling::adapters::postgres {

struct sql_migration {
    std::int64_t version = 0;
    std::string_view name;  // file name, e.g. "V001__init.sql"
    std::string_view sql;
};

// The migrations compiled into this binary for PostgreSQL, ascending by version.
std::span<const sql_migration> postgres_sql_migrations();

// FNV-1a 64 of the text, as 16 hex digits (the SQLite runner's function, so both dialects'
// schema_version tables read alike).
std::string sql_migration_checksum(std::string_view sql);

// Creates `schema` when it is not empty and missing, then applies the migrations newer than
// the database's version inside it (the connection's search_path must name it). Returns the
// resulting version. Fails with pg_errc::schema_too_new, pg_errc::migration_changed,
// pg_errc::invalid_argument (not strictly ascending), or the database's error.
result<std::int64_t> apply_pg_migrations(pqxx::connection_base& connection,
                                         std::span<const sql_migration> migrations,
                                         const std::string& schema, std::int64_t now_ms);

}  // namespace starling::adapters::postgres
