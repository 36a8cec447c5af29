#include "adapters/embedded/message_log.h"

#include "adapters/embedded/log_engine.h"

namespace starling::adapters::embedded {

embedded_message_log::embedded_message_log(std::shared_ptr<log_engine> engine)
    : engine_(std::move(engine)) {}

embedded_message_log::~embedded_message_log() { stop(); }

result<std::unique_ptr<embedded_message_log>> embedded_message_log::open(
    embedded_log_config config) {
    auto engine = log_engine::open(std::move(config));
    if (!engine) {
        return engine.error();
    }
    return std::unique_ptr<embedded_message_log>(new embedded_message_log(std::move(*engine)));
}

void embedded_message_log::stop() { engine_->stop(); }

status embedded_message_log::create_topic(const topic_spec& spec) {
    return engine_->create_topic(spec);
}

status embedded_message_log::delete_topic(std::string_view name) {
    return engine_->delete_topic(name);
}

result<std::int32_t> embedded_message_log::partition_count(std::string_view topic) {
    return engine_->partition_count(topic);
}

void embedded_message_log::produce(std::string_view topic, std::string key, std::string value,
                                   std::vector<log_header> headers, produce_callback done,
                                   std::int32_t partition) {
    engine_->produce(topic, std::move(key), std::move(value), std::move(headers), std::move(done),
                     partition);
}

result<std::unique_ptr<log_consumer>> embedded_message_log::create_consumer(
    const consumer_spec& spec) {
    return engine_->create_consumer(spec);
}

status embedded_message_log::flush(std::chrono::milliseconds timeout) {
    return engine_->flush(timeout);
}

bool embedded_message_log::healthy() const { return engine_->healthy(); }

embedded_log_status embedded_message_log::log_status() const { return engine_->log_status(); }

std::size_t embedded_message_log::queue_depth() const { return engine_->queue_depth(); }

void embedded_message_log::run_maintenance_for_test() { engine_->run_maintenance_for_test(); }

void embedded_message_log::inject_write_error_for_test(std::error_code error) {
    engine_->inject_write_error_for_test(error);
}

std::size_t embedded_message_log::segment_count_for_test(const topic_partition& tp) const {
    return engine_->segment_count_for_test(tp);
}

}  // namespace starling::adapters::embedded
