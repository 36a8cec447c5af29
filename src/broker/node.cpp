#include "broker/node.h"

#include "base/countdown.h"
#include "broker/client_actor.h"
#include "broker/state_loader.h"

#include "proto/starling.pb.h"
#include <spdlog/spdlog.h>

#include <stdexcept>

namespace starling::broker {

node::node(settings cfg, message_log& log, device_inbox& inbox, metadata_store& metadata,
           metrics::registry& metrics, std::size_t dispatcher_threads, const starling::clock& clock)
    : metrics_(metrics),
      dispatcher_("client-actors", dispatcher_threads == 0 ? 1 : dispatcher_threads),
      timers_("broker-timers", clock) {
    core_ = std::make_unique<broker_core>(std::move(cfg), log, inbox, metadata, dispatcher_,
                                          timers_, metrics.broker(), metrics.log(), clock);
    router_ = std::make_unique<publish_router>(*core_, metrics.routing());
    persisted_ = std::make_unique<persisted_consumer>(*core_);
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
    for (const auto& spec : specs) {
        if (auto st = core_->log().create_topic(spec); !st) {
            spdlog::error("cannot create topic {}: {}", spec.name, st.error().message());
            return st;
        }
    }
    return {};
}

status node::load_state() {
    auto& core = *core_;
    const auto& t = core.topics();
    const auto group = core.cfg().node_id + "-state-" + std::to_string(core.now_ms());
    const auto timeout = std::chrono::minutes(5);

    auto retained = load_compacted_topic(core.log(), t.msg_retained(), group, timeout);
    if (!retained) {
        return retained.error();
    }
    for (auto& [topic, value] : retained.value()) {
        proto::retained_msg rm;
        if (!rm.ParseFromString(value)) {
            continue;
        }
        auto msg = std::make_shared<const app_message>(from_proto(rm.msg()));
        if (!msg->expired(core.now_ms())) {
            core.retained().put(topic, std::move(msg));
        }
    }

    auto sessions = load_compacted_topic(core.log(), t.client_session(), group, timeout);
    if (!sessions) {
        return sessions.error();
    }
    auto subscriptions = load_compacted_topic(core.log(), t.client_subscriptions(), group, timeout);
    if (!subscriptions) {
        return subscriptions.error();
    }
    const std::int64_t now = core.now_ms();
    std::size_t restored = 0;
    auto restores = std::make_shared<countdown>();
    for (auto& [client_id, value] : sessions.value()) {
        proto::client_session s;
        if (!s.ParseFromString(value) || !s.persistent()) {
            // A non-persistent session does not survive the node: forget it.
            core.delete_session(client_id, [](status) {});
            core.write_subscriptions(client_id, std::string(), [](status) {});
            subscriptions.value().erase(client_id);
            continue;
        }
        const bool was_connected = s.connected();
        const std::int64_t disconnected_at = was_connected ? now : s.disconnected_at_ms();
        std::vector<stored_subscription> subs;
        if (auto it = subscriptions.value().find(client_id); it != subscriptions.value().end()) {
            proto::client_subscriptions set;
            if (set.ParseFromString(it->second)) {
                for (const auto& ts : set.subscriptions()) {
                    stored_subscription sub;
                    sub.filter = ts.topic_filter();
                    sub.share_group = ts.share_name();
                    sub.options.qos =
                        static_cast<mqtt::qos>(std::min<std::uint32_t>(ts.options().qos(), 2));
                    sub.options.no_local = ts.options().no_local();
                    sub.options.retain_as_published = ts.options().retain_as_published();
                    sub.options.retain_handling = static_cast<mqtt::retain_handling>(
                        std::min<std::uint32_t>(ts.options().retain_handling(), 2));
                    if (ts.has_subscription_id()) {
                        sub.subscription_id = ts.subscription_id();
                    }
                    subs.push_back(std::move(sub));
                }
            }
            subscriptions.value().erase(it);
        }
        core.sessions().put_session(
            session_record{.client_id = client_id,
                           .persistent = true,
                           .connected = false,
                           .session_expiry_interval = s.session_expiry_interval(),
                           .disconnected_at_ms = disconnected_at,
                           .node_id = core.cfg().node_id,
                           .type = s.client_type() == "APPLICATION" ? client_type::application
                                                                    : client_type::device});
        auto actor = core.actor_for(client_id);
        restores->add();
        actor->restore_offline_session(s.session_expiry_interval(), disconnected_at,
                                       std::move(subs), was_connected,
                                       [restores] { restores->done(); });
        ++restored;
    }
    if (!restores->wait_until(std::chrono::steady_clock::now() + timeout)) {
        return std::make_error_code(std::errc::timed_out);
    }
    // Subscription sets without a session are leftovers of sessions that ended.
    for (auto& [client_id, value] : subscriptions.value()) {
        core.write_subscriptions(client_id, std::string(), [](status) {});
    }
    spdlog::info("restored {} persistent sessions, {} retained messages", restored,
                 core.retained().size());
    return {};
}

void node::start() {
    timers_.start();
    dispatcher_.start();
    if (auto st = create_topics(); !st) {
        throw std::runtime_error("message log: cannot create topics: " + st.error().message());
    }
    if (auto st = load_state(); !st) {
        throw std::runtime_error("cannot load broker state: " + st.error().message());
    }
    if (auto st = router_->start(); !st) {
        throw std::runtime_error("cannot start msg.all consumers: " + st.error().message());
    }
    if (auto st = persisted_->start(); !st) {
        throw std::runtime_error("cannot start msg.persisted consumers: " + st.error().message());
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
    router_->stop();
    persisted_->stop();
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

}  // namespace starling::broker
