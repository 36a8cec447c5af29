#pragma once

// Persistent APPLICATION clients (ARCHITECTURE.md §3 step 5, §5; issue 4 §4).
//
// A persistent APPLICATION session keeps its QoS 1/2 copies in its own log topic
// msg.app.<clientId> (1 partition) instead of the device inbox: the router produces there, and
// while the client is connected on this node a dedicated consumer reads the topic from the
// group's committed offset and hands the records to the client's actor, which sends them within
// the client's in-flight window. The client's PUBACK / PUBCOMP advance the committed offset to
// the lowest offset still unacknowledged (acks may complete out of order within the window).
//
// Two classes:
//
// app_consumer — one consumer thread per connected APPLICATION client. It makes sure the topic
//   exists (idempotent), reads partition 0 with manual
//   assignment under the group <prefix>.app.<clientId>, and keeps at most `buffer_limit`
//   records in a buffer the actor drains. A full buffer pauses the partition, so a full
//   in-flight window or a non-writable channel (the actor stops draining) stops the reading;
//   draining below half resumes it. Commits are applied on this thread (a consumer is used by
//   one thread at a time), from the target the actor publishes.
//   Lifecycle: start() spawns the thread; stop() commits the last target, wakes the poll and
//   joins (bounded by the wakeup: poll returns at once).
//   Concurrency: take()/set_commit()/stop() from the actor; everything else on its thread.
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

#include "base/result.h"
#include "broker/client_actor.h"
#include "starling/message_log.h"
#include "starling/metadata_store.h"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace starling::broker {

class broker_core;

class app_consumer {
  public:
    struct options {
        std::string topic;
        std::string group;
        topic_spec spec;
        std::size_t buffer_limit = 1000;
        std::chrono::milliseconds poll_interval{100};
    };
    // `wake` is called (from the consumer thread) when records were added to an empty buffer.
    app_consumer(message_log& log, options opts, std::function<void()> wake);
    ~app_consumer();
    app_consumer(const app_consumer&) = delete;
    app_consumer& operator=(const app_consumer&) = delete;

    void start();
    void stop();

    // Moves out up to `max` buffered records, oldest first.
    std::vector<log_record> take(std::size_t max);
    // The next offset the group should resume from; committed by the consumer thread.
    void set_commit(std::int64_t next_offset);

  private:
    void run();
    bool setup();

    message_log& log_;
    options opts_;
    std::function<void()> wake_;
    std::unique_ptr<log_consumer> consumer_;
    std::thread thread_;
    std::atomic<bool> running_{false};
    std::atomic<std::int64_t> commit_target_{-1};
    std::int64_t committed_ = -1;  // consumer thread only

    std::mutex mutex_;
    std::deque<log_record> buffer_;
    bool paused_ = false;
};

// One record ready for the client, or a PUBREL to resend (then `d` is empty).
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

    // The next thing to send, if any is ready.
    // `new_id` allocates a packet id the actor does not use.
    std::optional<app_outbound> next(const std::function<std::uint16_t()>& new_id);
    // True while `packet_id` is promised to a message that has not been resent yet.
    bool reserves(std::uint16_t packet_id) const;

    void on_pubrec(std::uint16_t packet_id);
    void on_acknowledged(std::uint16_t packet_id);  // PUBACK, PUBCOMP, or a refused PUBREC

    // Between connect() and remove(): the session has (or may have) a topic.
    bool active() const { return active_; }

    // Packets in flight or awaiting PUBCOMP (for tests and the README's claims).
    std::size_t in_flight_for_test() const { return publish_.size() + pubrel_.size(); }

  private:
    void start_consumer();
    void update_commit();
    void save();
    std::optional<std::int64_t> lowest_unacknowledged() const;

    broker_core& core_;
    const std::string client_id_;
    std::function<void(std::function<void()>)> post_;
    std::function<void()> wake_;
    std::unique_ptr<app_consumer> consumer_;
    std::uint64_t generation_ = 0;  // bumped by every connect/disconnect/remove
    bool active_ = false;
    bool loaded_ = false;  // state known (loaded from the store or built here)
    bool loading_ = false;

    // Offsets sent on this connection, awaiting PUBACK (QoS 1) or PUBREC (QoS 2).
    std::map<std::int64_t, std::uint16_t> publish_;
    // Offsets whose PUBREC arrived: awaiting PUBCOMP. Resent as PUBREL after a reconnect.
    std::map<std::int64_t, std::uint16_t> pubrel_;
    // Offsets sent on an earlier connection and not acknowledged: resent with DUP, same id.
    std::map<std::int64_t, std::uint16_t> resend_;
    std::map<std::uint16_t, std::int64_t> by_id_;  // every id above → its offset
    // Offsets below this that are in none of the maps were acknowledged (or skipped as
    // expired) on an earlier connection: a record read again below it is dropped.
    std::int64_t resend_until_ = 0;
    // Offset after the last record taken from the consumer (-1: none taken yet).
    std::int64_t next_offset_ = -1;
    std::deque<std::uint16_t> pubrels_to_send_;  // in offset order
    std::deque<log_record> pending_;  // taken from the consumer, not sent yet (window full)

    bool saving_ = false;
    bool save_again_ = false;
};

}  // namespace starling::broker
