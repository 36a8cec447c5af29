#pragma once

// session_coordinator: one live session per client id across the cluster, with the message log as
// the only coordination (docs/architecture.md §4). Used only in cluster mode (settings::cluster).
//
// Three roles, all on every node:
//   - requester: a client actor's CONNECT becomes a session_event{CONNECTION_REQUEST} on
//     client.session.event.request (key = client id); the actor sends CONNACK when the reply
//     arrives on client.session.event.response.<self>, or refuses the client (0x88 / v3 0x03)
//     when no reply came within settings::session_request_timeout;
//   - handler: one consumer group shared by the whole cluster ("session-event-handlers", static
//     member id from the node id) reads the requests, so every event of one client is handled
//     by one thread in order. It is the only writer of client.session in cluster mode: for a
//     CONNECTION_REQUEST it tells the node that holds the client's session (connected, or
//     persistent and offline) to let go of it through client.disconnect.<owner>, writes the
//     new record, and replies only after the log acknowledged both writes. DISCONNECTED and
//     SESSION_ENDED events from the actors update (or delete) the record, unless a newer
//     connection already replaced the session they name;
//   - owner: client.disconnect.<self> records reach the actor holding the session, which
//     closes its connection with DISCONNECT 0x8E and drops its local state.
//
// The handler's view of a client is its own latest decision (a map kept on the handler thread),
// seeded from the node's client.session mirror (session_registry) for clients it has not seen:
// the mirror lags behind the handler's own writes, so the map must win. Partitions that move to
// this node in a rebalance drop their map entries (another node decided for them meanwhile) and
// fall back to the mirror.
//
// Lifecycle: built and started by broker::node after the state snapshot is loaded and before
// listeners open; stop() (after the actors shut down and the log was flushed) joins both
// threads and fails every pending request. Concurrency: request_connect, notify_* and
// new_request_id may be called from any thread; completions run on a log, consumer or timer
// thread and must only post to their actor.

#include "actor/timer_service.h"
#include "base/countdown.h"
#include "base/result.h"
#include "broker/session_registry.h"
#include "starling/message_log.h"

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <stop_token>
#include <string>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace starling::proto {
class client_disconnect;
class session_event;
class session_event_response;
}  // namespace starling::proto

namespace starling::broker {

class broker_core;

struct connect_request {
    std::string client_id;
    std::string request_id;  // from new_request_id(); becomes the session's id
    bool clean_start = false;
    std::uint32_t session_expiry_interval = 0;
    bool persistent = false;
    std::uint32_t protocol_version = 5;
    client_type type = client_type::device;
    std::string client_address;  // for the session record (management API)
};

// The handler's answer to a granted CONNECT.
struct connect_grant {
    bool session_present = false;     // a persistent session existed and clean_start was false
    std::string previous_session_id;  // the session it continues or replaces (may be empty)
    std::string previous_node_id;
    // The previous connection may have sent messages the requester cannot know of (it was
    // connected, or ended with some unacknowledged): pending ones go with DUP.
    bool previous_may_have_sent = false;
};

class session_coordinator {
  public:
    explicit session_coordinator(broker_core& core);
    ~session_coordinator();
    session_coordinator(const session_coordinator&) = delete;
    session_coordinator& operator=(const session_coordinator&) = delete;

    // Creates the request topic and this node's response and disconnect topics, then starts the
    // handler and the node's inbox consumer.
    status start();
    // Waits (bounded) until this node's handler read everything available in its partitions,
    // so the session events of a stopping node's own actors are handled by the handler that
    // made the decisions they refer to, before its partitions move to another node.
    void drain(std::chrono::milliseconds timeout);
    void stop();

    // A cluster-unique id for one connection attempt: "<node id>-<start ms>-<sequence>".
    std::string new_request_id();

    // Produces the CONNECTION_REQUEST. `done` runs exactly once: with the grant, with
    // std::errc::timed_out after settings::session_request_timeout (counted and logged), with
    // std::errc::io_error when the handler could not write, or with operation_canceled at stop.
    void request_connect(const connect_request& req,
                         std::function<void(result<connect_grant>)> done);

    // The connection of the persistent session `session_id` ended; the session stays.
    // `unacknowledged`: it ended with messages sent and not acknowledged.
    void notify_disconnected(const std::string& client_id, const std::string& session_id,
                             std::uint32_t session_expiry_interval, bool unacknowledged = false);
    // The session `session_id` ended (its record goes away).
    void notify_session_ended(const std::string& client_id, const std::string& session_id);

    std::size_t pending_requests() const;

    // Tests: while paused, this node's handler reads no session events (as if the handler of
    // the cluster were unreachable). Pausing returns once the handler finished its current
    // batch (bounded wait).
    void pause_handler_for_test(bool paused);

  private:
    // The session of `d` left this node for another: this node's view and the new owner's
    // inbox reads are brought up to date (see the .cpp).
    void session_left(const proto::client_disconnect& d);
    struct pending {
        std::function<void(result<connect_grant>)> done;
        actor::timer_handle timer;
    };
    void run_handler(log_consumer* consumer);
    void run_inbox(log_consumer* consumer);
    void log_reply_latency(const proto::session_event_response& reply);
    void handle_event(const proto::session_event& ev, std::int64_t offset,
                      const std::shared_ptr<countdown>& pending_writes);
    std::optional<session_record> current(const std::string& client_id);
    void forget_partition(std::int32_t partition);
    // Hands the outcome to the waiting requester; false when nobody waits for it any more.
    bool finish(const std::string& request_id, result<connect_grant> r);
    void produce_event(const proto::session_event& ev);

    broker_core& core_;
    const std::string request_topic_;
    const std::string response_topic_;
    const std::string disconnect_topic_;
    const std::string id_prefix_;
    std::atomic<std::uint64_t> next_request_{0};
    std::atomic<bool> running_{false};
    std::stop_source stop_;  // ends the threads' retry waits at stop()
    std::atomic<bool> handler_paused_{false};
    std::atomic<bool> handler_parked_{false};
    // drain(): a generation requested, and the last one the handler saw an empty poll after.
    std::atomic<std::uint64_t> drain_requested_{0};
    std::atomic<std::uint64_t> drained_{0};

    std::unique_ptr<log_consumer> handler_consumer_;
    std::unique_ptr<log_consumer> inbox_consumer_;
    std::thread handler_thread_;
    std::thread inbox_thread_;

    // Handler thread only: the latest decision per client id (nullopt: no session).
    std::unordered_map<std::string, std::optional<session_record>> decisions_;
    std::int32_t request_partitions_ = 1;

    mutable std::mutex pending_mutex_;
    std::unordered_map<std::string, pending> pending_;
    std::unordered_set<std::string> given_up_;  // requests that timed out (guarded as pending_)
};

}  // namespace starling::broker
