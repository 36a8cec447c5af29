#pragma once

// client_actor: the MQTT behaviour of one client id on this node (docs/architecture.md §3, §4, §6).
//
// One actor per client id, shared by every connection that uses the id over time, so takeover,
// session resumption, will delay and session expiry are decisions of a single writer. It owns
// the session state: subscriptions, outbound messages in flight (packet ids, QoS 2 states),
// inbound QoS 2 packet ids awaiting PUBREL, the order of pending PUBACK/PUBREC, topic aliases.
// The protocol rules of these are Sans-I/O pieces of src/mqtt/ (outbound_window.h,
// inbound_window.h, topic_alias.h) that the actor feeds and whose answers it sends.
//
// Inputs arrive as messages on its mailbox (actor::mailbox): packets decoded by the connection
// (I/O threads), deliveries from the router threads, completions of log / inbox / metadata
// writes (their threads), timers. Nothing blocks inside a turn: every port call is
// asynchronous and its completion is posted back as a `call` message.
//
// Persistent DEVICE sessions receive QoS 1/2 copies through the device inbox (the router
// produces them to msg.persisted; a consumer appends them to the inbox and signals the actor),
// so they survive disconnects and restarts. Everything else (QoS 0, non-persistent sessions)
// is delivered straight to the live connection or dropped and counted.
//
// Lifecycle: created by session_registry on the first CONNECT of a client id (or at start-up for
// a persistent session found in client.session); stops (leaves the registry, closes its
// mailbox) when its session ends: at disconnect for a non-persistent session, at session expiry
// otherwise, or at node shutdown.

#include "actor/mailbox.h"
#include "actor/timer_service.h"
#include "auth/provider.h"
#include "base/lazy_deque.h"
#include "base/lazy_hash_set.h"
#include "broker/client_channel.h"
#include "broker/message.h"
#include "broker/session_limits.h"
#include "broker/stored_subscription.h"
#include "broker/subscription_journal.h"
#include "mqtt/inbound_window.h"
#include "mqtt/outbound_window.h"
#include "mqtt/packet.h"
#include "mqtt/protocol_version.h"
#include "ratelimit/quota_lease.h"
#include "ratelimit/token_bucket.h"
#include "routing/subscription.h"
#include "starling/device_inbox.h"

#include "integration/matcher.h"

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <variant>
#include <vector>

namespace starling::broker {

class application_session;
class broker_core;
class client_actor;
struct connect_grant;

// One copy of a message for one subscriber, as the router decided it.
struct delivery {
    message_ptr msg;
    mqtt::qos qos = mqtt::qos::at_most_once;  // min(publish QoS, subscription QoS)
    bool retain = false;                      // retain flag as delivered
    std::vector<std::uint32_t> subscription_ids;
};

namespace client_msg {
// A decoded CONNECT on a new connection (control lane).
struct connect {
    std::shared_ptr<client_channel> channel;
    mqtt::connect packet;
    bool id_assigned = false;   // v5: the server assigned the id (sent back in CONNACK)
    bool id_generated = false;  // the server generated the id (v5 or 3.1.1 empty id)
    // What authentication decided (auth::authenticator): the client's type and the topics it
    // may publish and subscribe to. Null rules = everything allowed.
    client_type type = client_type::device;
    std::shared_ptr<const auth::topic_rules> rules;
    // How often the actor put this CONNECT back behind the previous connection's last packets.
    std::uint16_t deferrals = 0;
};
// Any later packet of a connection.
struct packet {
    std::uint64_t channel_id = 0;
    mqtt::packet packet;
};
// The connection ended: the peer closed it, a read or write failed, or the decoder rejected
// its bytes (then `protocol_error` holds the reason code the server answers with).
struct closed {
    std::uint64_t channel_id = 0;
    std::string reason;
    std::optional<mqtt::reason_code> protocol_error;
};
struct writability {
    std::uint64_t channel_id = 0;
    bool writable = true;
};
struct deliver {
    broker::delivery delivery;
};
// New messages were appended to this client's device inbox.
struct inbox_signal {};
// Node shutdown: DISCONNECT 0x8B to v5 clients, close, keep persistent state.
struct shutdown {
    std::function<void()> done;
};
// A completion (log ack, inbox read, timer) to run inside the actor.
struct call {
    std::function<void(client_actor&)> fn;
};
}  // namespace client_msg

using client_message =
    std::variant<client_msg::connect, client_msg::packet, client_msg::closed,
                 client_msg::writability, client_msg::deliver, client_msg::inbox_signal,
                 client_msg::shutdown, client_msg::call>;

class client_actor : public std::enable_shared_from_this<client_actor> {
  public:
    // Use create(): the mailbox needs the actor's shared_ptr.
    client_actor(broker_core& core, std::string client_id);
    ~client_actor();
    static std::shared_ptr<client_actor> create(broker_core& core, std::string client_id);

