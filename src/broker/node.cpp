#include "broker/node.h"

#include "base/countdown.h"
#include "broker/client_actor.h"
#include "broker/state_loader.h"
#include "broker/subscription_records.h"

#include "proto/starling.pb.h"
#include <spdlog/spdlog.h>

#include <iterator>
#include <stdexcept>

namespace starling::broker {

node::node(settings cfg, message_log& log, device_inbox& inbox, metadata_store& metadata,
           metrics::registry& metrics, std::size_t dispatcher_threads, const starling::clock& clock,
           admission_services admission)
    : metrics_(metrics),
      dispatcher_("client-actors", dispatcher_threads == 0 ? 1 : dispatcher_threads),
      timers_("broker-timers", clock) {
    core_ =
        std::make_unique<broker_core>(std::move(cfg), log, inbox, metadata, dispatcher_, timers_,
                                      metrics.broker(), metrics.log(), clock, admission);
    router_ = std::make_unique<publish_router>(*core_, metrics.routing());
    persisted_ = std::make_unique<persisted_consumer>(*core_);
    app_removed_ = std::make_unique<app_removed_consumer>(*core_);
    if (core_->cfg().cluster) {
        const auto& self = core_->cfg().node_id;
        downlink_ = std::make_unique<downlink_consumer>(*core_);
        downlink_persisted_ = std::make_unique<persisted_consumer>(
            *core_, persisted_consumer::options{
                        .topic = core_->topics().downlink_persisted(self),
                        .group_id = core_->topics().group(self + "-downlink-persisted"),
                        .consumers = 1,
                        .instance_name = "downlink-persisted",
                        .forward = false});
    }
}

void node::follow_blocked(blocked_clients_log* blocked) {
    if (auto* follower = core_->follower(); follower != nullptr) {
        follower->attach_blocked(blocked);
    }
}

node::~node() {
    if (started_) {
        stop(std::chrono::milliseconds(1000));
    }
}

status node::create_topics() {
    const auto& cfg = core_->cfg();
    const auto& t = core_->topics();
    const topic_spec specs[] = {
        {t.msg_all(), cfg.msg_all_partitions, cfg.msg_all_retention_ms, -1, false},
        {t.msg_persisted(), cfg.msg_persisted_partitions, cfg.msg_all_retention_ms, -1, false},
        {t.msg_retained(), 1, -1, -1, true},
        {t.client_session(), 1, -1, -1, true},
        {t.client_subscriptions(), 1, -1, -1, true},
        {t.sys_app_removed(), 1, cfg.msg_all_retention_ms, -1, false},
    };
    std::vector<topic_spec> all(std::begin(specs), std::end(specs));
    if (cfg.cluster) {
        // The follower reads client.blocked whether or not a block list is attached yet.
        all.push_back({t.client_blocked(), 1, -1, -1, true});
        all.push_back({t.downlink_basic(cfg.node_id), cfg.downlink_partitions,
                       cfg.msg_all_retention_ms, -1, false});
        all.push_back({t.downlink_persisted(cfg.node_id), cfg.downlink_partitions,
                       cfg.msg_all_retention_ms, -1, false});
    }
    for (const auto& spec : all) {
        if (auto st = core_->log().create_topic(spec); !st) {
            spdlog::error("cannot create topic {}: {}", spec.name, st.error().message());
            return st;
        }
    }
    return {};
}

status node::load_state(std::vector<std::pair<topic_partition, std::int64_t>>& follow_from) {
    auto& core = *core_;
    // Cluster mode only (null embedded).
    auto* follower = core.follower();
    auto* coordinator = core.coordinator();
    const auto& t = core.topics();
    const auto& self = core.cfg().node_id;
    const bool cluster = core.cfg().cluster;
    const auto group = t.group(self + "-state-" + std::to_string(core.now_ms()));
    const auto timeout = std::chrono::minutes(5);

    auto retained_snapshot = load_compacted_snapshot(core.log(), t.msg_retained(), group, timeout);
    if (!retained_snapshot) {
        return retained_snapshot.error();
    }
    auto& retained = retained_snapshot.value();
    for (auto& [topic, value] : retained.state) {
        proto::retained_msg rm;
        if (!rm.ParseFromString(value)) {
            continue;
        }
        auto msg = std::make_shared<const app_message>(from_proto(rm.msg()));
        if (!msg->expired(core.now_ms())) {
            core.retained().put(topic, std::move(msg));
        }
    }

    auto sessions_snapshot =
        load_compacted_snapshot(core.log(), t.client_session(), group, timeout);
    if (!sessions_snapshot) {
        return sessions_snapshot.error();
    }
    auto subscriptions_snapshot =
        load_compacted_snapshot(core.log(), t.client_subscriptions(), group, timeout);
    if (!subscriptions_snapshot) {
        return subscriptions_snapshot.error();
    }
    for (auto* snap : {&retained, &sessions_snapshot.value(), &subscriptions_snapshot.value()}) {
        follow_from.insert(follow_from.end(), snap->next_offsets.begin(), snap->next_offsets.end());
    }
    auto& sessions = sessions_snapshot.value().state;
    // client.subscriptions holds base and entry records (subscription_records.h): fold them
    // into each client's set; the entries no set owns any more are removed.
    subscription_records::fold subscription_fold;
    const auto dead_entries = subscription_fold.load(subscriptions_snapshot.value().state,
                                                     subscriptions_snapshot.value().origin);
    std::unordered_map<std::string, std::string> subscriptions;
    std::unordered_map<std::string, std::string> subscription_origin;
    for (const auto& client_id : subscription_fold.clients()) {
        subscriptions.emplace(client_id, subscription_fold.serialized_set(client_id).value_or(""));
        if (auto o = subscriptions_snapshot.value().origin.find(client_id);
            o != subscriptions_snapshot.value().origin.end()) {
            subscription_origin.emplace(client_id, o->second);
        }
    }
    if (!dead_entries.empty()) {
        spdlog::info("client.subscriptions: removing {} records of ended or replaced sets",
                     dead_entries.size());
        for (const auto& key : dead_entries) {
            const auto parsed = subscription_records::parse_key(key);
            const std::string client_id(parsed ? parsed->client_id : std::string_view(key));
            core.write_subscription_records(client_id, {{key, std::string()}}, [](status) {});
        }
    }
    // The entry records of a set this node ends at start-up.
    auto entry_records_of = [&subscription_fold](const std::string& client_id) {
        std::vector<std::string> keys;
        proto::client_subscriptions set;
        const auto generation = subscription_fold.generation_of(client_id);
        if (generation != 0 &&
            set.ParseFromString(subscription_fold.serialized_set(client_id).value_or(""))) {
            for (const auto& ts : set.subscriptions()) {
                keys.push_back(subscription_records::entry_record_key(
                    client_id, generation,
                    subscription_records::entry_key(ts.share_name(), ts.topic_filter())));
            }
        }
        return keys;
    };
    const std::int64_t now = core.now_ms();
    std::size_t restored = 0;
    std::size_t mirrored = 0;
    auto restores = std::make_shared<countdown>();
    for (auto& [client_id, value] : sessions) {
        proto::client_session s;
        const bool readable = s.ParseFromString(value);
        if (cluster && readable && s.node_id() != self) {
            // Another node's client: mirrored, never restored or deleted here; that node (or
            // the session-event handler) owns its record and its subscriptions.
            follower->apply_session(client_id, value, s.node_id());
            if (auto it = subscriptions.find(client_id); it != subscriptions.end()) {
                follower->apply_subscriptions(client_id, it->second, s.node_id());
                subscriptions.erase(it);
            }
            ++mirrored;
            continue;
        }
        if (coordinator != nullptr && readable && !s.persistent()) {
            // Through the handler, the only writer of client.session in cluster mode: the
            // client may already have reconnected on another node.
            coordinator->notify_session_ended(client_id, s.session_id());
            subscriptions.erase(client_id);
            continue;
        }
        if (!readable || !s.persistent()) {
            // A non-persistent session does not survive the node: forget it.
            core.delete_session(client_id, [](status) {});
            core.clear_subscriptions(client_id, entry_records_of(client_id));
            subscriptions.erase(client_id);
            continue;
        }
        const bool was_connected = s.connected();
        if (coordinator != nullptr && was_connected) {
            coordinator->notify_disconnected(client_id, s.session_id(), s.session_expiry_interval(),
                                             true);
        }
        const std::int64_t disconnected_at = was_connected ? now : s.disconnected_at_ms();
        std::vector<stored_subscription> subs;
        if (auto it = subscriptions.find(client_id); it != subscriptions.end()) {
            if (auto parsed = subscription_records::parse_set(it->second)) {
                subs = std::move(*parsed);
            }
            subscriptions.erase(it);
        }
        core.sessions().put_session(
            session_record{.client_id = client_id,
                           .persistent = true,
                           .connected = false,
                           .session_expiry_interval = s.session_expiry_interval(),
                           .disconnected_at_ms = disconnected_at,
                           .node_id = core.cfg().node_id,
                           .session_id = s.session_id(),
                           .type = s.client_type() == "APPLICATION" ? client_type::application
                                                                    : client_type::device});
        auto actor = core.actor_for(client_id);
        restores->add();
        actor->restore_offline_session(
            s.session_expiry_interval(), disconnected_at, std::move(subs),
            was_connected || s.unacknowledged(), [restores] { restores->done(); }, s.session_id(),
            subscription_fold.generation_of(client_id));
        ++restored;
    }
    if (!restores->wait_until(std::chrono::steady_clock::now() + timeout)) {
        return std::make_error_code(std::errc::timed_out);
    }
    // Subscription sets without a session are leftovers of sessions that ended. In a cluster
    // only this node's own leftovers are removed; another node's set may belong to a session
    // whose record is still on its way, so it is mirrored.
    for (auto& [client_id, value] : subscriptions) {
        auto origin = subscription_origin.find(client_id);
        const std::string written_by = origin == subscription_origin.end() ? "" : origin->second;
        if (cluster && written_by != self) {
            follower->apply_subscriptions(client_id, value, written_by);
            continue;
        }
        core.clear_subscriptions(client_id, entry_records_of(client_id));
    }
    if (follower != nullptr) {
        // The follower continues the fold from the snapshot's end: an entry record of another
        // node's set needs that set's base, which the snapshot held.
        follower->seed_subscriptions(std::move(subscription_fold));
    }
    spdlog::info(
        "restored {} persistent sessions, {} retained messages; mirrored {} sessions of "
        "other nodes",
        restored, core.retained().size(), mirrored);
    return {};
}

void node::start() {
    timers_.start();
    dispatcher_.start();
    if (auto st = create_topics(); !st) {
        throw std::runtime_error("message log: cannot create topics: " + st.error().message());
    }
    std::vector<std::pair<topic_partition, std::int64_t>> follow_from;
    if (auto st = load_state(follow_from); !st) {
        throw std::runtime_error("cannot load broker state: " + st.error().message());
    }
    if (core_->session_limits().enabled()) {
        // The session-limit counters restart from what the client.session mirror holds (the
        // correction of any drift, session_limits.h), before any client connects here.
        std::int64_t sessions = 0;
        std::int64_t applications = 0;
        core_->sessions().for_each_session([&](const session_record& r) {
            ++sessions;
            applications += r.type == client_type::application ? 1 : 0;
        });
        core_->session_limits().reconcile(sessions, applications, {});
    }
    if (auto* follower = core_->follower(); follower != nullptr) {
        // Before the msg.all consumers: a copy routed here must find the mirror current and
        // this node's downlink topics read.
        if (auto st = follower->start(std::move(follow_from)); !st) {
            throw std::runtime_error("cannot start the state follower: " + st.error().message());
        }
        if (auto st = downlink_->start(); !st) {
            throw std::runtime_error("cannot start the msg.downlink.basic consumer: " +
                                     st.error().message());
        }
        if (auto st = downlink_persisted_->start(); !st) {
            throw std::runtime_error("cannot start the msg.downlink.persisted consumer: " +
                                     st.error().message());
        }
    }
    if (auto* coordinator = core_->coordinator(); coordinator != nullptr) {
        if (auto st = coordinator->start(); !st) {
            throw std::runtime_error("cannot start session coordination: " + st.error().message());
        }
    }
    if (auto st = router_->start(); !st) {
        throw std::runtime_error("cannot start msg.all consumers: " + st.error().message());
    }
    if (auto st = persisted_->start(); !st) {
        throw std::runtime_error("cannot start msg.persisted consumers: " + st.error().message());
    }
    if (auto st = app_removed_->start(); !st) {
        throw std::runtime_error("cannot start the sys.app.removed consumer: " +
                                 st.error().message());
    }
    gauges_ = metrics_.add_refresher([this] {
        core_->refresh_gauges();
        std::size_t depth = 0;
        core_->sessions().for_each_actor(
            [&](const std::shared_ptr<client_actor>& a) { depth += a->mailbox_depth(); });
        metrics_.actor().set_mailbox_depth(static_cast<std::int64_t>(depth));
        metrics_.actor().set_running_actors(
            static_cast<std::int64_t>(core_->sessions().actor_count()));
    });
    started_ = true;
}

void node::stop(std::chrono::milliseconds timeout) {
    if (!started_) {
        return;
    }
    started_ = false;
    core_->set_stopping();
    const auto deadline = std::chrono::steady_clock::now() + timeout;

    // Every actor closes its connection (DISCONNECT 0x8B to v5 clients) and writes its session.
    // The countdown is shared with the actors: one that finishes after the deadline must not
    // touch this stack frame.
    auto pending = std::make_shared<countdown>();
    core_->sessions().for_each_actor([&](const std::shared_ptr<client_actor>& a) {
        pending->add();
        if (!a->tell_control(client_msg::shutdown{[pending] { pending->done(); }})) {
            pending->done();
        }
    });
    if (!pending->wait_until(deadline)) {
        spdlog::warn("shutdown: {} actors did not finish in time", pending->outstanding());
    }
    // Session records and last acknowledgements reach the log before consumers stop.
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    (void)core_->log().flush(std::max(left, std::chrono::milliseconds(100)));
    if (auto* coordinator = core_->coordinator(); coordinator != nullptr) {
        // After the actors' last session events were written: handle those this node's handler
        // owns, then stop (fails requests still waiting).
        coordinator->drain(std::max(left, std::chrono::milliseconds(500)));
        coordinator->stop();
    }
    router_->stop();
    persisted_->stop();
    app_removed_->stop();
    if (auto* follower = core_->follower(); follower != nullptr) {
        downlink_->stop();
        downlink_persisted_->stop();
        follower->stop();
    }
    gauges_.reset();
    timers_.stop();
    dispatcher_.stop();
    // Completions of writes issued by the last actor turns reference the core: let them run
    // before the core goes away.
    (void)core_->log().flush(std::chrono::milliseconds(2000));
    // Drop the actors (they reference the dispatcher and timers).
    core_->sessions().for_each_actor([&](const std::shared_ptr<client_actor>& a) {
        core_->sessions().remove_actor(a->client_id(), a.get());
    });
}

node::pipeline_counts node::pipeline_for_test() const {
    return pipeline_counts{.msg_all_handled = router_->records_routed(),
                           .persisted_produced = router_->persisted_copies(),
                           .persisted_handled = persisted_->records_handled()};
}

}  // namespace starling::broker
