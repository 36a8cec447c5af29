#include "broker/state_follower.h"

#include "base/retry_pacer.h"
#include "broker/blocked_clients_log.h"
#include "broker/broker_core.h"
#include "broker/message.h"
#include "broker/topics.h"
#include "routing/subscription_trie.h"

#include "proto/starling.pb.h"
#include <spdlog/spdlog.h>

#include <algorithm>

namespace starling::broker {

namespace {

constexpr std::size_t blocked_pending_limit = 100000;

std::string origin_of(const log_record& rec) {
    for (const auto& h : rec.headers) {
        if (h.key == origin_node_header) {
            return h.value;
        }
    }
    return {};
}

}  // namespace

state_follower::state_follower(broker_core& core) : core_(core) {}

state_follower::~state_follower() { stop(); }

void state_follower::apply_session(const std::string& client_id, std::string_view value,
                                   std::string_view origin) {
    auto& sessions = core_.sessions();
    const auto& self = core_.cfg().node_id;
    if (value.empty()) {
        auto current = sessions.find_session(client_id);
        if (current && current->node_id == self) {
            // Another node ended a session that lives here now (the client moved): the local
            // actor stays the writer of its session.
            spdlog::warn(
                "client.session: tombstone for '{}' from node '{}' ignored: the session "
                "lives on this node",
                client_id, origin);
            return;
        }
        sessions.erase_session(client_id);
        return;
    }
    auto record = parse_session_record(client_id, value, origin);
    if (!record) {
        spdlog::error("client.session: unreadable record for '{}' from node '{}' ignored",
                      client_id, origin);
        return;
    }
    sessions.put_session(std::move(*record));
}

void state_follower::apply_subscriptions(const std::string& client_id, std::string_view value,
                                         std::string_view origin) {
    mirrored_set fresh;
    fresh.owner_node = origin.empty() ? std::string("unknown") : std::string(origin);
    std::vector<std::pair<std::string, routing::subscription>> subs;
    if (!value.empty()) {
        proto::client_subscriptions set;
        if (!set.ParseFromArray(value.data(), static_cast<int>(value.size()))) {
            spdlog::error(
                "client.subscriptions: unreadable record for '{}' from node '{}' "
                "ignored",
                client_id, origin);
            return;
        }
        for (const auto& ts : set.subscriptions()) {
            routing::subscription sub;
            sub.client_id = client_id;
            sub.share_group = ts.share_name();
            sub.owner_node = fresh.owner_node;
            sub.options.qos =
                static_cast<std::uint8_t>(std::min<std::uint32_t>(ts.options().qos(), 2));
            sub.options.no_local = ts.options().no_local();
            sub.options.retain_as_published = ts.options().retain_as_published();
            sub.options.retain_handling = static_cast<std::uint8_t>(
                std::min<std::uint32_t>(ts.options().retain_handling(), 2));
            if (ts.has_subscription_id()) {
                sub.subscription_identifier = ts.subscription_id();
            }
            fresh.keys.emplace_back(ts.topic_filter(), ts.share_name());
            subs.emplace_back(ts.topic_filter(), std::move(sub));
        }
    }
    // The raw set too: a session taken over from that node adopts it (client_actor).
    if (value.empty()) {
        core_.sessions().erase_subscriptions(client_id);
    } else {
        core_.sessions().put_subscriptions(client_id, std::string(value));
    }
    auto& trie = core_.trie();
    std::lock_guard lock(mirror_mutex_);
    auto it = mirrored_.find(client_id);
    if (it != mirrored_.end()) {
        for (const auto& key : it->second.keys) {
            if (std::find(fresh.keys.begin(), fresh.keys.end(), key) == fresh.keys.end()) {
                trie.mirror_unsubscribe(key.first, client_id, key.second);
            }
        }
    }
    std::size_t kept_local = 0;
    for (auto& [filter, sub] : subs) {
        if (!trie.mirror_subscribe(filter, std::move(sub))) {
            ++kept_local;
        }
    }
    if (kept_local != 0) {
        spdlog::info(
            "client.subscriptions: '{}' from node '{}': {} entries of the local actor "
            "kept",
            client_id, origin, kept_local);
    }
    if (fresh.keys.empty()) {
        if (it != mirrored_.end()) {
            mirrored_.erase(it);
        }
    } else if (it != mirrored_.end()) {
        it->second = std::move(fresh);
    } else {
        mirrored_.emplace(client_id, std::move(fresh));
    }
}

void state_follower::after_subscriptions_caught_up(const std::string& client_id,
                                                   std::function<void()> done,
                                                   std::chrono::milliseconds timeout) {
    if (!running_.load(std::memory_order_acquire) || subscription_partitions_ <= 0) {
        done();
        return;
    }
    barrier b;
    b.tp = topic_partition{core_.topics().client_subscriptions(),
                           partition_for_key(client_id, subscription_partitions_)};
    b.deadline = std::chrono::steady_clock::now() + timeout;
    b.done = std::move(done);
    {
        std::lock_guard lock(barriers_mutex_);
        barriers_.push_back(std::move(b));
    }
    consumer_->wakeup();
}

void state_follower::serve_barriers() {
    std::vector<barrier> ready;
    {
        std::lock_guard lock(barriers_mutex_);
        if (barriers_.empty()) {
            return;
        }
        const auto now = std::chrono::steady_clock::now();
        for (auto it = barriers_.begin(); it != barriers_.end();) {
            if (it->target < 0) {
                // Read on this thread: a blocking round trip to the log is fine here.
                auto end = consumer_->end_offset(it->tp);
                it->target = end ? end.value() : 0;
            }
            auto pos = positions_.find(it->tp);
            const bool caught_up = pos != positions_.end() && pos->second >= it->target;
            if (caught_up || now >= it->deadline) {
                if (!caught_up) {
                    spdlog::warn("state follower: {}/{} not caught up to {} in time", it->tp.topic,
                                 it->tp.partition, it->target);
                }
                ready.push_back(std::move(*it));
                it = barriers_.erase(it);
            } else {
                ++it;
            }
        }
    }
    for (auto& b : ready) {
        b.done();
    }
}

void state_follower::hand_over(const std::string& client_id,
                               std::vector<std::pair<std::string, routing::subscription>> subs,
                               const std::string& new_owner) {
    auto& trie = core_.trie();
    std::string newer_owner;
    {
        std::lock_guard lock(mirror_mutex_);
        auto it = mirrored_.find(client_id);
        if (it == mirrored_.end()) {
            mirrored_set set;
            set.owner_node = new_owner;
            for (auto& [filter, sub] : subs) {
                set.keys.emplace_back(filter, sub.share_group);
                trie.subscribe(filter, std::move(sub));  // replaces the local entry in place
            }
            mirrored_.emplace(client_id, std::move(set));
            return;
        }
        // Another node's record arrived while the local entries kept it out.
        for (auto& [filter, sub] : subs) {
            const std::pair<std::string, std::string> key{filter, sub.share_group};
            if (std::find(it->second.keys.begin(), it->second.keys.end(), key) ==
                it->second.keys.end()) {
                trie.unsubscribe(filter, client_id, sub.share_group);
            } else {
                // Placeholder until the record is applied again below: never a gap.
                trie.subscribe(filter, std::move(sub));
            }
        }
        newer_owner = it->second.owner_node;
    }
    spdlog::debug("client {}: subscriptions handed to node {}; node {}'s record applied again",
                  client_id, new_owner, newer_owner);
    reapply_subscriptions(client_id);
}

void state_follower::reapply_subscriptions(const std::string& client_id) {
    auto set = core_.sessions().subscriptions_of(client_id);
    if (!set) {
        return;
    }
    std::string owner;
    {
        std::lock_guard lock(mirror_mutex_);
        auto it = mirrored_.find(client_id);
        if (it == mirrored_.end()) {
            return;
        }
        owner = it->second.owner_node;
        // Forget the keys: apply_subscriptions then subscribes every entry again instead of
        // treating them as already present.
        mirrored_.erase(it);
    }
    apply_subscriptions(client_id, *set, owner);
}

void state_follower::apply_retained(const std::string& topic, std::string_view value) {
    if (value.empty()) {
        core_.retained().erase(topic);
        return;
    }
    proto::retained_msg rm;
    if (!rm.ParseFromArray(value.data(), static_cast<int>(value.size()))) {
        spdlog::error("msg.retained: unreadable record for topic '{}' ignored", topic);
        return;
    }
    auto msg = std::make_shared<const app_message>(from_proto(rm.msg()));
    if (msg->expired(core_.now_ms())) {
        core_.retained().erase(topic);
        return;
    }
    core_.retained().put(topic, std::move(msg));
}

void state_follower::attach_blocked(blocked_clients_log* blocked) {
    std::lock_guard lock(blocked_mutex_);
    blocked_ = blocked;
    if (blocked_ == nullptr) {
        return;
    }
    // Latest value per key: applying them in any order gives the topic's state.
    for (const auto& [key, value] : blocked_pending_) {
        (void)blocked_->apply_record(key, value);
    }
    blocked_pending_.clear();
}

void state_follower::apply_blocked(const std::string& key, const std::string& value) {
    std::lock_guard lock(blocked_mutex_);
    if (blocked_ != nullptr) {
        (void)blocked_->apply_record(key, value);
        return;
    }
    if (blocked_pending_.size() >= blocked_pending_limit && !blocked_pending_.contains(key)) {
        spdlog::error("client.blocked: {} rules waiting for the block list; rule '{}' dropped",
                      blocked_pending_.size(), key);
        return;
    }
    blocked_pending_.insert_or_assign(key, value);
}

std::size_t state_follower::mirrored_clients() const {
    std::lock_guard lock(mirror_mutex_);
    return mirrored_.size();
}

status state_follower::start(std::vector<std::pair<topic_partition, std::int64_t>> start) {
    const auto& cfg = core_.cfg();
    const auto& t = core_.topics();
    auto blocked_partitions = core_.log().partition_count(t.client_blocked());
    if (!blocked_partitions) {
        spdlog::error("state follower: {}: {}", t.client_blocked(),
                      blocked_partitions.error().message());
        return blocked_partitions.error();
    }
    for (std::int32_t p = 0; p < blocked_partitions.value(); ++p) {
        start.emplace_back(topic_partition{t.client_blocked(), p}, 0);
    }
    consumer_spec spec;
    spec.group_id = core_.topics().group(cfg.node_id + "-state-follower");
    spec.reset = offset_reset::earliest;
    spec.max_poll_records = 1000;
    for (const auto& [tp, offset] : start) {
        spec.assignment.push_back(tp);
        positions_[tp] = offset;
        if (tp.topic == t.client_subscriptions()) {
            ++subscription_partitions_;
        }
    }
    auto consumer = core_.log().create_consumer(spec);
    if (!consumer) {
        spdlog::error("state follower: cannot create its consumer: {}", consumer.error().message());
        return consumer.error();
    }
    for (const auto& [tp, offset] : start) {
        if (auto st = consumer.value()->seek(tp, offset); !st) {
            spdlog::error("state follower: cannot seek {}/{} to {}: {}", tp.topic, tp.partition,
                          offset, st.error().message());
            consumer.value()->close();
            return st;
        }
    }
    consumer_ = std::move(consumer.value());
    stop_ = std::stop_source();
    running_.store(true, std::memory_order_release);
    thread_ = std::thread(&state_follower::run, this);
    return {};
}

void state_follower::stop() {
    if (!running_.exchange(false)) {
        return;
    }
    stop_.request_stop();
    consumer_->wakeup();
    thread_.join();
    consumer_->close();
    consumer_.reset();
}

void state_follower::run() {
    routing::rcu_reader_registration rcu_reader;  // trie writes want a registered thread
    spdlog::debug("state follower of node {} started", core_.cfg().node_id);
    base::retry_pacer pacer("state follower");
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
        for (const auto& rec : polled.value()) {
            apply(rec);
            positions_[topic_partition{rec.topic, rec.partition}] = rec.offset + 1;
        }
        serve_barriers();
    }
    // Stopping: whoever waits is not left waiting.
    std::vector<barrier> left;
    {
        std::lock_guard lock(barriers_mutex_);
        left.swap(barriers_);
    }
    for (auto& b : left) {
        b.done();
    }
    spdlog::debug("state follower of node {} stopped", core_.cfg().node_id);
}

