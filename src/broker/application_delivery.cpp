#include "broker/application_delivery.h"

#include "broker/broker_core.h"
#include "broker/client_actor.h"

#include "proto/starling.pb.h"
#include <spdlog/spdlog.h>

#include <algorithm>
#include <iterator>
#include <limits>

namespace starling::broker {

// ---------------------------------------------------------------------------------------------
// application_session

application_session::application_session(broker_core& core, std::string client_id)
    : core_(core), client_id_(std::move(client_id)) {}

application_session::~application_session() {
    if (consumer_) {
        consumer_->stop();
    }
    for (auto& [id, src] : shared_) {
        if (src.consumer) {
            src.consumer->stop();
        }
    }
}

void application_session::connect(bool resumed, std::function<void(std::function<void()>)> post,
                                  std::function<void()> wake) {
    if (consumer_ || connected_) {
        disconnect();  // a takeover: the previous connection did not end through disconnect()
    }
    ++generation_;
    active_ = true;
    connected_ = true;
    post_ = std::move(post);
    wake_ = std::move(wake);
    if (!resumed) {
        publish_.clear();
        pubrel_.clear();
        resend_.clear();
        by_id_.clear();
        pending_.clear();
        pubrels_to_send_.clear();
        resend_until_ = 0;
        next_offset_ = -1;
        loaded_ = true;
        core_.metadata().delete_application_context(client_id_, [](status) {});
        // The backlog goes with the topic (both log adapters drop the group's committed offset
        // with it). Before CONNACK, on this thread: a copy routed after the new session began
        // must land in the new topic, not in one a consumer thread deletes a moment later.
        const std::string topic = core_.topics().msg_app(client_id_);
        (void)core_.log().delete_topic(topic);
        start_consumer();
        return;
    }
    if (loaded_) {
        for (const auto& [pos, id] : pubrel_) {
            pubrels_to_send_.push_back(id);
        }
        start_consumer();
        return;
    }
    // First connection of this session on this node (after a restart, or the session moved):
    // the store knows what the last connection left in flight.
    loading_ = true;
    const std::uint64_t generation = generation_;
    auto post_fn = post_;
    core_.metadata().load_application_context(
        client_id_,
        [this, post_fn, generation](result<std::optional<application_session_context>> r) {
            post_fn([this, generation, r = std::move(r)]() mutable {
                if (generation != generation_) {
                    return;  // disconnected meanwhile; the next connect loads again
                }
                loading_ = false;
                if (!r) {
                    // Without the context the session would redeliver under new ids: better
                    // than nothing, and what a crash before the first save looks like anyway.
                    spdlog::warn("client {}: APPLICATION context not loaded: {}", client_id_,
                                 r.error().message());
                } else if (r.value()) {
                    for (const auto& [id, offset] : r.value()->publish_offsets) {
                        resend_[own(offset)] = id;
                        by_id_[id] = own(offset);
                        resend_until_ = std::max(resend_until_, offset + 1);
                    }
                    for (const auto& [id, offset] : r.value()->pubrel_offsets) {
                        pubrel_[own(offset)] = id;
                        by_id_[id] = own(offset);
                        pubrels_to_send_.push_back(id);
                        resend_until_ = std::max(resend_until_, offset + 1);
                    }
                }
                loaded_ = true;
                start_consumer();
                wake_();
            });
        });
}

void application_session::start_consumer() {
    const auto& cfg = core_.cfg();
    app_consumer::options opts;
    opts.topic = core_.topics().msg_app(client_id_);
    opts.group = core_.topics().msg_app_group(client_id_);
    opts.spec =
        topic_spec{opts.topic, 1, cfg.app_msg_retention_ms, cfg.app_msg_retention_bytes, false};
    opts.buffer_limit = std::max<std::size_t>(1, cfg.app_msg_buffer_records);
    opts.poll_interval = cfg.poll_interval;
    if (auto st = core_.log().create_topic(opts.spec); !st) {
        // The consumer retries on its turns; until then the router's writes fail and are retried.
        spdlog::warn("client {}: APPLICATION topic {} not created: {}", client_id_, opts.topic,
                     st.error().message());
    }
    consumer_ =
        std::make_unique<app_consumer>(core_.app_consumers(), core_.log(), std::move(opts), wake_);
    update_commit();
    consumer_->start();
}

void application_session::start_shared(std::uint32_t source, shared_source& src) {
    const auto& cfg = core_.cfg();
    app_consumer::options opts;
    opts.topic = core_.topics().msg_app_shared(src.spec.filter);
    opts.group = core_.topics().app_shared_group(src.spec.share, src.spec.filter);
    opts.group_managed = true;
    // On a pool thread, in the consumer's turn: the lookup of the filter's entity and the admin
    // call block.
    opts.prepare = [&core = core_, filter = src.spec.filter]() -> status {
        auto topic = core.app_shared().ensure(filter);
        if (!topic) {
            return topic.error();
        }
        return {};
    };
    opts.buffer_limit = std::max<std::size_t>(1, cfg.app_msg_buffer_records);
    opts.poll_interval = cfg.poll_interval;
    spdlog::info("client {}: reading {} as a member of {}", client_id_, opts.topic, opts.group);
    src.consumer =
        std::make_unique<app_consumer>(core_.app_consumers(), core_.log(), std::move(opts), wake_);
    update_shared_commit(source);
    src.consumer->start();
}

void application_session::stop_shared(std::uint32_t source) {
    auto it = shared_.find(source);
    if (it == shared_.end()) {
        return;
    }
    if (it->second.consumer) {
        update_shared_commit(source);
        it->second.consumer->stop();  // commits, then leaves the group
        it->second.consumer.reset();
    }
    const position from{source, std::numeric_limits<std::int32_t>::min(),
                        std::numeric_limits<std::int64_t>::min()};
    for (auto* m : {&publish_, &pubrel_}) {
        for (auto e = m->lower_bound(from); e != m->end() && e->first.source == source;) {
            by_id_.erase(e->second);
            e = m->erase(e);
        }
    }
    shared_.erase(it);
}

void application_session::set_shared(std::vector<app_shared_spec> specs) {
    if (!connected_) {
        return;
    }
    auto same = [](const app_shared_spec& a, const app_shared_spec& b) {
        return a.share == b.share && a.filter == b.filter;
    };
    std::vector<std::uint32_t> gone;
    for (auto& entry : shared_) {
        // Not a structured binding: clang 14 cannot capture one in a lambda (the fuzz build).
        auto& src = entry.second;
        auto spec = std::find_if(specs.begin(), specs.end(),
                                 [&](const app_shared_spec& s) { return same(s, src.spec); });
        if (spec == specs.end()) {
            gone.push_back(entry.first);
        } else {
            src.spec = std::move(*spec);  // a SUBSCRIBE again may change QoS and options
            specs.erase(spec);
        }
    }
    for (auto id : gone) {
        stop_shared(id);
    }
    for (auto& spec : specs) {
        const std::uint32_t id = next_source_id_++;
        auto& src = shared_[id];
        src.spec = std::move(spec);
        start_shared(id, src);
    }
}

void application_session::disconnect() {
    ++generation_;
    loading_ = false;
    connected_ = false;
    while (!shared_.empty()) {
        stop_shared(shared_.begin()->first);
    }
    for (const auto& [pos, id] : publish_) {
        resend_[pos] = id;
    }
    publish_.clear();
    if (next_offset_ >= 0) {
        resend_until_ = std::max(resend_until_, next_offset_);
    }
    pending_.clear();
    pubrels_to_send_.clear();
    if (consumer_) {
        update_commit();
        consumer_->stop();
        consumer_.reset();
    }
    save();
}

void application_session::drop() {
    ++generation_;
    loading_ = false;
    connected_ = false;
    active_ = false;
    while (!shared_.empty()) {
        stop_shared(shared_.begin()->first);
    }
    if (consumer_) {
        update_commit();
        consumer_->stop();
        consumer_.reset();
    }
    publish_.clear();
    pubrel_.clear();
    resend_.clear();
    by_id_.clear();
    pending_.clear();
    pubrels_to_send_.clear();
    resend_until_ = 0;
    next_offset_ = -1;
    loaded_ = false;  // the next connection here loads what the other node left
}

void application_session::remove(bool type_changed) {
    ++generation_;
    active_ = false;
    connected_ = false;
    while (!shared_.empty()) {
        stop_shared(shared_.begin()->first);
    }
    if (consumer_) {
        consumer_->stop();
        consumer_.reset();
    }
    publish_.clear();
    pubrel_.clear();
    resend_.clear();
    by_id_.clear();
    pending_.clear();
    pubrels_to_send_.clear();
    resend_until_ = 0;
    next_offset_ = -1;
    loaded_ = true;
    const std::string topic = core_.topics().msg_app(client_id_);
    // A blocking admin call on the actor's thread (as at clean start), once per ended session.
    // TODO(app-clients): hand it to the metadata/admin pool when one exists for the log.
    (void)core_.log().delete_topic(topic);
    core_.metadata().delete_application_context(client_id_, [](status) {});
    spdlog::info("client {}: APPLICATION topic {} removed{}", client_id_, topic,
                 type_changed ? " (client type changed)" : "");
    if (type_changed) {
        core_.log().produce(core_.topics().sys_app_removed(), client_id_, topic, {},
                            [id = client_id_](result<produce_ack> r) {
                                if (!r) {
                                    spdlog::warn("client {}: sys.app.removed not written: {}", id,
                                                 r.error().message());
                                }
                            });
    }
}

std::optional<app_outbound> application_session::next(
    const std::function<std::uint16_t()>& new_id) {
    if (!pubrels_to_send_.empty()) {
        app_outbound out;
        out.packet_id = pubrels_to_send_.front();
        out.pubrel = true;
        pubrels_to_send_.pop_front();
        return out;
    }
    if (!loaded_) {
        // The saved packet ids are not known yet: an id handed out now could be one of them.
        return std::nullopt;
    }
    // Sources in turns (own topic = slot 0, then the shared ones in id order), starting one
    // further each call, so a deep backlog in one does not starve the others.
    const std::size_t slots = 1 + shared_.size();
    const std::size_t first = turn_++ % slots;
    for (std::size_t k = 0; k < slots; ++k) {
        const std::size_t slot = (first + k) % slots;
        std::optional<app_outbound> out;
        if (slot == 0) {
            bool changed = false;
            out = next_own(new_id, changed);
            if (changed) {
                update_commit();
                save();
            }
        } else {
            auto it = std::next(shared_.begin(), static_cast<std::ptrdiff_t>(slot - 1));
            out = next_shared(it->first, it->second, new_id);
        }
        if (out) {
            return out;
        }
    }
    return std::nullopt;
}

std::optional<app_outbound> application_session::next_own(
    const std::function<std::uint16_t()>& new_id, bool& changed) {
    if (!consumer_) {
        return std::nullopt;
    }
    const std::int64_t now = core_.now_ms();
    std::optional<app_outbound> result;
    while (!result) {
        if (pending_.empty()) {
            auto taken = consumer_->take(256);
            if (taken.empty()) {
                break;
            }
            for (auto& r : taken) {
                pending_.push_back(std::move(r));
            }
        }
        log_record& rec = pending_.front();
        const std::int64_t offset = rec.offset;
        const position pos = own(offset);
        if (next_offset_ >= 0 && offset < next_offset_ && !resend_.contains(pos)) {
            pending_.pop_front();  // read again after a reconnect, already handled
            continue;
        }
        auto resend = resend_.find(pos);
        const bool is_resend = resend != resend_.end();
        if (!is_resend && (pubrel_.contains(pos) || offset < resend_until_)) {
            // Awaiting PUBCOMP (the PUBREL goes on its own) or acknowledged on an earlier
            // connection.
            pending_.pop_front();
            next_offset_ = std::max(next_offset_, offset + 1);
            changed = true;
            continue;
        }
        proto::persisted_msg pm;
        const bool readable = pm.ParseFromString(rec.value);
        std::optional<app_message> msg;
        if (readable) {
            msg = from_proto(pm.msg());
        } else {
            spdlog::error("client {}: unreadable APPLICATION record at offset {}", client_id_,
                          offset);
        }
        if (!readable || msg->expired(now)) {
            if (readable) {
                core_.probe().message_dropped(metrics::drop_reason::expired, client_id_,
                                              msg->topic);
            }
            if (is_resend) {
                by_id_.erase(resend->second);
                resend_.erase(resend);
            }
            pending_.pop_front();
            next_offset_ = std::max(next_offset_, offset + 1);
            changed = true;
            continue;
        }
        std::uint16_t id = 0;
        if (is_resend) {
            id = resend->second;
            resend_.erase(resend);
        } else {
            id = new_id();
            if (id == 0) {
                break;  // every id in use: wait for acknowledgements
            }
            by_id_[id] = pos;
        }
        publish_[pos] = id;
        app_outbound out;
        out.packet_id = id;
        out.dup = is_resend;
        out.d.msg = std::make_shared<const app_message>(std::move(*msg));
        out.d.qos = static_cast<mqtt::qos>(std::clamp<std::uint32_t>(pm.qos(), 1, 2));
        out.d.retain = pm.retain();
        out.d.subscription_ids.assign(pm.subscription_ids().begin(), pm.subscription_ids().end());
        result = std::move(out);
        pending_.pop_front();
        next_offset_ = std::max(next_offset_, offset + 1);
        changed = true;
    }
    return result;
}

std::optional<app_outbound> application_session::next_shared(
    std::uint32_t source, shared_source& src, const std::function<std::uint16_t()>& new_id) {
    if (!src.consumer) {
        return std::nullopt;
    }
    const std::int64_t now = core_.now_ms();
    bool changed = false;
    std::optional<app_outbound> result;
    while (!result) {
        if (src.pending.empty()) {
            auto taken = src.consumer->take(256);
            if (taken.empty()) {
                break;
            }
            for (auto& r : taken) {
                src.pending.push_back(std::move(r));
            }
        }
        log_record& rec = src.pending.front();
        if (!src.consumer->owns(rec.partition)) {
            src.pending.pop_front();  // the group moved the partition: its new owner sends it
            continue;
        }
        auto next = src.next_offset.find(rec.partition);
        if (next != src.next_offset.end() && rec.offset < next->second) {
            // Read again after the partition came back: in flight here or acknowledged.
            src.pending.pop_front();
            continue;
        }
        const position pos{source, rec.partition, rec.offset};
        auto advance = [&] {
            src.next_offset[rec.partition] = rec.offset + 1;
            src.pending.pop_front();
            changed = true;
        };
        proto::persisted_msg pm;
        const bool readable = pm.ParseFromString(rec.value);
        std::optional<app_message> msg;
        if (readable) {
            msg = from_proto(pm.msg());
        } else {
            spdlog::error("client {}: unreadable record {}/{}@{}", client_id_, rec.topic,
                          rec.partition, rec.offset);
        }
        if (!readable || msg->expired(now)) {
            if (readable) {
                core_.probe().message_dropped(metrics::drop_reason::expired, client_id_,
                                              msg->topic);
            }
            advance();
            continue;
        }
        // The copy carries the message's QoS; the member's subscription caps it (MQTT 5
        // §3.8.4: min of the two), and its own options decide retain and identifiers.
        const auto qos = static_cast<mqtt::qos>(std::min<std::uint32_t>(
            std::min<std::uint32_t>(pm.qos(), 2), static_cast<std::uint32_t>(src.spec.qos)));
        app_outbound out;
        out.d.qos = qos;
        out.d.retain = src.spec.retain_as_published && pm.retain();
        if (src.spec.subscription_id) {
            out.d.subscription_ids.push_back(*src.spec.subscription_id);
        }
        if (qos != mqtt::qos::at_most_once) {
            const std::uint16_t id = new_id();
            if (id == 0) {
                break;  // every id in use: wait for acknowledgements
            }
            by_id_[id] = pos;
            publish_[pos] = id;
            out.packet_id = id;
        }
        out.d.msg = std::make_shared<const app_message>(std::move(*msg));
        result = std::move(out);
        advance();
    }
    if (changed) {
        update_shared_commit(source);
    }
    return result;
}

std::size_t application_session::shared_partitions_for_test() const {
    std::size_t n = 0;
    for (const auto& [id, src] : shared_) {
        n += src.consumer ? src.consumer->owned_count() : 0;
    }
    return n;
}

bool application_session::reserves(std::uint16_t packet_id) const {
    auto it = by_id_.find(packet_id);
    // Ids of messages to resend and of PUBRELs to resend: promised to the client already.
    return it != by_id_.end() && !publish_.contains(it->second);
}

void application_session::on_pubrec(std::uint16_t packet_id) {
    auto it = by_id_.find(packet_id);
    if (it == by_id_.end()) {
        return;
    }
    publish_.erase(it->second);
    pubrel_[it->second] = packet_id;
    if (it->second.source == own_source) {
        save();
    }
}

void application_session::on_acknowledged(std::uint16_t packet_id) {
    auto it = by_id_.find(packet_id);
    if (it == by_id_.end()) {
        return;
    }
    const position pos = it->second;
    publish_.erase(pos);
    pubrel_.erase(pos);
    by_id_.erase(it);
    if (pos.source != own_source) {
        update_shared_commit(pos.source);
        return;
    }
    update_commit();
    save();
}

std::optional<std::int64_t> application_session::lowest_unacknowledged() const {
    std::optional<std::int64_t> low;
    auto consider = [&](std::int64_t o) { low = low ? std::min(*low, o) : o; };
    // Own-source entries sort first (source 0), so the first entry of a map is the lowest one.
    for (const auto* m : {&publish_, &pubrel_, &resend_}) {
        if (!m->empty() && m->begin()->first.source == own_source) {
            consider(m->begin()->first.offset);
        }
    }
    if (next_offset_ >= 0) {
        consider(next_offset_);
    }
    return low;
}

void application_session::update_commit() {
    if (!consumer_) {
        return;
    }
    if (auto low = lowest_unacknowledged()) {
        consumer_->set_commit(0, *low);
    }
}

void application_session::update_shared_commit(std::uint32_t source) {
    auto it = shared_.find(source);
    if (it == shared_.end() || !it->second.consumer) {
        return;
    }
    // Per partition: the lowest offset still awaiting its acknowledgement, else the one after
    // the last taken.
    std::map<std::int32_t, std::int64_t> low = it->second.next_offset;
    const position from{source, std::numeric_limits<std::int32_t>::min(),
                        std::numeric_limits<std::int64_t>::min()};
    for (const auto* m : {&publish_, &pubrel_}) {
        for (auto e = m->lower_bound(from); e != m->end() && e->first.source == source; ++e) {
            auto [slot, inserted] = low.emplace(e->first.partition, e->first.offset);
            if (!inserted) {
                slot->second = std::min(slot->second, e->first.offset);
            }
        }
    }
    for (const auto& [partition, offset] : low) {
        it->second.consumer->set_commit(partition, offset);
    }
}

void application_session::save() {
    if (!loaded_ || !post_) {
        return;  // nothing known yet: saving would erase what the store has
    }
    if (saving_) {
        save_again_ = true;
        return;
    }
    saving_ = true;
    save_again_ = false;
    application_session_context ctx;
    ctx.client_id = client_id_;
    ctx.last_updated_ms = core_.now_ms();
    // Only the own topic's entries: a shared source's in-flight messages go back to the group
    // when the connection ends.
    for (const auto* m : {&publish_, &resend_}) {
        for (const auto& [pos, id] : *m) {
            if (pos.source == own_source) {
                ctx.publish_offsets.emplace_back(id, pos.offset);
            }
        }
    }
    for (const auto& [pos, id] : pubrel_) {
        if (pos.source == own_source) {
            ctx.pubrel_offsets.emplace_back(id, pos.offset);
        }
    }
    auto post_fn = post_;
    core_.metadata().save_application_context(std::move(ctx), [this, post_fn](status st) {
        post_fn([this, st] {
            saving_ = false;
            if (!st) {
                spdlog::warn("client {}: APPLICATION context not saved: {}", client_id_,
                             st.error().message());
            }
            if (save_again_) {
                save();
                return;
            }
            auto waiters = std::move(saved_waiters_);
            saved_waiters_.clear();
            for (auto& fn : waiters) {
                fn();
            }
        });
    });
}

void application_session::when_saved(std::function<void()> fn) {
    if (!saving_) {
        fn();
        return;
    }
    saved_waiters_.push_back(std::move(fn));
}

// ---------------------------------------------------------------------------------------------
// The client_actor side: kept here so client_actor.cpp only carries one-line hooks.

void client_actor::app_on_connect(bool session_present) {
    const bool was_app = (app_ && app_->active()) || app_previous_type_ == client_type::application;
    if (persistent_ && type_ == client_type::application) {
        if (!app_) {
            app_ = std::make_unique<application_session>(core_, client_id_);
        }
        std::weak_ptr<client_actor> weak = weak_from_this();
        auto post_fn = [weak](std::function<void()> fn) {
            if (auto self = weak.lock()) {
                self->post([fn = std::move(fn)](client_actor&) { fn(); });
            }
        };
        auto wake = [weak] {
            if (auto self = weak.lock()) {
                self->post([](client_actor& a) { a.pump_app(); });
            }
        };
        app_->connect(session_present, std::move(post_fn), std::move(wake));
        app_sync_shared();
        return;
    }
    if (was_app) {
        if (!app_) {
            app_ = std::make_unique<application_session>(core_, client_id_);
        }
        // Kept (inactive) for the actor's lifetime: completions already posted refer to it.
        app_->remove(/*type_changed=*/type_ != client_type::application);
    }
}

void client_actor::app_on_session_end() {
    auto record = core_.sessions().find_session(client_id_);
    // After a restart the actor knows the type only from the session record.
    const bool was_app = (app_ && app_->active()) ||
                         (record && record->persistent && record->type == client_type::application);
    if (!was_app) {
        return;
    }
    if (!app_) {
        app_ = std::make_unique<application_session>(core_, client_id_);
    }
    app_->remove(false);
}

std::size_t client_actor::app_shared_partitions_for_test() const {
    return app_ ? app_->shared_partitions_for_test() : 0;
}

void client_actor::app_sync_shared() {
    if (!app_ || !app_->active() || !persistent_ || type_ != client_type::application) {
        return;
    }
    std::vector<app_shared_spec> specs;
    for (const auto& [key, sub] : subscriptions_) {
        if (sub.share_group.empty()) {
            continue;
        }
        specs.push_back(app_shared_spec{.share = sub.share_group,
                                        .filter = sub.filter,
                                        .qos = sub.options.qos,
                                        .retain_as_published = sub.options.retain_as_published,
                                        .subscription_id = sub.subscription_id});
    }
    app_->set_shared(std::move(specs));
}

void client_actor::pump_app() {
    if (!app_ || !delivering()) {
        return;
    }
    while (inflight_.has_room(window()) && channel_writable()) {
        auto out = app_->next([this] { return next_packet_id(); });
        if (!out) {
            return;
        }
        if (!out->pubrel && out->d.qos == mqtt::qos::at_most_once) {
            send_publish(out->d, 0, false);  // a shared subscription granted QoS 0
            continue;
        }
        if (out->pubrel) {
            // An interrupted QoS 2 exchange resumes at PUBREL.
            inflight_.resume_at_pubrel(out->packet_id, outbound_entry{.from_app = true});
            send_packet(mqtt::pubrel{out->packet_id, mqtt::reason_code::success, {}});
            continue;
        }
        if (check_stored_deliveries_ && !authorized_for_delivery(*out->d.msg)) {
            // Stored for a subscription the client now connected may not have: completed
            // without sending (authorize_inherited_subscriptions).
            core_.probe().message_dropped(metrics::drop_reason::not_authorized, client_id_,
                                          out->d.msg->topic);
            app_->on_acknowledged(out->packet_id);
            continue;
        }
        const mqtt::qos level = out->d.qos;
        const auto& entry = inflight_.start(
            out->packet_id, level, outbound_entry{.d = std::move(out->d), .from_app = true});
        send_publish(entry.d, out->packet_id, out->dup);
    }
}

}  // namespace starling::broker
