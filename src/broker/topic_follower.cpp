#include "broker/topic_follower.h"

#include "base/retry_pacer.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <utility>

namespace starling::broker {

topic_follower::topic_follower(message_log& log, std::string what, std::vector<std::string> topics,
                               std::string group, std::int64_t retention_ms,
                               std::chrono::milliseconds period, hooks h)
    : log_(log),
      what_(std::move(what)),
      topics_(std::move(topics)),
      group_(std::move(group)),
      retention_ms_(retention_ms),
      period_(period),
      hooks_(std::move(h)) {}

topic_follower::~topic_follower() { stop(); }

status topic_follower::start() {
    consumer_spec spec;
    spec.group_id = group_;
    spec.reset = offset_reset::earliest;
    for (const auto& topic : topics_) {
        if (auto st = log_.create_topic(topic_spec{
                .name = topic, .partitions = 1, .retention_ms = retention_ms_, .compacted = true});
            !st) {
            spdlog::error("{}: cannot create {}: {}", what_, topic, st.error().message());
            return st;
        }
        spec.assignment.push_back(topic_partition{topic, 0});
    }
    auto consumer = log_.create_consumer(spec);
    if (!consumer) {
        spdlog::error("{}: cannot create its consumer: {}", what_, consumer.error().message());
        return consumer.error();
    }
    // From the start of each (compacted) topic: the latest record of every key.
    for (const auto& tp : spec.assignment) {
        if (auto st = consumer.value()->seek(tp, 0); !st) {
            consumer.value()->close();
            return st;
        }
    }
    consumer_ = std::move(consumer.value());
    running_.store(true, std::memory_order_release);
    thread_ = std::thread(&topic_follower::run, this);
    return {};
}

void topic_follower::stop() {
    if (!running_.exchange(false, std::memory_order_acq_rel)) {
        return;
    }
    stop_.request_stop();
    consumer_->wakeup();
    thread_.join();
    consumer_->close();
}

void topic_follower::run() {
    base::retry_pacer pacer(what_);
    const auto stop = stop_.get_token();
    auto next_tick = std::chrono::steady_clock::now();
    const auto poll_wait =
        std::min<std::chrono::milliseconds>(period_, std::chrono::milliseconds(500));
    while (running_.load(std::memory_order_acquire)) {
        if (hooks_.tick && std::chrono::steady_clock::now() >= next_tick) {
            hooks_.tick();
            next_tick = std::chrono::steady_clock::now() + period_;
        }
        auto polled = consumer_->poll(poll_wait);
        if (!polled) {
            if (!pacer.failed("poll", polled.error().message(), stop)) {
                break;
            }
            continue;
        }
        pacer.succeeded();
        for (const auto& rec : polled.value()) {
            hooks_.apply(rec);
        }
    }
}

}  // namespace starling::broker
