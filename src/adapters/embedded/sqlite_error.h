#pragma once

// Error codes of the embedded store adapters (device inbox, SQLite metadata store, shared
// counters) and the category that carries raw SQLite result codes.
//
// store_errc values compare equal to the nearest std::errc condition (queue_full ==
// std::errc::resource_unavailable_try_again, ...) so port-level code and the contract suites
// can test conditions without naming this adapter.

#include <system_error>

namespace starling::adapters::embedded {

enum class store_errc {
    queue_full = 1,     // the adapter's bounded work queue is full: back off and retry
    stopped,            // the adapter is stopped (or failed to start)
    invalid_argument,   // the call's arguments break the port's rules
    already_exists,     // a unique key (e.g. credentials_id) belongs to another row
    corrupt_record,     // a stored value could not be decoded
    schema_too_new,     // the database was migrated by a newer binary
    migration_changed,  // an applied migration's text differs from the embedded one
};

const std::error_category& store_category();
std::error_code make_error_code(store_errc e);

// SQLite result codes (extended codes included); message() is sqlite3_errstr().
const std::error_category& sqlite_category();
std::error_code make_sqlite_error(int sqlite_rc);

// True for SQLite failures that mean the database file itself is in trouble (I/O error, disk
// full, corruption): the adapter reports itself unhealthy until an operation succeeds again.
bool is_storage_failure(const std::error_code& ec);

}  // namespace starling::adapters::embedded

template <>
struct std::is_error_code_enum<starling::adapters::embedded::store_errc> : std::true_type {};