    // Thread-safe entry points. tell() uses the bounded normal lane and returns false when the
    // mailbox is full or closed; tell_control() is for messages that must not be refused while
    // the actor lives (connect, close, completions) and returns false only once it stopped.
    bool tell(client_message&& m);
    bool tell_control(client_message&& m);

    // Bytes of the connection's packets waiting in this actor's mailbox (settings::mailbox_bytes
    // bounds them): the connection adds what it tells, the actor takes off what it handled.
    // What a packet counts for: its topic and payload, plus a fixed overhead. Any thread.
    static std::int64_t inbound_cost(const mqtt::packet& p);
    void add_inbound_bytes(std::int64_t bytes) {
        inbound_bytes_.fetch_add(bytes, std::memory_order_relaxed);
    }
    std::int64_t inbound_bytes() const { return inbound_bytes_.load(std::memory_order_relaxed); }

    const std::string& client_id() const { return client_id_; }
    // Read by router threads without entering the actor; updated by the actor.
    bool connected() const { return connected_.load(std::memory_order_acquire); }
    // Partitions of msg.app.shared.* topics this client's consumers own now. Actor thread only
    // (tests run it through client_msg::call).
    std::size_t app_shared_partitions_for_test() const;
    // The session's subscriptions. Actor thread only (through client_msg::call).
    std::size_t subscription_count_for_test() const { return subscriptions_.size(); }
    // Packets of the client received and not handled yet: waiting for the CONNACK's session
    // context to load (pre_connack_) or behind a full inbound window or a quota wait (held_).
    // Actor thread only (through client_msg::call).
    std::size_t packets_waiting_for_test() const { return pre_connack_.size() + held_.size(); }
    bool writable() const { return writable_.load(std::memory_order_acquire); }
    std::size_t mailbox_depth() const;

    // Start-up: a persistent session found in client.session, offline since `disconnected_at_ms`.
    // `restored` runs inside the actor once its subscriptions are in the trie; the node waits
    // for every restore before its consumers route anything, or a message published before the
    // restart would find no subscriber and be committed as delivered.
    // A session already expired (session expiry 0, or its interval passed while the node was
    // down) ends here, before `restored` runs, so no CONNECT can resume it.
    // `may_have_sent`: the record says the session was connected or ended with messages
    // unacknowledged, so pending messages go with DUP.
    void restore_offline_session(std::uint32_t session_expiry_interval,
                                 std::int64_t disconnected_at_ms,
                                 std::vector<stored_subscription> subscriptions, bool may_have_sent,
                                 std::function<void()> restored, std::string session_id = {},
                                 std::uint64_t subscriptions_generation = 0);

    // Cluster mode: the session-event handler moved the session `session_id` to `new_node_id`
    // (client.disconnect.<self>). If it is still this actor's session, the connection gets
    // DISCONNECT 0x8E (v3: closed), its will goes as for a takeover, and the local state is
    // dropped without log writes (the session now belongs to the other node). A stale request
    // (another session id) is ignored. Thread-safe.
    void session_moved(std::string session_id, std::string new_node_id, bool new_clean_start);

