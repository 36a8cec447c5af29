#include "adapters/kafka/kafka_errc.h"

#include <string>

namespace starling::adapters::kafka {

namespace {

class kafka_category_impl final : public std::error_category {
  public:
    const char* name() const noexcept override { return "starling.kafka"; }

    std::string message(int value) const override {
        return rd_kafka_err2str(static_cast<rd_kafka_resp_err_t>(value));
    }

    std::error_condition default_error_condition(int value) const noexcept override {
        switch (static_cast<rd_kafka_resp_err_t>(value)) {
            case RD_KAFKA_RESP_ERR__UNKNOWN_TOPIC:
            case RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART:
            case RD_KAFKA_RESP_ERR__UNKNOWN_PARTITION:
                return std::errc::no_such_file_or_directory;
            case RD_KAFKA_RESP_ERR__MSG_TIMED_OUT:
            case RD_KAFKA_RESP_ERR__TIMED_OUT:
            case RD_KAFKA_RESP_ERR__TIMED_OUT_QUEUE:
            case RD_KAFKA_RESP_ERR_REQUEST_TIMED_OUT:
                return std::errc::timed_out;
            case RD_KAFKA_RESP_ERR__QUEUE_FULL:
                return std::errc::resource_unavailable_try_again;
            case RD_KAFKA_RESP_ERR__INVALID_ARG:
            case RD_KAFKA_RESP_ERR__INVALID_TYPE:
            case RD_KAFKA_RESP_ERR_INVALID_PARTITIONS:
            case RD_KAFKA_RESP_ERR_INVALID_REPLICATION_FACTOR:
            case RD_KAFKA_RESP_ERR_INVALID_CONFIG:
            case RD_KAFKA_RESP_ERR_TOPIC_EXCEPTION:
            case RD_KAFKA_RESP_ERR__STATE:
            // A commit of a partition this member no longer owns (the embedded log's
            // not_assigned maps to the same condition).
            case RD_KAFKA_RESP_ERR_ILLEGAL_GENERATION:
            case RD_KAFKA_RESP_ERR_UNKNOWN_MEMBER_ID:
            case RD_KAFKA_RESP_ERR_REBALANCE_IN_PROGRESS:
            case RD_KAFKA_RESP_ERR__ASSIGNMENT_LOST:
                return std::errc::invalid_argument;
            case RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE:
                return std::errc::message_size;
            case RD_KAFKA_RESP_ERR__TRANSPORT:
                return std::errc::connection_reset;
            case RD_KAFKA_RESP_ERR__ALL_BROKERS_DOWN:
                return std::errc::network_unreachable;
            case RD_KAFKA_RESP_ERR__DESTROY:
            case RD_KAFKA_RESP_ERR__PURGE_QUEUE:
            case RD_KAFKA_RESP_ERR__PURGE_INFLIGHT:
                return std::errc::operation_canceled;
            case RD_KAFKA_RESP_ERR_TOPIC_ALREADY_EXISTS:
                return std::errc::file_exists;
            case RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED:
            case RD_KAFKA_RESP_ERR_GROUP_AUTHORIZATION_FAILED:
            case RD_KAFKA_RESP_ERR_CLUSTER_AUTHORIZATION_FAILED:
            case RD_KAFKA_RESP_ERR__AUTHENTICATION:
                return std::errc::permission_denied;
            default:
                return {value, *this};
        }
    }
};

}  // namespace

const std::error_category& kafka_category() {
    static const kafka_category_impl category;
    return category;
}

std::error_code make_kafka_error(rd_kafka_resp_err_t err) {
    if (err == RD_KAFKA_RESP_ERR_NO_ERROR) {
        return {};
    }
    return {static_cast<int>(err), kafka_category()};
}

}  // namespace starling::adapters::kafka
