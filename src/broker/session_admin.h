#pragma once

// session_admin: what an operator can see of and do to the cluster's sessions (the management
// API's /api/client-session, wired in app/client_session_admin.h).
//
// Seeing: the node's session registry is a mirror of the compacted client.session topic in
// cluster mode (every node follows it), and holds this node's sessions in embedded mode, so any
// node lists the whole cluster. Subscription counts come from the live actor when the session
// is on this node, else from the node's mirror of client.subscriptions. In-flight and queued
// counts are known only to the actor that holds the session: for a session on another node
// they are absent (nullopt).
//
// Acting: a disconnect or an ended session is carried out by the actor that holds the session.
// On this node the request goes to the actor directly; on another node it is a
// client_disconnect record with admin_action set on that node's client.disconnect.<node>
// topic (the same topic session takeover uses), so nodes never call each other. The answer to
// a remote request means "in the log": the owner acts as it reads it, normally within
// milliseconds.
//
// Concurrency: any thread; completions run on an actor's or the log's thread and must not
// block.

#include "broker/session_registry.h"
#include "broker/stored_subscription.h"

#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace starling::broker {

class broker_core;

class session_admin {
  public:
    explicit session_admin(broker_core& core) : core_(core) {}

    struct session_info {
        session_record record;
        std::size_t subscriptions = 0;
    };
    struct session_details {
        session_info info;
        std::vector<stored_subscription> subscriptions;
        std::optional<std::size_t> in_flight;  // nullopt: the session is on another node
        std::optional<std::size_t> queued;
    };

    enum class outcome {
        done,           // carried out (local) or in the owner's log (remote)
        not_found,      // no session for the client id (or not the session id given)
        not_connected,  // disconnect: the session has no connection
        connected,      // end session: a connection holds it
        unavailable,    // the log refused the request
    };

    std::vector<session_info> list() const;
    std::optional<session_info> find(const std::string& client_id) const;
    // nullopt when there is no session.
    void details(const std::string& client_id,
                 std::function<void(std::optional<session_details>)> done) const;

    // `session_id` empty: whatever session the client id has now; otherwise it must be that
    // session's id (TBMQ's API sends both, so a stale page cannot act on a newer session).
    void disconnect(const std::string& client_id, const std::string& session_id,
                    std::function<void(outcome)> done);
    void end_session(const std::string& client_id, const std::string& session_id,
                     std::function<void(outcome)> done);

    // The session's subscriptions become `subscriptions` (checked by the caller), connected or
    // not; nothing is sent to the client. done: carried out and written to
    // client.subscriptions (local), or in the owner's log (remote).
    void set_subscriptions(const std::string& client_id,
                           std::vector<stored_subscription> subscriptions,
                           std::function<void(outcome)> done);

  private:
    enum class action { disconnect, end_session, set_subscriptions };
    void act(action what, const std::string& client_id, const std::string& session_id,
             std::function<void(outcome)> done,
             std::vector<stored_subscription> subscriptions = {});
    session_info info_of(session_record record) const;
    // The session's subscriptions as this node's mirror of client.subscriptions has them.
    std::vector<stored_subscription> mirrored_subscriptions(const std::string& client_id) const;

    broker_core& core_;
};

}  // namespace starling::broker
