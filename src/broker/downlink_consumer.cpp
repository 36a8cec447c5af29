#include "broker/downlink_consumer.h"

#include "base/retry_pacer.h"
#include "broker/batch_offsets.h"
#include "broker/broker_core.h"
#include "broker/client_actor.h"

#include "proto/starling.pb.h"
#include <spdlog/spdlog.h>

namespace starling::broker {

downlink_consumer::downlink_consumer(broker_core& core) : core_(core) {}

downlink_consumer::~downlink_consumer() { stop(); }

status downlink_consumer::start() {
    const auto& cfg = core_.cfg();
    const auto topic = core_.topics().downlink_basic(cfg.node_id);
    auto partitions = core_.log().partition_count(topic);
    if (!partitions) {
        spdlog::error("{}: {}", topic, partitions.error().message());
        return partitions.error();
    }
    // Manual assignment of every partition, each starting at its end offset now: copies
    // written while this node was down are for connections that no longer exist, and
    // everything written once start() returned is read (no group join to wait for).
    consumer_spec spec;
    spec.group_id = core_.topics().group(cfg.node_id + "-downlink");
    spec.max_poll_records = 500;
    for (std::int32_t p = 0; p < partitions.value(); ++p) {
        spec.assignment.push_back(topic_partition{topic, p});
    }
    auto consumer = core_.log().create_consumer(spec);
    if (!consumer) {
        spdlog::error("{}: cannot create consumer: {}", topic, consumer.error().message());
        return consumer.error();
    }
    for (const auto& tp : spec.assignment) {
        auto end = consumer.value()->end_offset(tp);
        if (!end) {
            consumer.value()->close();
            return end.error();
        }
        if (auto st = consumer.value()->seek(tp, end.value()); !st) {
            consumer.value()->close();
            return st;
        }
    }
    consumer_ = std::move(consumer.value());
    stop_ = std::stop_source();
    running_.store(true, std::memory_order_release);
    thread_ = std::thread(&downlink_consumer::run, this);
    return {};
}

void downlink_consumer::stop() {
    if (!running_.exchange(false)) {
        return;
    }
    stop_.request_stop();
    consumer_->wakeup();
    thread_.join();
    consumer_->close();
    consumer_.reset();
}

void downlink_consumer::run() {
    base::retry_pacer pacer("downlink consumer");
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
            hand_over(rec);
        }
        if (auto st = commit_batch(*consumer_, records); !st) {
            spdlog::warn("downlink consumer: commit failed: {}", st.error().message());
        }
    }
}

void downlink_consumer::hand_over(const log_record& rec) {
    proto::persisted_msg pm;
    if (!pm.ParseFromString(rec.value)) {
        spdlog::error("{}: unreadable record {}@{} ignored", rec.topic, rec.partition, rec.offset);
        dropped_.fetch_add(1, std::memory_order_acq_rel);
        return;
    }
    const auto count_drop = [&](metrics::drop_reason reason) {
        core_.probe().message_dropped(reason, rec.key, pm.msg().topic_name());
        dropped_.fetch_add(1, std::memory_order_acq_rel);
    };
    auto actor = core_.sessions().find_actor(rec.key);
    if (!actor || !actor->connected()) {
        count_drop(metrics::drop_reason::offline);  // the client left this node meanwhile
        return;
    }
    if (!actor->writable()) {
        count_drop(metrics::drop_reason::non_writable);
        return;
    }
    delivery d{.msg = std::make_shared<const app_message>(from_proto(pm.msg())),
               .qos = static_cast<mqtt::qos>(std::min<std::uint32_t>(pm.qos(), 2)),
               .retain = pm.retain(),
               .subscription_ids = {pm.subscription_ids().begin(), pm.subscription_ids().end()}};
    if (!actor->tell(client_msg::deliver{std::move(d)})) {
        count_drop(metrics::drop_reason::mailbox_full);
        return;
    }
    delivered_.fetch_add(1, std::memory_order_acq_rel);
}

}  // namespace starling::broker
