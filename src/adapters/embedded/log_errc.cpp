#include "adapters/embedded/log_errc.h"

#include <string>

namespace starling::adapters::embedded {

namespace {

class log_category_impl final : public std::error_category {
  public:
    const char* name() const noexcept override { return "starling.embedded_log"; }

    std::string message(int value) const override {
        switch (static_cast<log_errc>(value)) {
            case log_errc::queue_full:
                return "producer queue full";
            case log_errc::stopped:
                return "message log stopped";
            case log_errc::unknown_topic:
                return "unknown topic";
            case log_errc::unknown_partition:
                return "unknown partition";
            case log_errc::invalid_argument:
                return "invalid argument";
            case log_errc::record_too_large:
                return "record too large";
            case log_errc::not_assigned:
                return "partition not assigned to this consumer";
            case log_errc::consumer_closed:
                return "consumer closed";
            case log_errc::timed_out:
                return "timed out";
            case log_errc::would_deadlock:
                return "flush() called from a produce callback";
            case log_errc::corrupt_data:
                return "corrupt data in the log directory";
            case log_errc::disk_full:
                return "not enough free disk space for the message log";
        }
        return "unknown embedded log error";
    }

    std::error_condition default_error_condition(int value) const noexcept override {
        switch (static_cast<log_errc>(value)) {
            case log_errc::queue_full:
                return std::errc::resource_unavailable_try_again;
            case log_errc::stopped:
            case log_errc::consumer_closed:
                return std::errc::operation_canceled;
            case log_errc::unknown_topic:
            case log_errc::unknown_partition:
                return std::errc::no_such_file_or_directory;
            case log_errc::invalid_argument:
            case log_errc::not_assigned:
                return std::errc::invalid_argument;
            case log_errc::record_too_large:
                return std::errc::message_size;
            case log_errc::timed_out:
                return std::errc::timed_out;
            case log_errc::would_deadlock:
                return std::errc::resource_deadlock_would_occur;
            case log_errc::corrupt_data:
                return std::errc::bad_message;
            case log_errc::disk_full:
                return std::errc::no_space_on_device;
        }
        return {value, *this};
    }
};

}  // namespace

const std::error_category& log_category() {
    static const log_category_impl category;
    return category;
}

std::error_code make_error_code(log_errc e) { return {static_cast<int>(e), log_category()}; }

}  // namespace starling::adapters::embedded
