#include "broker/broker_core.h"

#include "broker/client_actor.h"
#include "broker/session_coordinator.h"
#include "broker/state_follower.h"

#include "proto/starling.pb.h"
#include <spdlog/spdlog.h>

namespace starling::broker {

broker_core::broker_core(settings cfg, message_log& log, device_inbox& inbox,
                         metadata_store& metadata, actor::dispatcher& dispatcher,
                         actor::timer_service& timers, metrics::broker_probe& probe,
                         metrics::log_probe& log_probe, const starling::clock& clock,
                         admission_services admission)
    : cfg_(std::move(cfg)),
      log_(log),
      inbox_(inbox),
      metadata_(metadata),
      dispatcher_(dispatcher),
      timers_(timers),
      probe_(probe),
      log_probe_(log_probe),
      clock_(clock),
      topics_(cfg_.topic_prefix),
      admission_(admission) {
    if (cfg_.cluster) {
        // Built here, not handed in: both need the finished core, and the core needs them from
        // the first CONNECT on. Their constructors only keep the reference and read settings;
        // node::start starts them.
        follower_ = std::make_unique<state_follower>(*this);
        coordinator_ = std::make_unique<session_coordinator>(*this);
    }
}

std::shared_ptr<client_actor> broker_core::actor_for(const std::string& client_id) {
    return sessions_.get_or_create_actor(
        client_id, [this](const std::string& id) { return client_actor::create(*this, id); });
}

namespace {

// The state follower as the trie's mirror of the other nodes' subscriptions; null in embedded
// mode.
subscription_mirror* mirror_of(const std::unique_ptr<state_follower>& follower) {
    return follower.get();
}

}  // namespace

void broker_core::after_subscriptions_caught_up(const std::string& client_id,
                                                std::function<void()> done) const {
    if (auto* mirror = mirror_of(follower_)) {
        mirror->after_caught_up(client_id, std::move(done));
    } else {
        done();
    }
}

void broker_core::subscriptions_dropped(const std::string& client_id) const {
    if (auto* mirror = mirror_of(follower_)) {
        mirror->local_entries_dropped(client_id);
    }
}

void broker_core::hand_over_subscriptions(const std::string& client_id, handed_subscriptions subs,
                                          const std::string& new_owner) {
    if (auto* mirror = mirror_of(follower_)) {
        mirror->hand_over(client_id, std::move(subs), new_owner);
        return;
    }
    for (const auto& [filter, sub] : subs) {
        trie_.unsubscribe(filter, client_id, sub.share_group);
    }
}

broker_core::~broker_core() {
    // node::stop stopped them; they go before the members they refer to, as when node owned them.
    coordinator_.reset();
    follower_.reset();
    app_consumers_.stop();
}

namespace {

// Joins the acknowledgements of several log writes into one completion: success once all
// succeeded, the first failure otherwise. Shared by the writes' callbacks (log threads).
struct join_state {
    std::atomic<int> remaining;
    std::atomic<bool> failed{false};
    std::error_code first_error;
    std::mutex mutex;
    std::function<void(status)> done;

    join_state(int count, std::function<void(status)> d) : remaining(count), done(std::move(d)) {}

