#pragma once

// Persistent APPLICATION clients (docs/architecture.md §3 step 5, §5; issue 4 §4).
//
// A persistent APPLICATION session keeps its QoS 1/2 copies in its own log topic
// msg.app.<clientId> (1 partition) instead of the device inbox: the router produces there, and
// while the client is connected on this node a consumer (app_consumer.h) reads the topic from the
// group's committed offset and hands the records to the client's actor, which sends them within
// the client's in-flight window. The client's PUBACK / PUBCOMP advance the committed offset to
// the lowest offset still unacknowledged (acks may complete out of order within the window).
//
// Shared APPLICATION subscriptions ($share/<share>/<filter> held by persistent APPLICATION
// sessions) read msg.app.shared.<filter> instead: the router writes one copy per message there
// (publish_router.h), and every connected member runs a consumer in the group
// <prefix>.app-shared-<share>-<filter>, so the log splits the topic's partitions among the
// members. Such a source is one more input of the same application_session (a "shared source"):
// same window, packet ids, acknowledgements and commits, per partition. Its in-flight state is not
// saved: when the member disconnects, its consumer commits the lowest unacknowledged offset of each
// partition and leaves the group, and whoever owns the partition next delivers the rest again
// (at least once, MQTT 5 §4.8.2 allows it).
//
// app_consumer (app_consumer.h) reads each source — a task of the node's consumer pool, not a
// thread of its own.
//
// application_session — the actor-side state: which offsets are in flight under which packet
//   id, which wait for PUBCOMP, which a reconnecting client must get again with DUP=1 and the
//   same packet id. It lives as long as the actor (so a reconnect to the same node keeps the
//   exact state in memory) and is mirrored to the metadata store (application_session_context)
//   for a reconnect after a restart or on another node.
//   Saving: at every change, coalesced — at most one save in flight, the next one carries
//   everything changed meanwhile. The store therefore lags by at most one save; after a crash
//   the lag means at-least-once (a message acknowledged just before the crash comes again with
//   DUP, one sent just before comes again under a new id), never a loss. A save per change
//   without coalescing would cost one database write per PUBLISH and per ack.
//   Concurrency: only the owning actor's thread touches it; completions are posted back.

