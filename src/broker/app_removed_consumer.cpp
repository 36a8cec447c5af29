#include "broker/app_removed_consumer.h"

#include "base/retry_pacer.h"
#include "broker/batch_offsets.h"
#include "broker/broker_core.h"

#include <spdlog/spdlog.h>

namespace starling::broker {

app_removed_consumer::app_removed_consumer(broker_core& core) : core_(core) {}

app_removed_consumer::~app_removed_consumer() { stop(); }

status app_removed_consumer::start() {
    consumer_spec spec;
    spec.group_id = core_.topics().group("app-removed-consumer-group");
    spec.topics = {core_.topics().sys_app_removed()};
    // Earliest: a record written before the group existed still names a topic to delete; the
    // mirror check makes an old record harmless.
    spec.reset = offset_reset::earliest;
    spec.max_poll_records = 100;
    auto consumer = core_.log().create_consumer(spec);
    if (!consumer) {
        spdlog::error("sys.app.removed: cannot create consumer: {}", consumer.error().message());
        return consumer.error();
    }
    consumer_ = std::move(consumer.value());
    stop_ = std::stop_source();
    running_.store(true, std::memory_order_release);
    thread_ = std::thread(&app_removed_consumer::run, this);
    return {};
}

void app_removed_consumer::stop() {
    if (!running_.exchange(false)) {
        return;
    }
    stop_.request_stop();
    consumer_->wakeup();
    thread_.join();
    consumer_->close();
    consumer_.reset();
}

void app_removed_consumer::run() {
    base::retry_pacer pacer("sys.app.removed consumer");
    const auto stop = stop_.get_token();
    while (running_.load(std::memory_order_acquire)) {
        auto polled = consumer_->poll(core_.cfg().poll_interval);
        if (!polled) {
            if (!pacer.failed("poll", polled.error().message(), stop)) {
                break;
            }
            continue;
        }
        pacer.succeeded();
        auto& records = polled.value();
        if (records.empty()) {
            continue;
        }
        for (const auto& rec : records) {
            handle(rec);
        }
        if (auto st = commit_batch(*consumer_, records); !st) {
            spdlog::warn("sys.app.removed consumer: commit failed: {}", st.error().message());
        }
    }
}

void app_removed_consumer::handle(const log_record& rec) {
    const std::string& client_id = rec.key;
    if (client_id.empty()) {
        spdlog::error("sys.app.removed: record {}@{} without a client id ignored", rec.partition,
                      rec.offset);
        return;
    }
    auto session = core_.sessions().find_session(client_id);
    if (session && session->persistent && session->type == client_type::application) {
        spdlog::info("sys.app.removed: client {} is an APPLICATION again; its topic stays",
                     client_id);
        skipped_.fetch_add(1, std::memory_order_acq_rel);
        return;
    }
    // The name is derived from the id here rather than taken from the record's value, so a record
    // can only ever delete an APPLICATION topic.
    const std::string topic = core_.topics().msg_app(client_id);
    if (auto st = core_.log().delete_topic(topic); !st) {
        spdlog::warn("sys.app.removed: topic {} of client {} not deleted: {}", topic, client_id,
                     st.error().message());
    }
    core_.metadata().delete_application_context(client_id, [id = client_id](status st) {
        if (!st) {
            spdlog::warn("sys.app.removed: APPLICATION context of {} not deleted: {}", id,
                         st.error().message());
        }
    });
    spdlog::info("sys.app.removed: APPLICATION topic {} and context of client {} removed", topic,
                 client_id);
    removed_.fetch_add(1, std::memory_order_acq_rel);
}

}  // namespace starling::broker