    // Management API (/api/client-session, app/session_admin.h). Thread-safe; `done` runs on
    // the actor's thread with whether there was something to do, and is not called when the
    // actor stopped first. A non-empty `session_id` must name the actor's session (cluster
    // mode), else the request is stale and refused; embedded sessions have no id.
    //   admin_disconnect: an operator closes the connection — DISCONNECT 0x98 (Administrative
    //     action) to a v5 client, a close to v3 — as any server-side close: the will goes, a
    //     persistent session stays;
    //   admin_end_session: the offline session ends now, as its expiry would (refused while a
    //     connection holds it).
    void admin_disconnect(std::string session_id, std::function<void(bool)> done = {});
    // Node drain (broker/node_drain.h): the connection closes so that the client reconnects to
    // another node — DISCONNECT 0x9C Use another server carrying `server_reference` to a v5
    // client (0x8B Server shutting down when it is empty), a close to v3. As at shutdown, the
    // will does not go (the server leaves, not the client) and a persistent session stays.
    // `done(true)` when a connection that had its CONNACK was closed. Thread-safe.
    void drain_disconnect(std::string server_reference, std::function<void(bool)> done = {});
    void admin_end_session(std::string session_id, std::function<void(bool)> done = {});
    // Management API: the session's subscriptions become exactly `subscriptions` (already
    // checked by the caller: valid filters, granted QoS). Those no longer listed are removed,
    // the others added or replaced, and the set is written to client.subscriptions before
    // `done(true)`. Nothing is sent to the client (no retained messages, no SUBACK); a new
    // shared-group member takes over what its groups hold, as after a SUBSCRIBE. Refused
    // (false) when there is no session or `session_id` is stale.
    void admin_set_subscriptions(std::string session_id,
                                 std::vector<stored_subscription> subscriptions,
                                 std::function<void(bool)> done);
    struct admin_view {
        bool connected = false;
        std::vector<stored_subscription> subscriptions;
        std::size_t in_flight = 0;  // sent, waiting for PUBACK / PUBREC / PUBCOMP
        std::size_t queued = 0;     // held in memory behind the window (not the inbox)
    };
    // The session as the actor sees it; false when the actor stopped (`done` is not called).
    bool admin_inspect(std::function<void(admin_view)> done);
    // The session's subscription count as of the actor's last turn. Any thread.
    std::size_t subscription_count() const {
        return subscription_count_.load(std::memory_order_relaxed);
    }

  private:
    struct connection_state;
    // What a PUBLISH in flight carries; its stage is the window's (mqtt/outbound_window.h).
    struct outbound_entry {
        delivery d;
        bool from_inbox = false;
        bool from_app = false;  // read from msg.app.<clientId> (application_delivery.h)
    };
    void handle(client_message&& m);
    void on_connect(client_msg::connect&& m);
    void complete_connect(std::uint64_t channel_id, bool session_present, bool id_assigned);
    // `persistent`: the session keeps its messages in durable storage while it lasts (see
    // persistent_); `expiry`: how long it outlives its connection.
    void begin_session(bool resumed, bool persistent, std::uint32_t expiry);
    // The rest of on_connect once the session limits admitted the CONNECT (or had nothing to
    // check).
    void connect_session(const mqtt::connect& p, std::uint32_t expiry, bool id_assigned);
    // Session limits (defined in session_limits.cpp): whether this CONNECT creates a session
    // that must be admitted; the admission and its answer; keeping counted_ right when a
    // session begins (inherited or type change), is restored at start-up, and ends.
    bool limits_need_admission() const;
    void limits_admit(mqtt::connect&& p, std::uint32_t expiry, bool id_assigned);
    void limits_on_admission(std::uint64_t channel_id, admission verdict, const mqtt::connect& p,
                             std::uint32_t expiry, bool id_assigned);
    void limits_on_session_begun();
    void limits_on_restored();
    void limits_release();
    // Why a CONNECT's will cannot be accepted (QoS, retain, levels), if it cannot.
    std::optional<std::pair<mqtt::reason_code, std::string_view>> will_refusal(
        const mqtt::connect& p) const;
    // The id of the connection whose CONNECT is not answered yet; 0 when none.
    std::uint64_t pending_connect_channel() const;
    // Answers the pending CONNECT with a refusal (and a log line) and closes the connection.
    void refuse_connect(mqtt::reason_code code, std::string_view why);
    // Cluster mode (session_coordinator): CONNACK waits for the handler's reply.
    void request_cluster_connect(const mqtt::connect& p, std::uint32_t expiry, bool id_assigned);
    void on_cluster_connect_reply(std::uint64_t channel_id, const std::string& request_id,
                                  std::uint32_t expiry, bool id_assigned, result<connect_grant> r);
    void on_session_moved(const std::string& session_id, const std::string& new_node_id,
                          bool new_clean_start);
    // `new_owner`: the node the session moved to (its subscriptions are handed over to this
    // node's mirror of it); empty when the session's subscriptions end here.
    void drop_local_session(const std::string& new_owner = {});
    void adopt_subscriptions();
    // A resumed (or adopted) session's subscriptions were granted to whoever held it before: the
    // client that resumes it keeps only those its own topic rules allow (the rest are dropped
    // and logged), and from then on a queued message is delivered only if one of the remaining
    // subscriptions matches it (authorized_for_delivery). Otherwise credentials not bound to
    // a client id could take over another client's session and read its traffic.
    void authorize_inherited_subscriptions();
    bool authorized_for_delivery(const app_message& m) const;
    routing::subscription trie_entry(const stored_subscription& sub) const;
    // Removes every subscription of the session from the trie and forgets them.
    void remove_subscriptions();
    void add_subscription(stored_subscription sub);
    void drain_early_packets(std::uint64_t channel_id);
    // Every packet of a connected client: held (inbound flow control, below) or handled.
    void on_packet(mqtt::packet&& p);
    void handle_packet(mqtt::packet&& p);
    void on_publish(mqtt::publish&& p);
    void on_publish_written(std::uint64_t channel_id, std::uint16_t packet_id, status st);
    // Sends the PUBACKs / PUBRECs that inbound_ has ready, in the order the PUBLISHes came.
    void flush_acks();
    void on_puback(std::uint16_t packet_id);
    void on_pubrec(const mqtt::pubrec& p);
    void on_pubrel(const mqtt::pubrel& p);
    void on_pubcomp(std::uint16_t packet_id);
    void on_subscribe(mqtt::subscribe&& s);
    void on_unsubscribe(mqtt::unsubscribe&& u);
    // A lifecycle event of this client for the integrations that asked for it
    // (broker/lifecycle_events.h); about connection `c`, or the current one when null.
    void emit_event(integration::lifecycle_event e, std::string_view reason,
                    std::vector<std::string> topic_filters, const connection_state* c = nullptr);
    void on_disconnect(const mqtt::disconnect& d);
    void on_closed(client_msg::closed&& m);
    void on_writability(const client_msg::writability& w);
    void on_deliver(delivery&& d);
    void on_shutdown(client_msg::shutdown&& m);

