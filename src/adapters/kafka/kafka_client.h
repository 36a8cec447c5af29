#pragma once

// Small RAII and conversion helpers over librdkafka's C API shared by kafka_message_log and
// kafka_log_consumer. No state, no threads.

#include "adapters/kafka/kafka_log_config.h"
#include "base/result.h"
#include "starling/message_log.h"

#include <librdkafka/rdkafka.h>

#include <memory>
#include <string>
#include <vector>

namespace starling::adapters::kafka {

struct handle_deleter {
    void operator()(rd_kafka_t* rk) const { rd_kafka_destroy(rk); }
};
using handle_ptr = std::unique_ptr<rd_kafka_t, handle_deleter>;

struct conf_deleter {
    void operator()(rd_kafka_conf_t* conf) const { rd_kafka_conf_destroy(conf); }
};
using conf_ptr = std::unique_ptr<rd_kafka_conf_t, conf_deleter>;

struct partition_list_deleter {
    void operator()(rd_kafka_topic_partition_list_t* list) const {
        rd_kafka_topic_partition_list_destroy(list);
    }
};
using partition_list_ptr = std::unique_ptr<rd_kafka_topic_partition_list_t, partition_list_deleter>;

struct queue_deleter {
    void operator()(rd_kafka_queue_t* q) const { rd_kafka_queue_destroy(q); }
};
using queue_ptr = std::unique_ptr<rd_kafka_queue_t, queue_deleter>;

// A configuration with every property set; a property librdkafka rejects fails with
// invalid_argument and `why` naming it ("linger.ms: ...").
result<conf_ptr> make_conf(const property_list& properties, std::string* why);

// Routes librdkafka's own log lines (otherwise printed to stderr) to spdlog, prefixed with the
// client's name. Problems reach the adapters' error callbacks too, so they log at info here.
void route_logs(rd_kafka_conf_t* conf);

// Creates a client; the conf is consumed on success and on failure.
result<handle_ptr> make_handle(rd_kafka_type_t type, conf_ptr conf, std::string* why);

// offset < 0 leaves librdkafka's default (RD_KAFKA_OFFSET_INVALID).
partition_list_ptr to_list(const std::vector<topic_partition>& tps);
std::vector<topic_partition> from_list(const rd_kafka_topic_partition_list_t* list);

}  // namespace starling::adapters::kafka