    void complete(const std::error_code& ec) {
        if (ec) {
            std::lock_guard lock(mutex);
            if (!failed.exchange(true)) {
                first_error = ec;
            }
        }
        if (remaining.fetch_sub(1, std::memory_order_acq_rel) == 1) {
            if (failed.load()) {
                done(first_error);
            } else {
                done(status{});
            }
        }
    }
};

}  // namespace

void broker_core::publish(message_ptr msg, std::function<void(status)> done) {
    const auto start = std::chrono::steady_clock::now();
    auto value = serialize(*msg);
    const bool retain = msg->retain;
    auto join = std::make_shared<join_state>(retain ? 2 : 1, std::move(done));
    log_.produce(topics_.msg_all(), msg->topic, std::move(value), {},
                 [this, join, start](result<produce_ack> r) {
                     if (r) {
                         log_probe_.produce_acked(std::chrono::steady_clock::now() - start);
                         join->complete({});
                     } else {
                         log_probe_.produce_failed();
                         join->complete(r.error());
                     }
                 });
    if (!retain) {
        return;
    }
    // Retained: an empty payload deletes the topic's retained message (a tombstone on the
    // compacted topic).
    write_retained(msg, [join](status st) { join->complete(st ? std::error_code{} : st.error()); });
}

void broker_core::erase_retained(const std::string& topic, std::function<void(result<bool>)> done) {
    if (!retained_.contains(topic)) {
        done(false);
        return;
    }
    auto tombstone = std::make_shared<app_message>();
    tombstone->topic = topic;
    tombstone->retain = true;
    write_retained(std::move(tombstone), [done = std::move(done)](status st) {
        if (st) {
            done(true);
        } else {
            done(result<bool>(boost::system::in_place_error, st.error()));
        }
    });
}

void broker_core::write_retained(message_ptr msg, std::function<void(status)> done) {
    // The local store changes once the log has the record, so a SUBSCRIBE after the PUBACK
    // (or after the REST DELETE's answer) sees it.
    const bool erase = msg->payload.empty();
    std::string retained_value;
    if (!erase) {
        proto::retained_msg rm;
        to_proto(*msg, *rm.mutable_msg());
        retained_value = rm.SerializeAsString();
    }
    const std::string topic = msg->topic;
    log_.produce(
        topics_.msg_retained(), topic, std::move(retained_value), origin_headers(),
        [this, done = std::move(done), msg = std::move(msg), erase](result<produce_ack> r) {
            if (!r) {
                done(r.error());
                return;
            }
            if (erase) {
                retained_.erase(msg->topic);
            } else {
                retained_.put(msg->topic, msg);
            }
            probe_.retained(static_cast<std::int64_t>(retained_.size()));
            done(status{});
        });
}

void broker_core::write_session(const session_record& record, std::function<void(status)> done) {
    log_.produce(topics_.client_session(), record.client_id, serialize_session_record(record),
                 origin_headers(), [done = std::move(done)](result<produce_ack> r) {
                     done(r ? status{} : status{r.error()});
                 });
}

void broker_core::warm_topic(const std::string& topic) {
    {
        std::lock_guard lock(warm_mutex_);
        if (!warm_topics_.insert(topic).second) {
            return;
        }
    }
    // partition_count reads the topic's metadata through the producer, filling its cache.
    if (auto r = log_.partition_count(topic); !r) {
        spdlog::debug("topic {}: metadata not loaded ahead of the first write: {}", topic,
                      r.error().message());
        std::lock_guard lock(warm_mutex_);
        warm_topics_.erase(topic);  // try again next time
    }
}

void broker_core::signal_inbox(const std::string& owner_node, const std::string& client_id,
                               bool passed_on, std::function<void(status)> done) {
    const std::string downlink = topics_.downlink_persisted(owner_node);
    warm_topic(downlink);
    std::vector<log_header> headers{
        log_header{std::string(inbox_signal_header),
                   std::string(passed_on ? inbox_signal_forwarded : inbox_signal_fresh)}};
    log_.produce(downlink, client_id, std::string(), std::move(headers),
                 [done = std::move(done)](result<produce_ack> r) {
                     done(r ? status{} : status{r.error()});
                 });
}

void broker_core::delete_session(const std::string& client_id, std::function<void(status)> done) {
    log_.produce(topics_.client_session(), client_id, std::string(), origin_headers(),
                 [done = std::move(done)](result<produce_ack> r) {
                     done(r ? status{} : status{r.error()});
                 });
}

void broker_core::write_subscription_records(const std::string& client_id,
                                             std::vector<subscription_records::record> records,
                                             std::function<void(status)> done) {
    if (records.empty()) {
        done(status{});
        return;
    }
    // One partition for all of a client's records: their order is the set's history, and the
    // follower's catch-up barrier waits on that partition (state_follower).
    // The count is read once (a metadata round trip on first use, as warm_topic); a failed read
    // is not kept: this write goes to partition 0 and the next one reads again.
    std::int32_t partitions = subscription_partitions_.load(std::memory_order_acquire);
    if (partitions <= 0) {
        auto count = log_.partition_count(topics_.client_subscriptions());
        if (count && count.value() > 0) {
            partitions = count.value();
            subscription_partitions_.store(partitions, std::memory_order_release);
        } else {
            partitions = 1;
        }
    }
    const std::int32_t partition = partition_for_key(client_id, partitions);
    auto join = std::make_shared<join_state>(static_cast<int>(records.size()), std::move(done));
    for (auto& [key, value] : records) {
        log_.produce(
            topics_.client_subscriptions(), std::move(key), std::move(value), origin_headers(),
            [join](result<produce_ack> r) { join->complete(r ? std::error_code{} : r.error()); },
            partition);
    }
}

void broker_core::clear_subscriptions(const std::string& client_id,
                                      std::vector<std::string> entry_record_keys) {
    std::vector<subscription_records::record> records;
    records.reserve(entry_record_keys.size() + 1);
    records.emplace_back(client_id, std::string());
    for (auto& key : entry_record_keys) {
        records.emplace_back(std::move(key), std::string());
    }
    write_subscription_records(client_id, std::move(records), [client_id](status st) {
        if (!st) {
            spdlog::warn("client.subscriptions: clearing the set of '{}' failed: {}", client_id,
                         st.error().message());
        }
    });
}

std::vector<log_header> broker_core::origin_headers() const {
    return {log_header{std::string(origin_node_header), cfg_.node_id}};
}

stats_reading broker_core::stats_now() {
    return stats_reading{.incoming_msgs = probe_.publishes_received(),
                         .outgoing_msgs = probe_.publishes_sent(),
                         .dropped_msgs = probe_.messages_dropped(),
                         .sessions = probe_.connected(),
                         .subscriptions = static_cast<std::int64_t>(trie_.subscription_count()),
                         .retained_msgs = static_cast<std::int64_t>(retained_.size())};
}

void broker_core::refresh_gauges() {
    probe_.sessions(static_cast<std::int64_t>(sessions_.session_count()));
    probe_.subscriptions(static_cast<std::int64_t>(trie_.subscription_count()));
    probe_.retained(static_cast<std::int64_t>(retained_.size()));
}

}  // namespace starling::broker
