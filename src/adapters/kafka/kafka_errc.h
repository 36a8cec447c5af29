#pragma once

// Errors of the Kafka adapter: librdkafka's rd_kafka_resp_err_t values (broker error codes and
// librdkafka's own negative "__" codes) as std::error_code in the "starling.kafka" category.
//
// Each value compares equal to the nearest std::errc condition, the same ones the embedded log
// uses (adapters/embedded/log_errc.h): unknown topic/partition == no_such_file_or_directory,
// message timeout == timed_out, full producer queue == resource_unavailable_try_again, ... so
// the broker and the contract suite test conditions without naming an adapter. message() is
// librdkafka's own text (rd_kafka_err2str).

#include <librdkafka/rdkafka.h>

#include <system_error>

namespace starling::adapters::kafka {

const std::error_category& kafka_category();

// RD_KAFKA_RESP_ERR_NO_ERROR gives an empty (success) error_code.
std::error_code make_kafka_error(rd_kafka_resp_err_t err);

}  // namespace starling::adapters::kafka
