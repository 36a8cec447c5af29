#include "adapters/redis/redis_errc.h"

#include <string>

namespace starling::adapters::redis {

namespace {

class redis_category_impl final : public std::error_category {
  public:
    const char* name() const noexcept override { return "starling.redis"; }

    std::string message(int value) const override {
        switch (static_cast<redis_errc>(value)) {
            case redis_errc::not_connected:
                return "not connected to Redis";
            case redis_errc::timed_out:
                return "Redis did not answer in time";
            case redis_errc::io_error:
                return "connection to Redis lost";
            case redis_errc::server_error:
                return "Redis returned an error";
            case redis_errc::auth_failed:
                return "Redis refused AUTH or SELECT";
            case redis_errc::bad_reply:
                return "unexpected reply from Redis";
            case redis_errc::queue_full:
                return "work queue full";
            case redis_errc::stopped:
                return "Redis adapter stopped";
            case redis_errc::invalid_config:
                return "invalid Redis adapter configuration";
            case redis_errc::not_replicated:
                return "the write reached fewer Redis replicas than redis.wait.replicas";
        }
        return "unknown Redis adapter error";
    }

    std::error_condition default_error_condition(int value) const noexcept override {
        switch (static_cast<redis_errc>(value)) {
            case redis_errc::not_connected:
                return std::errc::not_connected;
            case redis_errc::timed_out:
                return std::errc::timed_out;
            case redis_errc::io_error:
                return std::errc::io_error;
            case redis_errc::server_error:
            case redis_errc::bad_reply:
                return std::errc::bad_message;
            case redis_errc::auth_failed:
                return std::errc::permission_denied;
            case redis_errc::queue_full:
                return std::errc::resource_unavailable_try_again;
            case redis_errc::stopped:
                return std::errc::operation_canceled;
            case redis_errc::invalid_config:
                return std::errc::invalid_argument;
            case redis_errc::not_replicated:
                return std::errc::io_error;
        }
        return {value, *this};
    }
};

}  // namespace

const std::error_category& redis_category() {
    static const redis_category_impl category;
    return category;
}

std::error_code make_error_code(redis_errc e) { return {static_cast<int>(e), redis_category()}; }

}  // namespace starling::adapters::redis
