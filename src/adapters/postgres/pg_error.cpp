#include "adapters/postgres/pg_error.h"

#include <pqxx/except>
#include <spdlog/spdlog.h>

#include <string>

namespace starling::adapters::postgres {

namespace {

class pg_category_impl final : public std::error_category {
  public:
    const char* name() const noexcept override { return "starling.postgres"; }

    std::string message(int value) const override {
        switch (static_cast<pg_errc>(value)) {
            case pg_errc::queue_full:
                return "PostgreSQL work queue full";
            case pg_errc::stopped:
                return "PostgreSQL store stopped";
            case pg_errc::invalid_argument:
                return "invalid argument";
            case pg_errc::already_exists:
                return "already exists";
            case pg_errc::corrupt_record:
                return "corrupt stored record";
            case pg_errc::schema_too_new:
                return "database schema is newer than this binary";
            case pg_errc::migration_changed:
                return "an applied migration differs from the embedded one";
            case pg_errc::unavailable:
                return "cannot connect to PostgreSQL";
            case pg_errc::timed_out:
                return "PostgreSQL statement timed out";
            case pg_errc::outcome_unknown:
                return "connection lost during commit; the change may or may not be stored";
            case pg_errc::query_failed:
                return "PostgreSQL query failed";
        }
        return "unknown PostgreSQL store error";
    }

    std::error_condition default_error_condition(int value) const noexcept override {
        switch (static_cast<pg_errc>(value)) {
            case pg_errc::queue_full:
                return std::errc::resource_unavailable_try_again;
            case pg_errc::stopped:
                return std::errc::operation_canceled;
            case pg_errc::invalid_argument:
                return std::errc::invalid_argument;
            case pg_errc::already_exists:
                return std::errc::file_exists;
            case pg_errc::corrupt_record:
                return std::errc::bad_message;
            case pg_errc::schema_too_new:
            case pg_errc::migration_changed:
                return std::errc::not_supported;
            case pg_errc::unavailable:
            case pg_errc::outcome_unknown:
                return std::errc::not_connected;
            case pg_errc::timed_out:
                return std::errc::timed_out;
            case pg_errc::query_failed:
                return std::errc::io_error;
        }
        return {value, *this};
    }
};

}  // namespace

const std::error_category& pg_category() {
    static const pg_category_impl category;
    return category;
}

std::error_code make_error_code(pg_errc e) { return {static_cast<int>(e), pg_category()}; }

std::error_code error_from_exception(const std::exception& e) {
    if (dynamic_cast<const pqxx::in_doubt_error*>(&e) != nullptr ||
        dynamic_cast<const pqxx::statement_completion_unknown*>(&e) != nullptr) {
        spdlog::error("postgres: {}", e.what());
        return make_error_code(pg_errc::outcome_unknown);
    }
    if (dynamic_cast<const pqxx::broken_connection*>(&e) != nullptr) {
        spdlog::warn("postgres: connection lost: {}", e.what());
        return make_error_code(pg_errc::unavailable);
    }
    if (const auto* sql = dynamic_cast<const pqxx::sql_error*>(&e)) {
        const std::string& state = sql->sqlstate();
        if (state == "23505") {  // unique_violation: a caller's key clashes, not a fault
            return make_error_code(pg_errc::already_exists);
        }
        if (state == "57014") {  // query_canceled: statement_timeout
            spdlog::warn("postgres: statement timed out: {}", sql->query());
            return make_error_code(pg_errc::timed_out);
        }
        // Class 08 (connection exception) and 57P01..57P03 (admin shutdown, crash shutdown,
        // cannot connect now): the server went away under the statement.
        if (state.starts_with("08") || state.starts_with("57P")) {
            spdlog::warn("postgres: connection lost ({}): {}", state, e.what());
            return make_error_code(pg_errc::unavailable);
        }
        spdlog::error("postgres: query failed ({}): {} in: {}", state, e.what(), sql->query());
        return make_error_code(pg_errc::query_failed);
    }
    spdlog::error("postgres: {}", e.what());
    return make_error_code(pg_errc::query_failed);
}

bool is_connection_loss(const std::error_code& ec) {
    return ec == pg_errc::unavailable || ec == pg_errc::outcome_unknown;
}

}  // namespace starling::adapters::postgres
