#include "adapters/kafka/kafka_errc.h"

#include <gtest/gtest.h>

namespace starling::adapters::kafka {

namespace {

TEST(kafka_errc, librdkafka_errors_compare_equal_to_the_port_conditions) {
    EXPECT_FALSE(make_kafka_error(RD_KAFKA_RESP_ERR_NO_ERROR));
    EXPECT_EQ(make_kafka_error(RD_KAFKA_RESP_ERR__MSG_TIMED_OUT), std::errc::timed_out);
    EXPECT_EQ(make_kafka_error(RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART),
              std::errc::no_such_file_or_directory);
    EXPECT_EQ(make_kafka_error(RD_KAFKA_RESP_ERR__UNKNOWN_PARTITION),
              std::errc::no_such_file_or_directory);
    EXPECT_EQ(make_kafka_error(RD_KAFKA_RESP_ERR__QUEUE_FULL),
              std::errc::resource_unavailable_try_again);
    EXPECT_EQ(make_kafka_error(RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE), std::errc::message_size);
    EXPECT_EQ(make_kafka_error(RD_KAFKA_RESP_ERR__ALL_BROKERS_DOWN),
              std::errc::network_unreachable);
    EXPECT_EQ(make_kafka_error(RD_KAFKA_RESP_ERR__DESTROY), std::errc::operation_canceled);
    EXPECT_EQ(make_kafka_error(RD_KAFKA_RESP_ERR_ILLEGAL_GENERATION), std::errc::invalid_argument);
    EXPECT_EQ(make_kafka_error(RD_KAFKA_RESP_ERR_TOPIC_ALREADY_EXISTS), std::errc::file_exists);
}

TEST(kafka_errc, messages_are_librdkafkas_and_the_category_is_named) {
    const auto e = make_kafka_error(RD_KAFKA_RESP_ERR__MSG_TIMED_OUT);
    EXPECT_STREQ(e.category().name(), "starling.kafka");
    EXPECT_EQ(e.message(), rd_kafka_err2str(RD_KAFKA_RESP_ERR__MSG_TIMED_OUT));
    // Unmapped codes keep their own identity.
    const auto other = make_kafka_error(RD_KAFKA_RESP_ERR_NOT_COORDINATOR);
    EXPECT_EQ(other.default_error_condition().category(), kafka_category());
    EXPECT_FALSE(other.message().empty());
}

}  // namespace

}  // namespace starling::adapters::kafka