void state_follower::apply(const log_record& rec) {
    const auto& t = core_.topics();
    const auto origin = origin_of(rec);
    const bool own = origin == core_.cfg().node_id;
    if (rec.topic == t.msg_retained()) {
        apply_retained(rec.key, rec.value);
    } else if (rec.topic == t.client_blocked()) {
        apply_blocked(rec.key, rec.value);
    } else if (rec.topic == t.client_subscriptions()) {
        apply_subscription_record(rec, origin, own);
        return;
    } else if (own) {
        return;  // session and subscription records this node's actors wrote
    } else if (rec.topic == t.client_session()) {
        apply_session(rec.key, rec.value, origin);
    } else {
        return;
    }
    applied_.fetch_add(1, std::memory_order_acq_rel);
}

void state_follower::apply_subscription_record(const log_record& rec, std::string_view origin,
                                               bool own) {
    using subscription_records::fold;
    auto folded = subscription_fold_.apply(rec.key, rec.value, origin);
    std::vector<subscription_records::record> garbage;
    switch (folded.what) {
        case fold::outcome::unreadable:
            spdlog::error(
                "client.subscriptions: unreadable record (key of {} bytes) from node '{}' "
                "ignored",
                rec.key.size(), origin);
            return;
        case fold::outcome::dead:
            // A late write to a set that ended or was replaced: the node that wrote the
            // current base (or, with none, the late writer itself) removes it.
            if (subscription_fold_.writer_of(folded.client_id) == core_.cfg().node_id ||
                (own && subscription_fold_.generation_of(folded.client_id) == 0)) {
                garbage.emplace_back(rec.key, std::string());
            }
            break;
        case fold::outcome::unchanged:
        case fold::outcome::incomplete:  // the mirror keeps the previous set until it is whole
            break;
        case fold::outcome::changed:
            if (!own) {
                apply_subscriptions(
                    folded.client_id,
                    subscription_fold_.serialized_set(folded.client_id).value_or(""), origin);
                applied_.fetch_add(1, std::memory_order_acq_rel);
            }
            break;
    }
    if (own) {
        // This node's base replaced or ended a generation: its entries are garbage.
        for (auto& key : folded.superseded) {
            garbage.emplace_back(std::move(key), std::string());
        }
    }
    if (!garbage.empty()) {
        core_.write_subscription_records(folded.client_id, std::move(garbage), [](status) {});
    }
}

}  // namespace starling::broker