    // Outbound.
    // bounded: drop (counted) instead of queueing past outbound_queue_limit.
    void deliver_now(delivery&& d, bool bounded = true);
    std::uint16_t next_packet_id();
    std::size_t window() const;
    void send_publish(const delivery& d, std::uint16_t packet_id, bool dup);
    void send_packet(const mqtt::packet& p);
    void pump_queued();
    // Reads the inbox ahead (bounded by the window) and fills the window from what was read:
    // every free slot is used at once, while the store is read about once per window.
    void pump_inbox();
    void send_prefetched();
    void drop_prefetched();
    // `requested`: how many pending messages the read asked for (a full answer means the
    // inbox may hold more).
    void on_inbox_read(std::uint64_t channel_id, std::size_t requested,
                       result<std::vector<inbox_message>> r);
    void finish_outbound(std::uint16_t packet_id);
    // The filter's retained messages; `fresh_keys` are the subscriptions this SUBSCRIBE added
    // (subscription_records::entry_key).
    void deliver_retained(const stored_subscription& sub,
                          const std::vector<std::string>& fresh_keys);
    // Whether a subscription other than `fresh_keys` matches `topic`.
    bool subscribed_before(std::string_view topic,
                           const std::vector<std::string>& fresh_keys) const;
    // Drops the connection's retained_echoes once nothing is left in it.
    void release_idle_echoes();

    // Connection and session end.
    void disconnect_with(mqtt::reason_code code, std::string_view why);
    // The server leaves (shutdown, drain): DISCONNECT `code` to a v5 client that had its
    // CONNACK, no will, the connection closes and ends with `reason`.
    void leave_connection(mqtt::reason_code code, std::string_view why,
                          std::string server_reference, metrics::disconnect_reason reason);
    // `cause` counts in clientDisconnects_total; `reason` is the log line's wording.
    void end_connection(metrics::disconnect_reason cause, std::string_view reason);
    void end_session();
    void stop_actor();
    void retire();
    void publish_will(const mqtt::will_message& will);
    void arm_keep_alive();
    void on_keep_alive_timer(std::uint64_t channel_id);
    void arm_session_expiry(std::int64_t disconnected_at_ms);
    void write_session_record(bool connected, std::function<void(status)> done);
    void write_subscriptions(std::function<void(status)> done);
    void clear_session_state();

