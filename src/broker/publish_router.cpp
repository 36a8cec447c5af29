#include "broker/publish_router.h"

#include "base/retry_pacer.h"
#include "broker/batch_offsets.h"
#include "broker/broker_core.h"
#include "broker/client_actor.h"
#include "broker/group_inbox.h"
#include "routing/subscription_trie.h"

#include "proto/starling.pb.h"
#include <spdlog/spdlog.h>

#include <algorithm>
#include <condition_variable>
#include <map>

namespace starling::broker {
namespace {

// The actor this router thread last stopped waiting for (wait_for_mailbox).
thread_local const client_actor* gave_up_on = nullptr;

// A QoS 1/2 copy whose actor's mailbox is full: waits (bounded by `wait`) for room while the
// client's connection stays writable; true once the actor took it.
bool wait_for_mailbox(client_actor& actor, client_message& m, std::stop_token stop,
                      std::chrono::milliseconds wait) {
    // A client that keeps up — its connection takes what is written — is not shed because its
    // actor fell behind the router for a moment: this consumer thread waits for room instead,
    // which slows the routing of this partition (the log holds what is behind, acknowledged)
    // rather than dropping an acknowledged QoS 1/2 copy. Only a slow client sheds: its
    // connection turns non-writable (write-buffer watermarks) and the wait ends with the drop.
    // The actor does not signal room, so the wait polls the mailbox, starting short (a turn of
    // the actor frees room within microseconds) and backing off to a millisecond. An actor
    // that took nothing for settings::delivery_wait is not waited for again by this thread
    // until it takes a copy, so one stuck actor cannot hold the partition copy after copy.
    if (gave_up_on == &actor || wait.count() <= 0) {
        return false;
    }
    const auto deadline = std::chrono::steady_clock::now() + wait;
    auto pause = std::chrono::microseconds(20);
    while (!stop.stop_requested() && actor.connected() && actor.writable()) {
        if (std::chrono::steady_clock::now() >= deadline) {
            gave_up_on = &actor;
            return false;
        }
        std::this_thread::sleep_for(pause);
        pause = std::min(pause * 2, std::chrono::microseconds(1000));
        if (actor.tell(std::move(m))) {
            gave_up_on = nullptr;
            return true;
        }
    }
    return false;
}

}  // namespace

// Completion tracking of one polled batch's msg.persisted writes.
struct publish_router::batch {
    std::mutex mutex;
    std::condition_variable cv;
    std::size_t outstanding = 0;
    std::size_t failed = 0;

