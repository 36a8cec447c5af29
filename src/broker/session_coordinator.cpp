#include "broker/session_coordinator.h"

#include "base/retry_pacer.h"
#include "broker/broker_core.h"
#include "broker/client_actor.h"
#include "broker/subscription_records.h"

#include "proto/starling.pb.h"
#include <spdlog/spdlog.h>

#include <algorithm>
#include <map>
#include <set>

namespace starling::broker {

namespace {

// Bound on how long the handler waits for the writes of one polled batch before it commits
// anyway (the unacknowledged events are then redelivered to whoever owns the partition next).
constexpr auto batch_write_bound = std::chrono::seconds(30);

// Joins the acknowledgements of a decision's writes: `done` runs once with true when every
// write succeeded, false otherwise. Shared by the writes' callbacks (log threads).
struct write_join {
    std::mutex mutex;
    int remaining = 0;
    bool ok = true;
    std::function<void(bool)> done;

    void complete(bool success) {
        std::function<void(bool)> fn;
        bool all_ok = false;
        {
            std::lock_guard lock(mutex);
            ok = ok && success;
            if (--remaining != 0) {
                return;
            }
            fn = std::move(done);
            all_ok = ok;
        }
        fn(all_ok);
    }
};

// The record is written on behalf of the node that holds the session, not the handler's node:
// state followers treat it as that node's write (its own echo there, a mirror update
// elsewhere). Same header name as the origin header of the state follower (cluster-state).
std::vector<log_header> written_for(const std::string& node_id) {
    return {log_header{"starling-origin-node", node_id}};
}

}  // namespace

session_coordinator::session_coordinator(broker_core& core)
    : core_(core),
      request_topic_(core.topics().session_event_request()),
      response_topic_(core.topics().session_event_response(core.cfg().node_id)),
      disconnect_topic_(core.topics().client_disconnect(core.cfg().node_id)),
      id_prefix_(core.cfg().node_id + "-" + std::to_string(core.now_ms()) + "-") {}

session_coordinator::~session_coordinator() { stop(); }

status session_coordinator::start() {
    const auto& cfg = core_.cfg();
    const topic_spec specs[] = {
        {request_topic_, cfg.session_event_partitions, cfg.msg_all_retention_ms, -1, false},
        {response_topic_, 1, cfg.msg_all_retention_ms, -1, false},
        {disconnect_topic_, 1, cfg.msg_all_retention_ms, -1, false},
    };
    for (const auto& spec : specs) {
        if (auto st = core_.log().create_topic(spec); !st) {
            spdlog::error("cannot create topic {}: {}", spec.name, st.error().message());
            return st;
        }
    }
    // The real partition count wins over the configured one (the topic may predate it).
    auto partitions = core_.log().partition_count(request_topic_);
    if (!partitions) {
        return partitions.error();
    }
    request_partitions_ = partitions.value();

    consumer_spec handler;
    handler.group_id = core_.topics().group("session-event-handlers");
    handler.instance_id = cfg.node_id + "-session-events";
    handler.topics = {request_topic_};
    handler.reset = offset_reset::earliest;
    auto h = core_.log().create_consumer(handler);
    if (!h) {
        return h.error();
    }
    // The node's own topics: read by this node only, so a manual assignment; committed offsets
    // under a per-node group let a restarted node skip what it already handled.
    consumer_spec inbox;
    inbox.group_id = core_.topics().group(cfg.node_id + "-session-inbox");
    inbox.assignment = {topic_partition{response_topic_, 0}, topic_partition{disconnect_topic_, 0}};
    inbox.reset = offset_reset::earliest;
    auto i = core_.log().create_consumer(inbox);
    if (!i) {
        h.value()->close();
        return i.error();
    }
    handler_consumer_ = std::move(h.value());
    inbox_consumer_ = std::move(i.value());
    stop_ = std::stop_source();
    running_.store(true, std::memory_order_release);
    handler_thread_ = std::thread(&session_coordinator::run_handler, this, handler_consumer_.get());
    inbox_thread_ = std::thread(&session_coordinator::run_inbox, this, inbox_consumer_.get());
    spdlog::info("session coordination started: {} ({} partitions), replies on {}", request_topic_,
                 request_partitions_, response_topic_);
    return {};
}

void session_coordinator::stop() {
    if (running_.exchange(false, std::memory_order_acq_rel)) {
        stop_.request_stop();
        handler_consumer_->wakeup();
        inbox_consumer_->wakeup();
        handler_thread_.join();
        inbox_thread_.join();
        handler_consumer_->close();
        inbox_consumer_->close();
    }
    std::unordered_map<std::string, pending> left;
    {
        std::lock_guard lock(pending_mutex_);
        left.swap(pending_);
    }
    for (auto& [id, p] : left) {
        core_.timers().cancel(p.timer);
        p.done(std::make_error_code(std::errc::operation_canceled));
    }
}

std::string session_coordinator::new_request_id() {
    return id_prefix_ + std::to_string(next_request_.fetch_add(1, std::memory_order_relaxed) + 1);
}

void session_coordinator::drain(std::chrono::milliseconds timeout) {
    if (!running_.load(std::memory_order_acquire)) {
        return;
    }
    const std::uint64_t generation = drain_requested_.fetch_add(1) + 1;
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (drained_.load(std::memory_order_acquire) < generation) {
        if (std::chrono::steady_clock::now() >= deadline) {
            spdlog::warn("session-event handler not drained within {} ms", timeout.count());
            return;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
}

void session_coordinator::pause_handler_for_test(bool paused) {
    handler_paused_.store(paused, std::memory_order_release);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (paused && running_.load(std::memory_order_acquire) &&
           !handler_parked_.load(std::memory_order_acquire) &&
           std::chrono::steady_clock::now() < deadline) {
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
}

std::size_t session_coordinator::pending_requests() const {
    std::lock_guard lock(pending_mutex_);
    return pending_.size();
}

// ---------------------------------------------------------------------------------------------
// Requester

void session_coordinator::request_connect(const connect_request& req,
                                          std::function<void(result<connect_grant>)> done) {
    {
        std::lock_guard lock(pending_mutex_);
        auto& p = pending_[req.request_id];
        p.done = std::move(done);
        p.timer = core_.timers().schedule_after(
            core_.cfg().session_request_timeout,
            [this, id = req.request_id, client = req.client_id] {
                spdlog::warn(
                    "client {}: no session-event reply within {} ms (request {}); "
                    "refusing CONNECT as server unavailable",
                    client, core_.cfg().session_request_timeout.count(), id);
                core_.probe().session_request_timed_out();
                if (finish(id, std::make_error_code(std::errc::timed_out))) {
                    std::lock_guard given_up_lock(pending_mutex_);
                    if (given_up_.size() >= 10000) {
                        given_up_.clear();  // bounded; a grant older than that is long gone
                    }
                    given_up_.insert(id);
                }
            });
    }
    proto::session_event ev;
    ev.set_type(proto::session_event::CONNECTION_REQUEST);
    ev.set_client_id(req.client_id);
    ev.set_node_id(core_.cfg().node_id);
    ev.set_request_id(req.request_id);
    ev.set_clean_start(req.clean_start);
    ev.set_session_expiry_interval(req.session_expiry_interval);
    ev.set_persistent(req.persistent);
    ev.set_protocol_version(req.protocol_version);
    ev.set_client_address(req.client_address);
    ev.set_client_type(req.type == client_type::application ? "APPLICATION" : "DEVICE");
    ev.set_timestamp_ms(core_.now_ms());
    core_.log().produce(request_topic_, req.client_id, ev.SerializeAsString(), {},
                        [this, id = req.request_id](result<produce_ack> r) {
                            if (!r) {
                                spdlog::warn("session-event request {} not written: {}", id,
                                             r.error().message());
                                finish(id, r.error());
                            }
                        });
}

bool session_coordinator::finish(const std::string& request_id, result<connect_grant> r) {
    pending p;
    {
        std::lock_guard lock(pending_mutex_);
        auto it = pending_.find(request_id);
        if (it == pending_.end()) {
            return false;  // already answered, timed out or cancelled
        }
        p = std::move(it->second);
        pending_.erase(it);
    }
    core_.timers().cancel(p.timer);
    p.done(std::move(r));
    return true;
}

void session_coordinator::produce_event(const proto::session_event& ev) {
    core_.log().produce(request_topic_, ev.client_id(), ev.SerializeAsString(), {},
                        [client = ev.client_id()](result<produce_ack> r) {
                            if (!r) {
                                spdlog::warn("client {}: session event not written: {}", client,
                                             r.error().message());
                            }
                        });
}

void session_coordinator::notify_disconnected(const std::string& client_id,
                                              const std::string& session_id,
                                              std::uint32_t session_expiry_interval,
                                              bool unacknowledged) {
    proto::session_event ev;
    ev.set_type(proto::session_event::DISCONNECTED);
    ev.set_client_id(client_id);
    ev.set_node_id(core_.cfg().node_id);
    ev.set_request_id(session_id);
    ev.set_persistent(true);
    ev.set_session_expiry_interval(session_expiry_interval);
    ev.set_unacknowledged(unacknowledged);
    ev.set_timestamp_ms(core_.now_ms());
    produce_event(ev);
}

void session_coordinator::notify_session_ended(const std::string& client_id,
                                               const std::string& session_id) {
    proto::session_event ev;
    ev.set_type(proto::session_event::SESSION_ENDED);
    ev.set_client_id(client_id);
    ev.set_node_id(core_.cfg().node_id);
    ev.set_request_id(session_id);
    ev.set_timestamp_ms(core_.now_ms());
    produce_event(ev);
}

// ---------------------------------------------------------------------------------------------
// Handler

std::optional<session_record> session_coordinator::current(const std::string& client_id) {
    auto mirrored = core_.sessions().find_session(client_id);
    auto it = decisions_.find(client_id);
    if (it == decisions_.end()) {
        return mirrored;
    }
    if (!it->second && !mirrored) {
        // The mirror caught up with a deletion: the entry is no longer needed.
        decisions_.erase(it);
        return std::nullopt;
    }
    return it->second;
}

void session_coordinator::forget_partition(std::int32_t partition) {
    std::erase_if(decisions_, [&](const auto& entry) {
        return partition_for_key(entry.first, request_partitions_) == partition;
    });
}

void session_coordinator::handle_event(const proto::session_event& ev, std::int64_t offset,
                                       const std::shared_ptr<countdown>& pending_writes) {
    const std::string& client_id = ev.client_id();
    auto prev = current(client_id);
    const std::int64_t now = core_.now_ms();

    if (ev.type() == proto::session_event::DISCONNECTED ||
        ev.type() == proto::session_event::SESSION_ENDED) {
        // This node's own actor took its ended session out of this node's registry before it
        // told the handler (end_session), and a node restarting with a clean session of its
        // own never put it there: when that handler is this node and holds no decision of its
        // own for the client (its partition came here in a rebalance), the registry says
        // nothing, yet the record in client.session is still that session's. The actor is the
        // single writer of its session, so its word stands: the record goes.
        const bool own_session_ended = !prev && ev.type() == proto::session_event::SESSION_ENDED &&
                                       ev.node_id() == core_.cfg().node_id;
        if (!own_session_ended && (!prev || prev->session_id != ev.request_id())) {
            // A newer connection replaced that session already: its record stays.
            spdlog::debug("client {}: stale session event for {} ignored", client_id,
                          ev.request_id());
            return;
        }
        pending_writes->add();
        auto written = [pending_writes, client = client_id](result<produce_ack> r) {
            if (!r) {
                spdlog::warn("client {}: session record not written: {}", client,
                             r.error().message());
            }
            pending_writes->done();
        };
        if (ev.type() == proto::session_event::DISCONNECTED) {
            session_record next = *prev;
            next.connected = false;
            next.persistent = true;
            next.session_expiry_interval = ev.session_expiry_interval();
            next.disconnected_at_ms = ev.timestamp_ms();
            next.unacknowledged = ev.unacknowledged();
            core_.log().produce(core_.topics().client_session(), client_id,
                                serialize_session_record(next), written_for(next.node_id),
                                std::move(written));
            decisions_.insert_or_assign(client_id, std::move(next));
        } else {
            core_.log().produce(core_.topics().client_session(), client_id, std::string(),
                                written_for(prev ? prev->node_id : ev.node_id()),
                                std::move(written));
            decisions_.insert_or_assign(client_id, std::nullopt);
        }
        return;
    }
    if (ev.type() != proto::session_event::CONNECTION_REQUEST) {
        spdlog::warn("client {}: session event of unknown type {} ignored", client_id,
                     static_cast<int>(ev.type()));
        return;
    }

    if (prev && prev->request_offset > offset) {
        // Read again after a rebalance (the batch's commit failed): this request was handled
        // (== its own session) or superseded by a later one; doing it again would replay a
        // takeover of the newer connection.
        spdlog::debug("client {}: CONNECT request {} at offset {} already handled", client_id,
                      ev.request_id(), offset);
        return;
    }
    session_record next{
        .client_id = client_id,
        .persistent = ev.persistent(),
        .connected = true,
        .session_expiry_interval = ev.session_expiry_interval(),
        .connected_at_ms = now,
        .node_id = ev.node_id(),
        .session_id = ev.request_id(),
        .type = ev.client_type() == "APPLICATION" ? client_type::application : client_type::device,
        .request_offset = offset + 1,
        .protocol_version = ev.protocol_version(),
        .client_address = ev.client_address()};
    proto::session_event_response reply;
    reply.set_client_id(client_id);
    reply.set_request_id(ev.request_id());
    reply.set_session_present(prev && prev->persistent && !ev.clean_start());
    reply.set_persistent(ev.persistent());
    reply.set_session_expiry_interval(ev.session_expiry_interval());
    reply.set_requested_at_ms(ev.timestamp_ms());
    reply.set_handled_at_ms(now);
    if (prev) {
        reply.set_previous_session_id(prev->session_id);
        reply.set_previous_node_id(prev->node_id);
        reply.set_previous_may_have_sent(prev->connected || prev->unacknowledged);
    }
    // The session lives on another node (a connection, or persistent state that would
    // otherwise keep routing and expire there): that node lets go of it. On the requester's
    // own node the actor replaces its connection itself.
    const bool moves = prev && !prev->node_id.empty() && prev->node_id != ev.node_id() &&
                       (prev->connected || prev->persistent);

    // The reply (and the disconnect) go to other nodes' topics: their metadata first, on this
    // thread, so the writes below are not held for the Kafka client's topic scan.
    core_.warm_topic(core_.topics().session_event_response(ev.node_id()));
    if (moves) {
        core_.warm_topic(core_.topics().client_disconnect(prev->node_id));
    }
    auto join = std::make_shared<write_join>();
    join->remaining = moves ? 2 : 1;
    pending_writes->add();
    join->done = [this, pending_writes, reply = std::move(reply),
                  requester = ev.node_id()](bool ok) mutable {
        reply.set_success(ok);
        reply.set_replied_at_ms(core_.now_ms());
        if (!ok) {
            spdlog::warn("client {}: session writes failed; CONNECT {} refused", reply.client_id(),
                         reply.request_id());
        }
        auto key = reply.client_id();
        const auto started = std::chrono::steady_clock::now();
        core_.log().produce(
            core_.topics().session_event_response(requester), std::move(key),
            reply.SerializeAsString(), {},
            [pending_writes, started, requester](result<produce_ack> r) {
                if (!r) {
                    spdlog::warn("session-event reply not written: {}", r.error().message());
                }
                const auto took = std::chrono::duration_cast<std::chrono::milliseconds>(
                    std::chrono::steady_clock::now() - started);
                spdlog::log(took.count() >= 200 ? spdlog::level::info : spdlog::level::debug,
                            "session-event reply to node {} written in {} ms", requester,
                            took.count());
                pending_writes->done();
            });
    };
    if (moves) {
        proto::client_disconnect d;
        d.set_client_id(client_id);
        d.set_session_id(prev->session_id);
        d.set_new_node_id(ev.node_id());
        d.set_new_session_id(ev.request_id());
        d.set_clean_start(ev.clean_start());
        spdlog::info("client {}: session {} moves from node {} to node {}", client_id,
                     prev->session_id, prev->node_id, ev.node_id());
        core_.log().produce(core_.topics().client_disconnect(prev->node_id), client_id,
                            d.SerializeAsString(), {},
                            [join](result<produce_ack> r) { join->complete(r.has_value()); });
    }
    core_.log().produce(core_.topics().client_session(), client_id, serialize_session_record(next),
                        written_for(next.node_id),
                        [join](result<produce_ack> r) { join->complete(r.has_value()); });
    // Decided now, before the acks: the next event of this client (maybe in this very batch)
    // must see this decision, not the mirror's older record.
    decisions_.insert_or_assign(client_id, std::move(next));
}

void session_coordinator::session_left(const proto::client_disconnect& d) {
    const auto& self = core_.cfg().node_id;
    if (d.new_node_id().empty() || d.new_node_id() == self || d.clean_start()) {
        return;  // a clean start empties the inbox: nothing to catch up on
    }
    // From now on this node's consumers route the session's copies to its new node, without
    // waiting for this node's mirror of client.session to learn it.
    if (auto current = core_.sessions().find_session(d.client_id());
        current && current->node_id == self && current->session_id == d.session_id()) {
        current->node_id = d.new_node_id();
        current->session_id = d.new_session_id();
        current->connected = true;
        core_.sessions().put_session(std::move(*current));
    }
    if (!core_.cfg().shared_inbox) {
        return;
    }
    // Copies this node appended to the shared inbox while it still took itself for the owner
    // signalled nobody (its actor is gone); the new owner may have read the inbox before they
    // arrived. One signal, sent after the view above changed, covers every one of them.
    core_.signal_inbox(d.new_node_id(), d.client_id(), /*passed_on=*/false,
                       [client_id = d.client_id()](status st) {
                           if (!st) {
                               spdlog::warn(
                                   "client {}: catch-up signal to the session's new "
                                   "node not written: {}",
                                   client_id, st.error().message());
                           }
                       });
}

void session_coordinator::run_handler(log_consumer* consumer) {
    const auto poll_interval = core_.cfg().poll_interval;
    std::set<std::int32_t> owned;
    base::retry_pacer pacer("session-event handler");
    const auto stop = stop_.get_token();
    while (running_.load(std::memory_order_acquire)) {
        if (handler_paused_.load(std::memory_order_acquire)) {
            handler_parked_.store(true, std::memory_order_release);
            std::this_thread::sleep_for(poll_interval);
            continue;
        }
        handler_parked_.store(false, std::memory_order_release);
        const std::uint64_t drain_generation = drain_requested_.load(std::memory_order_acquire);
        auto polled = consumer->poll(poll_interval);
        // A partition that (re)joined this node was decided elsewhere meanwhile: forget what
        // this handler decided for its clients before.
        std::set<std::int32_t> now_owned;
        for (const auto& tp : consumer->assignment()) {
            now_owned.insert(tp.partition);
            if (!owned.contains(tp.partition)) {
                forget_partition(tp.partition);
            }
        }
        owned = std::move(now_owned);
        if (!polled) {
            if (!pacer.failed("poll", polled.error().message(), stop)) {
                break;
            }
            continue;
        }
        pacer.succeeded();
        if (polled.value().empty()) {
            drained_.store(drain_generation, std::memory_order_release);
            continue;
        }
        auto pending_writes = std::make_shared<countdown>();
        std::map<topic_partition, std::int64_t> next;
        for (const auto& rec : polled.value()) {
            next[topic_partition{rec.topic, rec.partition}] = rec.offset + 1;
            proto::session_event ev;
            if (!ev.ParseFromString(rec.value) || ev.client_id().empty()) {
                spdlog::warn("session-event handler: undecodable record at {}/{}@{} skipped",
                             rec.topic, rec.partition, rec.offset);
                continue;
            }
            handle_event(ev, rec.offset, pending_writes);
        }
        if (!pending_writes->wait_until(std::chrono::steady_clock::now() + batch_write_bound)) {
            spdlog::warn("session-event handler: {} writes unacknowledged after {} s",
                         pending_writes->outstanding(), batch_write_bound.count());
        }
        std::vector<std::pair<topic_partition, std::int64_t>> commits(next.begin(), next.end());
        if (auto st = consumer->commit(commits); !st) {
            spdlog::warn("session-event handler: commit failed: {}", st.error().message());
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The node's inbox: replies to its requests and disconnects of its sessions

void session_coordinator::log_reply_latency(const proto::session_event_response& reply) {
    // A CONNECT waits for this whole round trip: say where a slow one spent its time.
    const std::int64_t now = core_.now_ms();
    const std::int64_t total = now - reply.requested_at_ms();
    const auto level = total >= 200 ? spdlog::level::info : spdlog::level::debug;
    spdlog::log(level,
                "client {}: session request {} answered in {} ms (to the handler {} ms, its "
                "writes {} ms, the reply back {} ms)",
                reply.client_id(), reply.request_id(), total,
                reply.handled_at_ms() - reply.requested_at_ms(),
                reply.replied_at_ms() - reply.handled_at_ms(), now - reply.replied_at_ms());
}

void session_coordinator::run_inbox(log_consumer* consumer) {
    const auto poll_interval = core_.cfg().poll_interval;
    base::retry_pacer pacer("session inbox");
    const auto stop = stop_.get_token();
    while (running_.load(std::memory_order_acquire)) {
        auto polled = consumer->poll(poll_interval);
        if (!polled) {
            if (!pacer.failed("poll", polled.error().message(), stop)) {
                break;
            }
            continue;
        }
        pacer.succeeded();
        std::map<topic_partition, std::int64_t> next;
        for (const auto& rec : polled.value()) {
            next[topic_partition{rec.topic, rec.partition}] = rec.offset + 1;
            if (rec.topic == response_topic_) {
                proto::session_event_response reply;
                if (!reply.ParseFromString(rec.value)) {
                    spdlog::warn("session inbox: undecodable reply at offset {}", rec.offset);
                    continue;
                }
                log_reply_latency(reply);
                if (!reply.success()) {
                    finish(reply.request_id(), std::make_error_code(std::errc::io_error));
                    continue;
                }
                const bool delivered =
                    finish(reply.request_id(),
                           connect_grant{.session_present = reply.session_present(),
                                         .previous_session_id = reply.previous_session_id(),
                                         .previous_node_id = reply.previous_node_id(),
                                         .previous_may_have_sent = reply.previous_may_have_sent()});
                bool gave_up = false;
                if (!delivered) {
                    std::lock_guard lock(pending_mutex_);
                    gave_up = given_up_.erase(reply.request_id()) != 0;
                }
                if (gave_up) {
                    // The requester gave up (timeout) before the grant came: the session has
                    // no connection, so it must not stay "connected" in client.session. (A
                    // grant for a request already answered — a handler that read it again
                    // after a rebalance — is ignored.)
                    if (reply.persistent()) {
                        notify_disconnected(reply.client_id(), reply.request_id(),
                                            reply.session_expiry_interval());
                    } else {
                        notify_session_ended(reply.client_id(), reply.request_id());
                    }
                }
                continue;
            }
            proto::client_disconnect d;
            if (!d.ParseFromString(rec.value)) {
                spdlog::warn("session inbox: undecodable disconnect at offset {}", rec.offset);
                continue;
            }
            if (d.admin_action() != proto::client_disconnect::NONE) {
                // An operator's request through another node's management API
                // (session_admin.h): the session stays on this node.
                auto actor = core_.sessions().find_actor(d.client_id());
                if (!actor) {
                    spdlog::info("client {}: admin request for session {} found no session here",
                                 d.client_id(), d.session_id());
                } else if (d.admin_action() == proto::client_disconnect::DISCONNECT) {
                    actor->admin_disconnect(d.session_id());
                } else if (d.admin_action() == proto::client_disconnect::END_SESSION) {
                    actor->admin_end_session(d.session_id());
                } else if (d.admin_action() == proto::client_disconnect::SET_SUBSCRIPTIONS) {
                    auto subs =
                        subscription_records::parse_set(d.subscriptions().SerializeAsString());
                    actor->admin_set_subscriptions(
                        d.session_id(), subs.value_or(std::vector<stored_subscription>{}),
                        [client = d.client_id()](bool done) {
                            if (!done) {
                                spdlog::info("client {}: subscription change found no session",
                                             client);
                            }
                        });
                } else {
                    spdlog::warn("client {}: unknown admin request {} ignored", d.client_id(),
                                 static_cast<int>(d.admin_action()));
                }
                continue;
            }
            if (auto actor = core_.sessions().find_actor(d.client_id())) {
                actor->session_moved(d.session_id(), d.new_node_id(), d.clean_start());
            }
            session_left(d);
        }
        if (!next.empty()) {
            std::vector<std::pair<topic_partition, std::int64_t>> commits(next.begin(), next.end());
            (void)consumer->commit(commits);
        }
    }
}

}  // namespace starling::broker