    // Persistent APPLICATION sessions; defined in application_delivery.cpp.
    void app_on_connect(bool session_present);
    void app_on_session_end();
    // Starts / stops the consumers of the session's shared subscriptions to match subscriptions_
    // (persistent APPLICATION sessions only; application_delivery.h).
    void app_sync_shared();
    void pump_app();
    bool delivering() const;  // a connection that got its CONNACK and is not closing
    // The channel is under its write watermark now. writable_ follows the connection's
    // notifications asynchronously; a loop sending many messages asks the channel itself, so a
    // window of large messages cannot push the write queue past its hard limit in one go.
    bool channel_writable() const;

    // Posts fn to run inside the actor (from any thread).
    void post(std::function<void(client_actor&)> fn);
    // post() that says whether fn will run: false once the actor stopped, so an API request
    // waiting for fn's answer can be answered at once instead of never.
    bool post_admin(std::function<void(client_actor&)> fn);
    template <class F>
    auto bind_status(F&& fn) {
        return [self = shared_from_this(), fn = std::forward<F>(fn)](status st) mutable {
            self->post([fn = std::move(fn), st](client_actor& a) mutable { fn(a, st); });
        };
    }

    broker_core& core_;
    const std::string client_id_;
    std::shared_ptr<actor::mailbox<client_message>> mailbox_;

    std::atomic<bool> connected_{false};
    std::atomic<bool> writable_{true};
    std::atomic<std::int64_t> inbound_bytes_{0};
    std::atomic<std::uint32_t> subscription_count_{0};  // subscriptions_.size() after each turn
    bool stopped_ = false;

    std::unique_ptr<connection_state> conn_;
    base::lazy_deque<mqtt::packet> pre_connack_;  // packets that arrived before CONNACK was sent

    // Session. persistent_: QoS 1/2 copies go through durable storage (device inbox or
    // APPLICATION topic) and the session can be resumed while it lasts — v3 clean session 0, v5
    // clean start 0 or an expiry. session_expiry_: how long it outlives its connection; 0 ends
    // it with the connection even when persistent_ (a v5 resume with expiry 0: the queue is
    // delivered on this connection, then the session ends; MQTT-3.1.2-4 / 3.1.2-11.2).
    bool persistent_ = false;
    bool session_exists_ = false;
    // The session holds a unit of the session-limit counters (session_limits.h), and one of
    // the APPLICATION counter when counted_app_.
    bool counted_ = false;
    bool counted_app_ = false;
    // Admitted while the shared counters did not answer (fail open): holds no unit, so its end
    // gives none back.
    bool uncounted_ = false;
    std::uint32_t session_expiry_ = 0;
    std::map<std::string, stored_subscription> subscriptions_;  // key: group '\0' filter
    // What of subscriptions_ is in client.subscriptions (writes carry the changes only).
    subscription_journal subscriptions_journal_;
    // Some inherited subscriptions were dropped (authorize_inherited_subscriptions): stored
    // messages are checked against the remaining ones before they are delivered.
    bool check_stored_deliveries_ = false;
    // Cluster mode: the request id the session-event handler granted to this session (the
    // client.session record's session_id); empty in embedded mode and while there is none.
    std::string session_id_;

