#pragma once

// Error codes of the PostgreSQL metadata store, and the one place where libpqxx's exceptions
// become error codes (docs/style.md rule 5: libpqxx reports everything by throwing, so each call
// into it is wrapped and nothing escapes onto the data path).
//
// pg_errc values compare equal to the nearest std::errc condition, the same ones the SQLite
// adapter uses, so port-level code and the contract suite test conditions without naming an
// adapter.

#include <exception>
#include <system_error>

namespace starling::adapters::postgres {

enum class pg_errc {
    queue_full = 1,     // the pool's bounded queue is full: back off and retry
    stopped,            // the store is stopped
    invalid_argument,   // the call's arguments break the port's rules
    already_exists,     // a unique key (e.g. credentials_id) belongs to another row
    corrupt_record,     // a stored value could not be decoded
    schema_too_new,     // the database was migrated by a newer binary
    migration_changed,  // an applied migration's text differs from the embedded one
    unavailable,        // no connection: refused, login rejected, lost, or waiting out the backoff
    timed_out,          // statement_timeout cancelled the statement
    outcome_unknown,    // the connection broke during COMMIT: the change may or may not be in
    query_failed,       // any other error the server reported (logged with its SQLSTATE)
};

const std::error_category& pg_category();
std::error_code make_error_code(pg_errc e);

// The error code for an exception thrown by libpqxx (or by code running inside a store task).
// Logs the server's message and SQLSTATE for the kinds an operator has to look at.
std::error_code error_from_exception(const std::exception& e);

// True for errors that mean the connection is gone (its worker must reconnect).
bool is_connection_loss(const std::error_code& ec);

}  // namespace starling::adapters::postgres

template <>
struct std::is_error_code_enum<starling::adapters::postgres::pg_errc> : std::true_type {};
