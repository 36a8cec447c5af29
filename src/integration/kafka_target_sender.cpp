#include "integration/kafka_target_sender.h"

#include "integration/http_payload.h"
#include <librdkafka/rdkafka.h>
#include <spdlog/spdlog.h>

#include <chrono>
#include <memory>

namespace starling::integration {
namespace {

using done_fn = std::function<void(send_outcome)>;

// Delivery report: the outcome of one produce (its opaque is the heap-held `done`).
void on_delivery(rd_kafka_t*, const rd_kafka_message_t* msg, void*) {
    std::unique_ptr<done_fn> done(static_cast<done_fn*>(msg->_private));
    if (!done) {
        return;
    }
    if (msg->err == RD_KAFKA_RESP_ERR_NO_ERROR) {
        (*done)({true, {}});
    } else {
        (*done)({false, std::string("Kafka: ") + rd_kafka_err2str(msg->err)});
    }
}

void on_log(const rd_kafka_t* rk, int level, const char* facility, const char* text) {
    const char* id = static_cast<const char*>(rd_kafka_opaque(rk));
    if (level <= 4) {
        spdlog::warn("integration {}: librdkafka {}: {}", id ? id : "?", facility, text);
    } else {
        spdlog::debug("integration {}: librdkafka {}: {}", id ? id : "?", facility, text);
    }
}

}  // namespace

kafka_target_sender::kafka_target_sender(const definition& d)
    : target_(d.kafka), payload_(d.payload), integration_id_(d.id) {}

kafka_target_sender::~kafka_target_sender() {
    stop();
    if (producer_ == nullptr) {
        return;
    }
    poller_.request_stop();
    poller_.join();
    // Whatever is left (purged by stop(): its reports are due at once) is reported here, so no
    // callback is lost with the producer.
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (rd_kafka_outq_len(producer_) > 0 && std::chrono::steady_clock::now() < deadline) {
        rd_kafka_purge(producer_, RD_KAFKA_PURGE_F_QUEUE | RD_KAFKA_PURGE_F_INFLIGHT);
        rd_kafka_poll(producer_, 50);
    }
    rd_kafka_destroy(producer_);
}

status kafka_target_sender::start() {
    rd_kafka_conf_t* conf = rd_kafka_conf_new();
    char reason[512] = {};
    const std::pair<std::string, std::string> ours[] = {
        {"bootstrap.servers", target_.bootstrap_servers},
        {"client.id", "starling-ie-" + integration_id_},
        {"acks", target_.acks},
        {"compression.type", target_.compression},
        {"linger.ms", std::to_string(target_.linger.count())},
        {"message.timeout.ms", std::to_string(target_.delivery_timeout.count())},
        {"enable.idempotence", target_.acks == "all" ? "true" : "false"},
    };
    auto set = [&](const std::string& name, const std::string& value) {
        if (rd_kafka_conf_set(conf, name.c_str(), value.c_str(), reason, sizeof reason) !=
            RD_KAFKA_CONF_OK) {
            spdlog::error("integration {}: Kafka property {}: {}", integration_id_, name, reason);
            return false;
        }
        return true;
    };
    for (const auto& [name, value] : ours) {
        if (!set(name, value)) {
            rd_kafka_conf_destroy(conf);
            return make_error_code(std::errc::invalid_argument);
        }
    }
    for (const auto& [name, value] : target_.other_properties) {
        if (!set(name, value)) {
            rd_kafka_conf_destroy(conf);
            return make_error_code(std::errc::invalid_argument);
        }
    }
    rd_kafka_conf_set_dr_msg_cb(conf, on_delivery);
    rd_kafka_conf_set_log_cb(conf, on_log);
    rd_kafka_conf_set_opaque(conf, integration_id_.data());
    producer_ = rd_kafka_new(RD_KAFKA_PRODUCER, conf, reason, sizeof reason);
    if (producer_ == nullptr) {
        rd_kafka_conf_destroy(conf);  // rd_kafka_new took it only on success
        spdlog::error("integration {}: Kafka producer not created: {}", integration_id_, reason);
        return make_error_code(std::errc::invalid_argument);
    }
    poller_ = std::jthread([this](std::stop_token stop) {
        while (!stop.stop_requested()) {
            rd_kafka_poll(producer_, 100);
        }
    });
    return {};
}

void kafka_target_sender::send(const broker::app_message& msg,
                               std::function<void(send_outcome)> done) {
    const http_body body = make_http_body(msg, payload_);
    produce(expand_template(target_.key_template, msg.topic, msg.publisher_id), body.body, {},
            std::move(done));
}

void kafka_target_sender::send_event(std::string_view event, const std::string& client_id,
                                     const std::string& json,
                                     std::function<void(send_outcome)> done) {
    produce(client_id, json, event, std::move(done));
}

void kafka_target_sender::produce(const std::string& key, const std::string& value,
                                  std::string_view event, std::function<void(send_outcome)> done) {
    if (stopping_.load() || producer_ == nullptr) {
        done({false, "stopping"});
        return;
    }
    rd_kafka_headers_t* headers = nullptr;
    if (!target_.headers.empty() || !event.empty()) {
        headers = rd_kafka_headers_new(target_.headers.size() + 1);
        for (const auto& [name, text] : target_.headers) {
            rd_kafka_header_add(headers, name.data(), static_cast<ssize_t>(name.size()),
                                text.data(), static_cast<ssize_t>(text.size()));
        }
        if (!event.empty()) {
            rd_kafka_header_add(headers, "ie-event", -1, event.data(),
                                static_cast<ssize_t>(event.size()));
        }
    }
    auto* opaque = new done_fn(std::move(done));
    const rd_kafka_resp_err_t err =
        rd_kafka_producev(producer_, RD_KAFKA_V_TOPIC(target_.topic.c_str()),
                          RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
                          RD_KAFKA_V_VALUE(const_cast<char*>(value.data()), value.size()),
                          RD_KAFKA_V_KEY(key.empty() ? nullptr : key.data(), key.size()),
                          RD_KAFKA_V_HEADERS(headers), RD_KAFKA_V_OPAQUE(opaque), RD_KAFKA_V_END);
    if (err == RD_KAFKA_RESP_ERR_NO_ERROR) {
        if (stopping_.load()) {
            // stop() came between the check above and the produce: its purge may have missed
            // this record, so purge again (its report then comes at once).
            rd_kafka_purge(producer_, RD_KAFKA_PURGE_F_QUEUE | RD_KAFKA_PURGE_F_INFLIGHT);
        }
        return;
    }
    {
        // Not queued (queue full, unknown topic in a failed state ...): the headers and the
        // callback are still ours.
        if (headers != nullptr) {
            rd_kafka_headers_destroy(headers);
        }
        std::unique_ptr<done_fn> failed(opaque);
        (*failed)({false, std::string("Kafka: ") + rd_kafka_err2str(err)});
    }
}

void kafka_target_sender::stop() {
    if (stopping_.exchange(true) || producer_ == nullptr) {
        return;
    }
    // Fail what is queued or in flight: the poller (running until the destructor) delivers
    // their reports, so an executor waiting on an attempt learns its outcome now.
    rd_kafka_purge(producer_, RD_KAFKA_PURGE_F_QUEUE | RD_KAFKA_PURGE_F_INFLIGHT);
}

std::string kafka_target_sender::describe() const {
    return "kafka://" + target_.bootstrap_servers + "/" + target_.topic;
}

}  // namespace starling::integration