    // Outbound.
    mqtt::outbound_window<outbound_entry> inflight_;
    base::lazy_deque<delivery> queued_;
    std::uint16_t last_packet_id_ = 0;
    bool inbox_dirty_ = false;
    bool inbox_reading_ = false;
    // Pending messages read from the inbox and not sent yet (window full), oldest first; at
    // most about a window of them. Dropped when the connection ends (they stay in the inbox).
    base::lazy_deque<inbox_message> inbox_prefetched_;
    base::lazy_hash_set<std::uint16_t> inbox_prefetched_ids_;
    // A read returned every pending message: once those are sent, nothing older is left.
    bool inbox_covered_ = false;
    // Acknowledged (or expired, or undeliverable) messages leave the inbox in batches, one
    // removal in flight per client: acknowledgements that arrive meanwhile go in the next one.
    // An id stays in inbox_removing_ (reads skip it) until its removal is confirmed; a failed
    // removal is retried, never forgotten, or the message would be delivered twice.
    void remove_from_inbox(std::uint16_t packet_id);
    void flush_inbox_removals();
    void retry_inbox_removals();
    // The inbox was cleared or moved away: removals in flight no longer apply.
    void forget_inbox_state();
    std::vector<std::uint16_t> inbox_to_remove_;
    bool inbox_remove_in_flight_ = false;
    bool inbox_remove_retrying_ = false;
    std::uint64_t inbox_generation_ = 0;
    base::lazy_hash_set<std::uint16_t> inbox_removing_;
    base::lazy_hash_set<std::uint16_t> sent_before_;
    bool redeliver_all_as_dup_ = false;
    // Persistent DEVICE: the channel became writable again with messages in flight, so inbox
    // delivery waits until they are acknowledged or the backoff schedule
    // (settings::writable_resume_backoff) runs out, instead of flooding a client that is still
    // working through its acknowledgements. The generation ignores a timer that fired late.
    // Persistent DEVICE member of shared groups that can deliver now: moves the copies waiting
    // in its groups' inboxes (group_inbox.h) into its own; `only` = just that subscription.
    void take_group_inboxes(const stored_subscription* only);
    void start_resume_backoff();
    void on_resume_backoff(std::uint64_t channel_id, std::uint64_t generation);
    void arm_resume_backoff();
    void end_resume_backoff();
    bool resume_backoff_ = false;
    std::size_t resume_step_ = 0;
    std::uint64_t resume_generation_ = 0;
    actor::timer_handle resume_timer_;

    // Inbound: the client's QoS 1/2 PUBLISHes — answer order, QoS 2 ids awaiting PUBREL (the
    // session's, stored for persistent ones), Receive Maximum (mqtt/inbound_window.h).
    mqtt::inbound_window inbound_;

    // A persistent session's QoS 2 ids are stored before the answers that depend on them leave:
    // the PUBREC that starts an id's wait for PUBREL (else a node restarted in between would
    // publish the client's resend again) and the PUBCOMP that ends it (else, after a restart, a
    // new message reusing the id would be taken for a resend and dropped). Such an answer, and
    // every answer after it (their order is the protocol's), waits in ids_gated_ until the
    // store write that covers it is done; ids that change meanwhile go in the next write, so
    // there is one write in flight at a time and it covers everything before it. Held answers
    // still count against the window (on_publish, must_wait), which bounds them.
    struct gated_answer {
        enum class kind : std::uint8_t { puback, pubrec, pubcomp };
        kind type = kind::puback;
        std::uint16_t packet_id = 0;
        mqtt::reason_code code = mqtt::reason_code::success;
        bool counted = false;  // owed to the client's send quota (Receive Maximum)
    };
    // Sends `a` now, or after the store write it depends on (`changes_ids`) or waits behind.
    void send_answer(gated_answer a, bool changes_ids);
    void send_now(const gated_answer& a);
    void send_gated(std::size_t count);
    void store_qos2_ids();
    void on_qos2_ids_stored(std::uint64_t generation, std::size_t covered, status st);
    // The connection (or the session) ended: what waited is not sent (the client resends).
    void drop_gated_answers();
    base::lazy_deque<gated_answer> ids_gated_;
    std::size_t ids_gated_counted_ = 0;
    std::uint64_t ids_gate_generation_ = 0;
    bool ids_store_in_flight_ = false;
    bool ids_dirty_ = false;  // changed since the write in flight was issued

