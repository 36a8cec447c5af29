#include "broker/persisted_consumer.h"

#include "broker/batch_offsets.h"
#include "broker/broker_core.h"
#include "broker/client_actor.h"

#include "proto/starling.pb.h"
#include <spdlog/spdlog.h>

#include <condition_variable>
#include <map>
#include <mutex>

namespace starling::broker {

persisted_consumer::persisted_consumer(broker_core& core) : core_(core) {}

persisted_consumer::~persisted_consumer() { stop(); }

status persisted_consumer::start() {
    const auto& cfg = core_.cfg();
    running_.store(true);
    for (std::int32_t i = 0; i < cfg.msg_persisted_consumers; ++i) {
        consumer_spec spec;
        spec.group_id = core_.topics().group("device-persisted-msg-consumer-group");
        spec.instance_id = cfg.node_id + "-persisted-" + std::to_string(i);
        spec.topics = {core_.topics().msg_persisted()};
        spec.reset = offset_reset::earliest;
        spec.max_poll_records = 1000;
        auto consumer = core_.log().create_consumer(spec);
        if (!consumer) {
            stop();
            return consumer.error();
        }
        consumers_.push_back(std::move(consumer.value()));
        threads_.emplace_back(&persisted_consumer::run, this, static_cast<std::size_t>(i),
                              consumers_.back().get());
    }
    return {};
}

void persisted_consumer::stop() {
    if (!running_.exchange(false)) {
        return;
    }
    for (auto& c : consumers_) {
        c->wakeup();
    }
    for (auto& t : threads_) {
        t.join();
    }
    threads_.clear();
    for (auto& c : consumers_) {
        c->close();
    }
    consumers_.clear();
}

void persisted_consumer::run(std::size_t index, log_consumer* consumer) {
    auto backoff = std::chrono::milliseconds(100);
    while (running_.load(std::memory_order_acquire)) {
        auto polled = consumer->poll(core_.cfg().poll_interval);
        if (!polled) {
            spdlog::warn("msg.persisted consumer {}: poll failed: {}", index,
                         polled.error().message());
            continue;
        }
        auto& records = polled.value();
        if (records.empty()) {
            continue;
        }
        if (!write_batch(records)) {
            rewind_batch(*consumer, records);
            spdlog::warn("msg.persisted consumer {}: inbox write failed, retrying in {} ms", index,
                         backoff.count());
            std::this_thread::sleep_for(backoff);  // retry backoff while the store is down
            backoff = std::min(backoff * 2, std::chrono::milliseconds(5000));
            continue;
        }
        backoff = std::chrono::milliseconds(100);
        if (auto st = commit_batch(*consumer, records); !st) {
            spdlog::warn("msg.persisted consumer {}: commit failed: {}", index,
                         st.error().message());
        }
    }
}

bool persisted_consumer::write_batch(std::vector<log_record>& records) {
    // Group by client, keeping each client's order (one partition per client id).
    std::map<std::string, std::vector<inbox_entry>> by_client;
    for (auto& rec : records) {
        proto::persisted_msg pm;
        if (!pm.ParseFromString(rec.value)) {
            spdlog::error("msg.persisted: unreadable record at offset {}", rec.offset);
            continue;
        }
        std::int64_t expires = 0;
        if (pm.msg().has_properties() && pm.msg().properties().has_expires_at_ms()) {
            expires = pm.msg().properties().expires_at_ms();
        }
        by_client[rec.key].push_back(inbox_entry{std::move(rec.value), expires});
    }
    std::mutex mutex;
    std::condition_variable cv;
    std::size_t outstanding = by_client.size();
    bool ok = true;
    std::vector<std::string> appended;
    for (auto& [client_id, entries] : by_client) {
        core_.inbox().append(client_id, std::move(entries),
                             [&, id = client_id](result<device_inbox::append_result> r) {
                                 std::lock_guard lock(mutex);
                                 if (!r) {
                                     ok = false;
                                 } else {
                                     if (r.value().trimmed != 0) {
                                         core_.probe().message_dropped(
                                             metrics::drop_reason::queue_trim, r.value().trimmed);
                                     }
                                     appended.push_back(id);
                                 }
                                 if (--outstanding == 0) {
                                     cv.notify_all();
                                 }
                             });
    }
    {
        std::unique_lock lock(mutex);
        cv.wait(lock, [&] { return outstanding == 0; });
    }
    // Signal the actors of the clients whose inbox grew (they deliver if connected).
    for (const auto& id : appended) {
        if (auto actor = core_.sessions().find_actor(id)) {
            actor->tell_control(client_msg::inbox_signal{});
        }
    }
    return ok;
}

}  // namespace starling::broker
