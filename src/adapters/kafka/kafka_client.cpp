#include "adapters/kafka/kafka_client.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <array>
#include <system_error>

namespace starling::adapters::kafka {

result<conf_ptr> make_conf(const property_list& properties, std::string* why) {
    conf_ptr conf(rd_kafka_conf_new());
    std::array<char, 512> err{};
    for (const auto& [key, value] : properties) {
        if (rd_kafka_conf_set(conf.get(), key.c_str(), value.c_str(), err.data(), err.size()) !=
            RD_KAFKA_CONF_OK) {
            if (why != nullptr) {
                *why = key + ": " + err.data();
            }
            return std::make_error_code(std::errc::invalid_argument);
        }
    }
    return conf;
}

namespace {

void log_line(const rd_kafka_t* rk, int level, const char* facility, const char* text) {
    // syslog levels: 0..3 errors (also reported through the error callbacks), 7 debug.
    const auto severity = level >= 7 ? spdlog::level::debug : spdlog::level::info;
    spdlog::log(severity, "librdkafka {} {}: {}", rd_kafka_name(rk), facility, text);
}

}  // namespace

void route_logs(rd_kafka_conf_t* conf) { rd_kafka_conf_set_log_cb(conf, &log_line); }

result<handle_ptr> make_handle(rd_kafka_type_t type, conf_ptr conf, std::string* why) {
    std::array<char, 512> err{};
    // rd_kafka_new takes the conf only when it succeeds.
    rd_kafka_t* rk = rd_kafka_new(type, conf.get(), err.data(), err.size());
    if (rk == nullptr) {
        if (why != nullptr) {
            *why = err.data();
        }
        return std::make_error_code(std::errc::invalid_argument);
    }
    (void)conf.release();
    return handle_ptr(rk);
}

partition_list_ptr to_list(const std::vector<topic_partition>& tps) {
    partition_list_ptr list(
        rd_kafka_topic_partition_list_new(static_cast<int>(std::max<std::size_t>(tps.size(), 1))));
    for (const auto& tp : tps) {
        rd_kafka_topic_partition_list_add(list.get(), tp.topic.c_str(), tp.partition);
    }
    return list;
}

std::vector<topic_partition> from_list(const rd_kafka_topic_partition_list_t* list) {
    std::vector<topic_partition> out;
    if (list == nullptr) {
        return out;
    }
    out.reserve(static_cast<std::size_t>(list->cnt));
    for (int i = 0; i < list->cnt; ++i) {
        out.push_back({list->elems[i].topic, list->elems[i].partition});
    }
    return out;
}

}  // namespace starling::adapters::kafka