    // Inbound flow control. A packet that cannot be handled yet waits in held_, and so does
    // every later packet of the connection (order is kept), while the connection stops reading
    // the socket (client_channel::hold_reading: TCP backpressure). Two reasons to wait, checked
    // on the packet at the front: a PUBLISH is being charged to the throughput quota
    // (quota_charging_), or — MQTT 3.1.1, which has no Receive Maximum — a QoS 1/2 PUBLISH finds
    // settings::max_in_flight PUBLISHes still waiting for their PUBACK / PUBREC. (v5 clients
    // that exceed the Receive Maximum are disconnected with 0x93 instead, as MQTT 5 requires.)
    // A close that comes while packets wait is deferred until they were handled.
    struct held_packet {
        mqtt::packet packet;
        bool for_quota = false;  // counted in throughputQuotaWaitingPackets
    };
    bool must_wait(const mqtt::packet& p) const;
    void hold_packet(mqtt::packet&& p);
    // Handles the held packets that can go now, in order; then a deferred close.
    void release_held();
    bool defers_close(client_msg::closed& m);
    // The connection ended: what waited is dropped (its QoS 1/2 PUBLISHes were never
    // acknowledged, so the client sends them again).
    void drop_held();
    base::lazy_deque<held_packet> held_;
    std::unique_ptr<client_msg::closed> deferred_close_;  // boxed: 56 bytes, rarely set
    bool releasing_held_ = false;
    // Cluster mode: the session came from another node and its subscriptions are adopted once
    // this node's mirror caught up (bounded, adopt_subscriptions); SUBSCRIBE and UNSUBSCRIBE
    // wait in held_ until then.
    bool adopting_subscriptions_ = false;
    // A resumed persistent session's inbound QoS 2 ids are being loaded from the metadata
    // store: packets wait in pre_connack_ until they are known.
    bool inbound_qos2_loading_ = false;

    // Will and expiry.
    std::unique_ptr<mqtt::will_message> pending_will_;  // boxed: over 500 bytes, rarely set
    actor::timer_handle will_timer_;
    actor::timer_handle expiry_timer_;
    std::uint64_t expiry_generation_ = 0;
    actor::timer_handle retire_timer_;
    std::uint64_t retire_generation_ = 0;
    bool generated_id_ = false;

    // Client type of the current (or last) connection, and of the one before it (a change
    // from APPLICATION removes the client's topic).
    client_type type_ = client_type::device;
    client_type app_previous_type_ = client_type::device;
    std::unique_ptr<application_session> app_;

    // Rate limits (settings::incoming_publish_limit / outgoing_publish_limit), built on first
    // use and touched only on this actor's turns. They live as long as the actor, so a quick
    // reconnect does not hand a flooding client a fresh budget. The flags log one line per
    // streak of drops instead of one per message.
    bool incoming_allowed();
    bool outgoing_allowed();
    // Boxed (40 bytes each inline): most deployments set no per-client rate limit.
    std::unique_ptr<ratelimit::token_bucket> incoming_limit_;
    std::unique_ptr<ratelimit::token_bucket> outgoing_limit_;
    bool incoming_throttled_ = false;
    bool outgoing_throttled_ = false;

    // Throughput quota (broker_core::quota(), docs/backpressure.md "Throughput quota"). A
    // PUBLISH whose charge waits for the shared bucket is kept in quota_charging_, and every
    // later packet of its connection (and its close) waits behind it in held_ — bounded by
    // quota_hold_limit, counted in throughputQuotaWaitingPackets — so nothing the client sent
    // later overtakes it. quota_seq_ tells the current charge's verdict from a stale one (a
    // connection that ended meanwhile).
    bool quota_admits_publish(mqtt::publish& p);
    void on_quota_verdict(std::uint64_t seq, std::int64_t cost, ratelimit::quota_verdict v);
    void quota_forget_charge();
    // Charges one outgoing copy (a delivery at send, a retained message on SUBSCRIBE) without
    // waiting; false = refused and counted.
    bool quota_admits_copy();
    std::int64_t publish_cost(const mqtt::publish& p) const;
    void quota_report(ratelimit::quota_verdict v, std::int64_t cost);
    // A PUBLISH refused by a limit before it was accepted (dropped and already counted): v5
    // QoS 1/2 get PUBACK/PUBREC 0x97 Quota exceeded, v5 QoS 0 nothing; v3 has no negative
    // acknowledgement, so the client is disconnected (`v3_reason` goes to the log).
    void answer_refused_publish(const mqtt::publish& p, mqtt::reason_code v3_reason,
                                std::string_view why);
    // Answers a QoS 1/2 PUBLISH that was decided without the log (PUBACK/PUBREC `code`).
    void answer_publish_now(const mqtt::publish& p, mqtt::reason_code code);
    void refuse_publish(const mqtt::publish& p, ratelimit::quota_verdict v);
    void admit_publish(mqtt::publish&& p);
    std::unique_ptr<mqtt::publish> quota_charging_;  // boxed: over 500 bytes, rarely set
    std::uint64_t quota_seq_ = 0;
    std::uint64_t quota_channel_ = 0;
};

}  // namespace starling::broker