#include "base/lazy_deque.h"
#include "base/result.h"
#include "broker/app_consumer.h"
#include "broker/client_actor.h"
#include "mqtt/qos.h"
#include "starling/message_log.h"
#include "starling/metadata_store.h"

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace starling::broker {

class broker_core;

// A shared subscription of the session, as the actor holds it.
struct app_shared_spec {
    std::string share;
    std::string filter;
    mqtt::qos qos = mqtt::qos::at_least_once;  // granted: deliveries are min(message, this)
    bool retain_as_published = false;
    std::optional<std::uint32_t> subscription_id;
};

// One record ready for the client, or a PUBREL to resend (then `d` is empty). A QoS 0 delivery
// (a shared subscription granted QoS 0) has packet id 0 and needs no acknowledgement.
struct app_outbound {
    delivery d;
    std::uint16_t packet_id = 0;
    bool dup = false;
    bool pubrel = false;
};

class application_session {
  public:
    application_session(broker_core& core, std::string client_id);
    ~application_session();

    // A connection of a persistent APPLICATION session was accepted. `resumed` = Session
    // Present; otherwise the backlog and the saved context are discarded first. `post` runs a
    // function inside the owning actor (from any thread); `wake` tells the actor that records
    // or saved state arrived.
    void connect(bool resumed, std::function<void(std::function<void()>)> post,
                 std::function<void()> wake);
    // The connection ended: commit the lowest unacknowledged offset, stop the consumer, keep
    // what is in flight for the next connection (DUP, same packet ids) and save it.
    void disconnect();
    // The session ended (expiry, clean start to a non-persistent session) or the client is no
    // longer an APPLICATION (`type_changed`: a record on sys.app.removed tells the cluster):
    // the topic, its backlog and the context are deleted.
    void remove(bool type_changed);
    // The session moved to another node (takeover): stop every consumer, forget the state, and
    // write nothing — the new owner carries on from the store and the committed offsets.
    void drop();
    // The session's shared subscriptions now: a consumer starts for each new one and stops for
    // each one gone. Only while connected; connect() does not start them (the actor calls this
    // right after).
    void set_shared(std::vector<app_shared_spec> specs);

    // The next thing to send, if any is ready.
    // `new_id` allocates a packet id the actor does not use.
    std::optional<app_outbound> next(const std::function<std::uint16_t()>& new_id);
    // True while `packet_id` is promised to a message that has not been resent yet.
    bool reserves(std::uint16_t packet_id) const;

    void on_pubrec(std::uint16_t packet_id);
    void on_acknowledged(std::uint16_t packet_id);  // PUBACK, PUBCOMP, or a refused PUBREC

    // Runs `fn` (on the actor) once the context in the store is the current one: at once when
    // no save is in flight. Node shutdown waits for it, so a graceful stop leaves the latest
    // state (a PUBREC received just before) for the next start.
    void when_saved(std::function<void()> fn);

    // Between connect() and remove(): the session has (or may have) a topic.
    bool active() const { return active_; }

    // Packets in flight or awaiting PUBCOMP (for tests and the README's claims).
    std::size_t in_flight_for_test() const { return publish_.size() + pubrel_.size(); }
    std::size_t shared_sources_for_test() const { return shared_.size(); }
    std::size_t shared_partitions_for_test() const;

  private:
    // Where a record came from: source 0 is msg.app.<clientId> (partition 0), others are shared
    // sources. Ordered by source, partition, offset, so one source's entries are contiguous.
    struct position {
        std::uint32_t source = 0;
        std::int32_t partition = 0;
        std::int64_t offset = 0;
        auto operator<=>(const position&) const = default;
    };
    static constexpr std::uint32_t own_source = 0;
    static position own(std::int64_t offset) { return position{own_source, 0, offset}; }

    struct shared_source {
        app_shared_spec spec;
        std::unique_ptr<app_consumer> consumer;
        std::map<std::int32_t, std::int64_t> next_offset;  // per partition: after the last taken
        base::lazy_deque<log_record> pending;
    };

    void start_consumer();
    void update_commit();
    void update_shared_commit(std::uint32_t source);
    void save();
    std::optional<std::int64_t> lowest_unacknowledged() const;
    std::optional<app_outbound> next_own(const std::function<std::uint16_t()>& new_id,
                                         bool& changed);
    std::optional<app_outbound> next_shared(std::uint32_t source, shared_source& src,
                                            const std::function<std::uint16_t()>& new_id);
    void start_shared(std::uint32_t source, shared_source& src);
    // Stops the consumer (after committing the lowest unacknowledged offsets) and forgets the
    // source's in-flight entries: the next owner of each partition delivers them again.
    void stop_shared(std::uint32_t source);

    broker_core& core_;
    const std::string client_id_;
    std::function<void(std::function<void()>)> post_;
    std::function<void()> wake_;
    std::unique_ptr<app_consumer> consumer_;
    std::uint64_t generation_ = 0;  // bumped by every connect/disconnect/remove
    bool active_ = false;
    bool loaded_ = false;  // state known (loaded from the store or built here)
    bool loading_ = false;

    // Positions sent on this connection, awaiting PUBACK (QoS 1) or PUBREC (QoS 2).
    std::map<position, std::uint16_t> publish_;
    // Positions whose PUBREC arrived: awaiting PUBCOMP. Resent as PUBREL after a reconnect
    // (own source only: a shared source's entries end with the connection).
    std::map<position, std::uint16_t> pubrel_;
    // Own-topic offsets sent on an earlier connection and not acknowledged: resent with DUP,
    // same id.
    std::map<position, std::uint16_t> resend_;
    std::map<std::uint16_t, position> by_id_;  // every id above → its position
    // Offsets below this that are in none of the maps were acknowledged (or skipped as
    // expired) on an earlier connection: a record read again below it is dropped.
    std::int64_t resend_until_ = 0;
    // Offset after the last record taken from the consumer (-1: none taken yet).
    std::int64_t next_offset_ = -1;
    base::lazy_deque<std::uint16_t> pubrels_to_send_;  // in offset order
    base::lazy_deque<log_record> pending_;  // taken from the consumer, not sent yet (window full)

    bool saving_ = false;
    bool save_again_ = false;
    std::vector<std::function<void()>> saved_waiters_;

    bool connected_ = false;  // between connect() and disconnect()/remove()/drop()
    std::map<std::uint32_t, shared_source> shared_;  // by source id (>= 1)
    std::uint32_t next_source_id_ = 1;
    std::size_t turn_ = 0;  // which source next() tries first, so none starves the others
};

}  // namespace starling::broker
