#pragma once

// session_limits: mqtt.sessions-limit and mqtt.application-clients-limit, cluster-wide
// (docs/backpressure.md "Session limits"). Two counters in the shared-counters port (Redis in
// cluster mode, in process when embedded): `sessionsCount` (client ids with a session,
// connected or persistent and offline) and `applicationClientsCount` (those of type
// APPLICATION).
//
// Who moves the counters: the client actor that holds the session (client_actor::counted_).
// A CONNECT that would create a session reserves a unit (`admit`: add +1, and −1 again when
// that went over the limit); a session that ends (non-persistent disconnect, expiry, a
// refused or failed CONNECT) gives it back (`release`); a session that moves to another node
// takes its unit along (nothing changes). A type change of an existing session moves the
// APPLICATION count (`type_changed`), never refused. Reconnects of an existing session are
// never checked.
//
// Drift: a node that crashes between a reservation and the session record, or two nodes
// creating the same new client id at once, leave the counter off by one per case; a store
// error lets the CONNECT in uncounted. `reconcile` corrects it: a node sets the counters to
// what its client.session mirror holds at start-up (embedded: the restored sessions).
//
// Lifecycle: a member of broker_core; counters set before the node starts. Concurrency: any
// thread; callbacks run on a shared-counters adapter thread (they must not block).

#include "broker/settings.h"
#include "metrics/broker_probe.h"
#include "starling/shared_counters.h"

#include <atomic>
#include <cstdint>
#include <functional>

namespace starling::broker {

enum class admission : std::uint8_t {
    admitted,            // a unit is reserved for the new session
    admitted_uncounted,  // the store failed: let in (fail open), nothing reserved
    sessions_full,       // mqtt.sessions-limit reached
    application_full,    // mqtt.application-clients-limit reached
};

class session_limits {
  public:
    // `counters` null: the limits are off (a node built without shared counters).
    session_limits(const settings& cfg, metrics::broker_probe& probe,
                   starling::shared_counters* counters)
        : sessions_limit_(cfg.sessions_limit),
          application_limit_(cfg.application_clients_limit),
          probe_(probe),
          counters_(counters) {}

    // True when either limit is set and a counter store exists.
    bool enabled() const {
        return counters_ != nullptr && (sessions_limit_ > 0 || application_limit_ > 0);
    }

    // Reserves a unit for a new session (and an APPLICATION unit when `application`).
    void admit(bool application, std::function<void(admission)> done);
    // Gives back the units of a session that ended.
    void release(bool application);
    // An existing session changed type: the APPLICATION count follows.
    void type_changed(bool now_application);
    // Sets the counters to the given counts (read, then add the difference). `done` may be
    // empty.
    void reconcile(std::int64_t sessions, std::int64_t application, std::function<void()> done);

    static constexpr const char* sessions_key = "sessionsCount";
    static constexpr const char* application_key = "applicationClientsCount";

  private:
    std::int64_t sessions_limit_;
    std::int64_t application_limit_;
    metrics::broker_probe& probe_;
    starling::shared_counters* counters_ = nullptr;
    std::atomic<bool> store_failure_logged_{false};
    std::atomic<std::int64_t> sessions_seen_{0};
    std::atomic<std::int64_t> application_seen_{0};

    void store_failed(const std::error_code& ec);
    void store_answered();
    void seen(std::int64_t sessions, std::int64_t application);
};

}  // namespace starling::broker
