#include "adapters/embedded/sqlite_error.h"

#include <sqlite3.h>

#include <string>

namespace starling::adapters::embedded {

namespace {

class store_category_impl final : public std::error_category {
  public:
    const char* name() const noexcept override { return "starling.embedded_store"; }

    std::string message(int value) const override {
        switch (static_cast<store_errc>(value)) {
            case store_errc::queue_full:
                return "work queue full";
            case store_errc::stopped:
                return "store stopped";
            case store_errc::invalid_argument:
                return "invalid argument";
            case store_errc::already_exists:
                return "already exists";
            case store_errc::corrupt_record:
                return "corrupt stored record";
            case store_errc::schema_too_new:
                return "database schema is newer than this binary";
            case store_errc::migration_changed:
                return "an applied migration differs from the embedded one";
        }
        return "unknown embedded store error";
    }

    std::error_condition default_error_condition(int value) const noexcept override {
        switch (static_cast<store_errc>(value)) {
            case store_errc::queue_full:
                return std::errc::resource_unavailable_try_again;
            case store_errc::stopped:
                return std::errc::operation_canceled;
            case store_errc::invalid_argument:
                return std::errc::invalid_argument;
            case store_errc::already_exists:
                return std::errc::file_exists;
            case store_errc::corrupt_record:
                return std::errc::bad_message;
            case store_errc::schema_too_new:
            case store_errc::migration_changed:
                return std::errc::not_supported;
        }
        return {value, *this};
    }
};

class sqlite_category_impl final : public std::error_category {
  public:
    const char* name() const noexcept override { return "sqlite"; }
    std::string message(int value) const override { return sqlite3_errstr(value); }

    std::error_condition default_error_condition(int value) const noexcept override {
        switch (value & 0xff) {  // primary code: the low byte of an extended code
            case SQLITE_FULL:
                return std::errc::no_space_on_device;
            case SQLITE_BUSY:
            case SQLITE_LOCKED:
                return std::errc::device_or_resource_busy;
            case SQLITE_NOMEM:
                return std::errc::not_enough_memory;
            case SQLITE_IOERR:
                return std::errc::io_error;
            default:
                return {value, *this};
        }
    }
};

}  // namespace

const std::error_category& store_category() {
    static const store_category_impl category;
    return category;
}

std::error_code make_error_code(store_errc e) { return {static_cast<int>(e), store_category()}; }

const std::error_category& sqlite_category() {
    static const sqlite_category_impl category;
    return category;
}

std::error_code make_sqlite_error(int sqlite_rc) { return {sqlite_rc, sqlite_category()}; }

bool is_storage_failure(const std::error_code& ec) {
    if (ec.category() != sqlite_category()) {
        return false;
    }
    switch (ec.value() & 0xff) {
        case SQLITE_IOERR:
        case SQLITE_CORRUPT:
        case SQLITE_FULL:
        case SQLITE_CANTOPEN:
        case SQLITE_NOTADB:
        case SQLITE_READONLY:
            return true;
        default:
            return false;
    }
}

}  // namespace starling::adapters::embedded