    void add() {
        std::lock_guard lock(mutex);
        ++outstanding;
    }
    void complete(bool ok) {
        std::lock_guard lock(mutex);
        --outstanding;
        if (!ok) {
            ++failed;
        }
        cv.notify_all();
    }
    void wait() {
        std::unique_lock lock(mutex);
        cv.wait(lock, [this] { return outstanding == 0; });
    }
};

// One matched subscription, copied out of the trie's read-side section. The vector of these is
// reused across messages (thread-local) so steady-state routing does not allocate for it.
struct publish_router::target {
    std::string client_id;
    std::string group_key;  // share group '\0' filter, empty for ordinary subscriptions
    std::uint8_t qos = 0;
    bool retain_as_published = false;
    std::vector<std::uint32_t> subscription_ids;
};

publish_router::publish_router(broker_core& core, metrics::routing_probe& probe)
    : core_(core), probe_(probe) {}

publish_router::~publish_router() { stop(); }

status publish_router::start() {
    const auto& cfg = core_.cfg();
    stop_ = std::stop_source();
    running_.store(true);
    for (std::int32_t i = 0; i < cfg.msg_all_consumers; ++i) {
        consumer_spec spec;
        spec.group_id = core_.topics().group("msg-all-consumer-group");
        spec.instance_id = cfg.node_id + "-msg-all-" + std::to_string(i);
        spec.topics = {core_.topics().msg_all()};
        spec.reset = offset_reset::earliest;
        spec.max_poll_records = 500;
        auto consumer = core_.log().create_consumer(spec);
        if (!consumer) {
            stop();
            return consumer.error();
        }
        consumers_.push_back(std::move(consumer.value()));
        threads_.emplace_back(&publish_router::run, this, static_cast<std::size_t>(i),
                              consumers_.back().get());
    }
    return {};
}

void publish_router::stop() {
    if (!running_.exchange(false)) {
        return;
    }
    stop_.request_stop();
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

void publish_router::run(std::size_t index, log_consumer* consumer) {
    routing::rcu_reader_registration rcu_reader;
    const auto poll_interval = core_.cfg().poll_interval;
    spdlog::debug("msg.all consumer {} started", index);
    const auto name = fmt::format("msg.all consumer {}", index);
    base::retry_pacer poll_pacer(name);
    // A separate run (see persisted_consumer::run), with a short cap: copies for sessions
    // that are online wait behind a re-read batch.
    base::retry_pacer store_pacer(name, {.first_delay = std::chrono::milliseconds(100),
                                         .max_delay = std::chrono::milliseconds(2000)});
    const auto stop = stop_.get_token();
    while (running_.load(std::memory_order_acquire)) {
        auto polled = consumer->poll(poll_interval);
        if (!polled) {
            if (!poll_pacer.failed("poll", polled.error().message(), stop)) {
                break;
            }
            continue;
        }
        poll_pacer.succeeded();
        auto& records = polled.value();
        if (records.empty()) {
            continue;
        }
        batch b;
        for (auto& rec : records) {
            auto parsed = parse_message(rec.value);
            if (!parsed) {
                spdlog::error("msg.all: unreadable record {}/{}@{}", rec.topic, rec.partition,
                              rec.offset);
                continue;
            }
            auto msg = std::make_shared<const app_message>(std::move(parsed.value()));
            route(msg, b);
        }
        b.wait();
        if (b.failed != 0) {
            // The copies that failed were for persistent sessions; their log refused the write
            // (a storage failure). Re-read the batch rather than lose them.
            rewind_batch(*consumer, records);
            if (!store_pacer.failed("persisted copy",
                                    fmt::format("{} of the batch refused; re-reading it", b.failed),
                                    stop)) {
                break;
            }
            continue;
        }
        store_pacer.succeeded();
        if (auto st = commit_batch(*consumer, records); !st) {
            spdlog::warn("msg.all consumer {}: commit failed: {}", index, st.error().message());
        }
        probe_.messages_routed(records.size());
        records_routed_.fetch_add(records.size(), std::memory_order_acq_rel);
    }
    spdlog::debug("msg.all consumer {} stopped", index);
}

void publish_router::route(const message_ptr& msg, batch& b) {
    thread_local std::vector<target> targets;
    thread_local std::size_t used = 0;
    used = 0;
    produce_integration_copies(msg, b);
    const auto started = std::chrono::steady_clock::now();
    core_.trie().match(msg->topic, [&](std::string_view filter, const routing::subscription& s) {
        if (s.options.no_local && s.client_id == msg->publisher_id) {
            return;
        }
        if (used == targets.size()) {
            targets.emplace_back();
        }
        target& t = targets[used++];
        t.client_id.assign(s.client_id);
        t.group_key.clear();
        if (!s.share_group.empty()) {
            t.group_key.append(s.share_group).push_back('\0');
            t.group_key.append(filter);
        }
        t.qos = s.options.qos;
        t.retain_as_published = s.options.retain_as_published;
        t.subscription_ids.clear();
        if (s.subscription_identifier) {
            t.subscription_ids.push_back(*s.subscription_identifier);
        }
    });
    probe_.trie_lookup(std::chrono::steady_clock::now() - started);
    if (used == 0) {
        return;
    }

    // Shared groups: one member per group. Members are sorted so round-robin is stable.
    auto end = targets.begin() + static_cast<std::ptrdiff_t>(used);
    std::sort(targets.begin(), end, [](const target& x, const target& y) {
        return x.group_key != y.group_key ? x.group_key < y.group_key : x.client_id < y.client_id;
    });
    std::vector<target*> chosen;
    chosen.reserve(used);
    auto it = targets.begin();
    while (it != end && it->group_key.empty()) {
        chosen.push_back(&*it);
        ++it;
    }
    thread_local std::vector<target*> members;
    thread_local std::vector<std::string_view> app_shared_filters;
    app_shared_filters.clear();
    while (it != end) {
        auto group_end =
            std::find_if(it, end, [&](const target& t) { return t.group_key != it->group_key; });
        // Persistent APPLICATION members of the group read msg.app.shared.<filter> as one
        // consumer group: a QoS 1/2 message goes there once, whoever is connected. The other
        // members (DEVICE, non-persistent) share the message in memory as before, so a group
        // mixing both kinds hands it to one member of each kind (as TBMQ does).
        members.clear();
        bool app_members = false;
        for (auto m = it; m != group_end; ++m) {
            if (msg->qos != mqtt::qos::at_most_once) {
                auto session = core_.sessions().find_session(m->client_id);
                if (session && session->persistent && session->type == client_type::application) {
                    app_members = true;
                    continue;
                }
            }
            members.push_back(&*m);
        }
        if (app_members) {
            const std::string_view key = it->group_key;
            const std::string_view filter = key.substr(key.find('\0') + 1);
            if (std::find(app_shared_filters.begin(), app_shared_filters.end(), filter) ==
                app_shared_filters.end()) {
                app_shared_filters.push_back(filter);
            }
        }
        if (!members.empty()) {
            bool persistent_member = false;
            if (target* pick = pick_member(*msg, it->group_key, members, persistent_member)) {
                chosen.push_back(pick);
            } else if (persistent_member) {
                produce_group_inbox(msg, it->group_key, b);
            } else {
                core_.probe().message_dropped(metrics::drop_reason::no_usable_shared_member, {},
                                              msg->topic);
            }
        }
        it = group_end;
    }
    // One copy per topic: groups with the same filter and different share names read the same
    // topic, each in its own consumer group, so a second copy would reach each group twice.
    for (const auto filter : app_shared_filters) {
        produce_app_shared(msg, filter, b);
    }

    // Overlapping subscriptions of one client: one copy, highest QoS, every identifier.
    std::sort(chosen.begin(), chosen.end(),
              [](const target* x, const target* y) { return x->client_id < y->client_id; });
    for (std::size_t i = 0; i < chosen.size();) {
        target& first = *chosen[i];
        std::size_t j = i + 1;
        while (j < chosen.size() && chosen[j]->client_id == first.client_id) {
            const target& other = *chosen[j];
            first.qos = std::max(first.qos, other.qos);
            first.retain_as_published = first.retain_as_published || other.retain_as_published;
            first.subscription_ids.insert(first.subscription_ids.end(),
                                          other.subscription_ids.begin(),
                                          other.subscription_ids.end());
            ++j;
        }
        deliver(msg, first, b);
        i = j;
    }
}

bool publish_router::connected_elsewhere(const std::string& client_id) const {
    auto session = core_.sessions().find_session(client_id);
    return session && session->connected && !session->node_id.empty() &&
           session->node_id != core_.cfg().node_id;
}

bool publish_router::forward_to_owner(const message_ptr& msg, const target& t, mqtt::qos qos,
                                      bool retain, batch& b) {
    auto session = core_.sessions().find_session(t.client_id);
    if (!session || !connected_elsewhere(t.client_id)) {
        return false;
    }
    // The owner's downlink consumer hands this to the actor as this router would have.
    proto::persisted_msg pm;
    pm.set_client_id(t.client_id);
    to_proto(*msg, *pm.mutable_msg());
    pm.set_qos(static_cast<std::uint32_t>(qos));
    pm.set_retain(retain);
    for (auto id : t.subscription_ids) {
        pm.add_subscription_ids(id);
    }
    // The batch waits for the write (so the commit follows it), but a failed write of a
    // non-persistent copy is dropped and counted like a full mailbox, not re-routed.
    const std::string downlink = core_.topics().downlink_basic(session->node_id);
    core_.warm_topic(downlink);
    b.add();
    core_.log().produce(downlink, t.client_id, pm.SerializeAsString(), {},
                        [this, &b, msg, client = t.client_id](result<produce_ack> r) {
                            if (!r) {
                                core_.probe().message_dropped(metrics::drop_reason::offline, client,
                                                              msg->topic);
                            } else {
                                probe_.copy_forwarded();
                            }
                            b.complete(true);
                        });
    return true;
}

publish_router::target* publish_router::pick_member(const app_message& msg,
                                                    const std::string& group_key,
                                                    const std::vector<target*>& members,
                                                    bool& persistent_member) {
    const std::size_t count = members.size();
    const std::size_t start = pick_shared_member(group_key, count);
    for (std::size_t k = 0; k < count; ++k) {
        target& candidate = *members[(start + k) % count];
        auto actor = core_.sessions().find_actor(candidate.client_id);
        if (actor && actor->connected() && actor->writable()) {
            return &candidate;
        }
        if (core_.cfg().cluster && (!actor || !actor->connected()) &&
            connected_elsewhere(candidate.client_id)) {
            return &candidate;  // a member connected on another node (forwarded)
        }
        if (!persistent_member && msg.qos != mqtt::qos::at_most_once && candidate.qos != 0) {
            auto session = core_.sessions().find_session(candidate.client_id);
            persistent_member = session && session->persistent;
        }
    }
    return nullptr;
}

void publish_router::produce_group_inbox(const message_ptr& msg, std::string_view group_key,
                                         batch& b) {
    const auto split = group_key.find('\0');
    proto::persisted_msg pm;
    to_proto(*msg, *pm.mutable_msg());
    // The message's own QoS and retain flag: the member that takes the copy applies its
    // subscription (group_inbox.cpp). No client id: the record key is the group's inbox.
    pm.set_qos(static_cast<std::uint32_t>(msg->qos));
    pm.set_retain(msg->retain);
    b.add();
    persisted_copies_.fetch_add(1, std::memory_order_acq_rel);
    core_.log().produce(core_.topics().msg_persisted(),
                        group_inbox_key(group_key.substr(0, split), group_key.substr(split + 1)),
                        pm.SerializeAsString(), {},
                        [&b](result<produce_ack> r) { b.complete(static_cast<bool>(r)); });
}

void publish_router::produce_app_shared(const message_ptr& msg, std::string_view filter, batch& b) {
    // Blocking once per filter and process (entity lookup, topic admin); this is a consumer
    // thread, which already waits for its batch.
    auto topic = core_.app_shared().ensure(filter);
    b.add();
    if (!topic) {
        b.complete(false);  // the batch is read again: the copy is not lost
        return;
    }
    proto::persisted_msg pm;
    to_proto(*msg, *pm.mutable_msg());
    // The message's own QoS and retain flag: each member applies its subscription's maximum
    // QoS and Retain As Published when it reads the copy (application_delivery.cpp).
    pm.set_qos(static_cast<std::uint32_t>(msg->qos));
    pm.set_retain(msg->retain);
    // Key = the publish topic: each topic's messages stay in order on one partition.
    core_.log().produce(topic.value(), msg->topic, pm.SerializeAsString(), {},
                        [&b](result<produce_ack> r) { b.complete(static_cast<bool>(r)); });
}

void publish_router::produce_integration_copies(const message_ptr& msg, batch& b) {
    if (core_.integrations().empty()) {
        return;
    }
    thread_local std::vector<std::string> topics;
    topics.clear();
    core_.integrations().match(msg->topic, topics);
    if (topics.empty()) {
        return;
    }
    // The msg.all record's own format: the executor reads it back with parse_message. Key = the
    // publish topic (the integration's topic has one partition: order is the router's).
    const std::string value = serialize(*msg);
    for (const auto& topic : topics) {
        b.add();
        core_.log().produce(topic, msg->topic, value, {}, [this, &b, topic](result<produce_ack> r) {
            // A refused copy re-reads the batch, as a persistent session's does: an
            // integration gets every message at least once — unless the integration was
            // deleted meanwhile (its topic may be gone), when the copy has nowhere to go.
            const bool gone = !r && !core_.integrations().routes_to(topic);
            if (gone) {
                spdlog::debug("integration copy to {} dropped: the integration is gone ({})", topic,
                              r.error().message());
            }
            b.complete(static_cast<bool>(r) || gone);
        });
    }
}

std::size_t publish_router::pick_shared_member(const std::string& group_key, std::size_t members) {
    std::lock_guard lock(shared_mutex_);
    return shared_counters_[group_key]++ % members;
}

void publish_router::deliver(const message_ptr& msg, const target& t, batch& b) {
    const auto qos = static_cast<mqtt::qos>(std::min(static_cast<std::uint8_t>(msg->qos), t.qos));
    const bool retain = t.retain_as_published && msg->retain;
    if (qos != mqtt::qos::at_most_once) {
        auto session = core_.sessions().find_session(t.client_id);
        if (session && session->persistent) {
            proto::persisted_msg pm;
            pm.set_client_id(t.client_id);
            to_proto(*msg, *pm.mutable_msg());
            pm.set_qos(static_cast<std::uint32_t>(qos));
            pm.set_retain(retain);
            for (auto id : t.subscription_ids) {
                pm.add_subscription_ids(id);
            }
            // APPLICATION: the client's own topic (application_delivery.h); DEVICE: its inbox.
            const bool app = session->type == client_type::application;
            b.add();
            if (!app) {
                persisted_copies_.fetch_add(1, std::memory_order_acq_rel);
            }
            core_.log().produce(
                app ? core_.topics().msg_app(t.client_id) : core_.topics().msg_persisted(),
                t.client_id, pm.SerializeAsString(), {},
                [&b](result<produce_ack> r) { b.complete(static_cast<bool>(r)); }, app ? 0 : -1);
            return;
        }
    }
    auto actor = core_.sessions().find_actor(t.client_id);
    if (!actor || !actor->connected()) {
        if (core_.cfg().cluster && forward_to_owner(msg, t, qos, retain, b)) {
            return;
        }
        core_.probe().message_dropped(metrics::drop_reason::offline, t.client_id, msg->topic);
        return;
    }
    if (!actor->writable()) {
        core_.probe().message_dropped(metrics::drop_reason::non_writable, t.client_id, msg->topic);
        return;
    }
    client_message m = client_msg::deliver{
        delivery{.msg = msg, .qos = qos, .retain = retain, .subscription_ids = t.subscription_ids}};
    if (actor->tell(std::move(m))) {
        if (gave_up_on == actor.get()) {
            gave_up_on = nullptr;  // it takes copies again: worth waiting for next time
        }
        return;
    }
    if (qos != mqtt::qos::at_most_once &&
        wait_for_mailbox(*actor, m, stop_.get_token(), core_.cfg().delivery_wait)) {
        return;
    }
    core_.probe().message_dropped(
        actor->writable() ? metrics::drop_reason::mailbox_full : metrics::drop_reason::non_writable,
        t.client_id, msg->topic);
}

}  // namespace starling::broker
